// The binary's bad-input contract: a one-line error naming what is wrong, exit code 2,
// never a crash.

#include "../../support/run_cli.hpp"
#include "../../support/scripted_server.hpp"
#include "../../support/temp_path.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tokenradar {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

testing::CliOutcome run(const std::string& args, const std::string& prefix = "") {
    return testing::run_cli(args, prefix);
}
int lines(const std::string& text) { return testing::count_lines(text); }

TEST(Cli, BenchBadInputIsOneLineAndExitCode2) {
    const std::string common = " --workload chat --requests 1 --concurrency 1";
    struct Case {
        std::string args;
        std::string says;
    } cases[] = {
        {"bench --target a=mistral:http://127.0.0.1:9/v1#m" + common, "unknown API 'mistral'"},
        {"bench --target nonsense" + common, "missing NAME="},
        {"bench --target a=openai:http://127.0.0.1:9/v1" + common, "missing #MODEL"},
        {"bench --target a=openai:ftp://x/v1#m" + common, "scheme"},
        {"bench --target a=openai:http://127.0.0.1:1/v1#m" + common, "target a:"},
        {"bench --target a=openai:http://127.0.0.1:9/v1#m --workload /nonexistent/w.toml "
         "--requests 1 --concurrency 1",
         "/nonexistent/w.toml"},
        {"bench --target a=openai:http://127.0.0.1:9/v1#m --workload chat --requests 1",
         "--concurrency"},
        {"bench --target a=openai:http://127.0.0.1:9/v1#m --workload chat --concurrency 1 "
         "--duration 10parsecs",
         "invalid duration"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.args);
        auto o = run(c.args);
        EXPECT_EQ(o.exit_code, 2);
        EXPECT_THAT(o.err, HasSubstr(c.says));
        EXPECT_EQ(lines(o.err), 1) << o.err;
    }
}

TEST(Cli, TlsFailureIsOneLineAndExitCode2) {
    // A plain-HTTP server spoken to over https: the handshake fails in preflight. (Any set
    // variable serves as the key, so no "missing key" warning adds a line.)
    testing::ScriptedServer plain(testing::sse_script({}));
    const std::string url = plain.base_url();
    auto o = run("bench --key-env a=PATH --target a=openai:https" + url.substr(4) +
                 "/v1#m --workload chat --requests 1 --concurrency 1");
    EXPECT_EQ(o.exit_code, 2);
    EXPECT_THAT(o.err, HasSubstr("target a:"));
    EXPECT_THAT(o.err, HasSubstr("TLS"));
    EXPECT_EQ(lines(o.err), 1) << o.err;
}

TEST(Cli, InvalidWorkloadFileNamesFileLineAndKey) {
    const testing::TempPath file("cli_bad_workload", ".toml");
    file.write("max_tokens = \"lots\"\n[prompt]\nuser = \"x\"\n");
    auto o = run("bench --target a=openai:http://127.0.0.1:9/v1#m --workload " + file.path() +
                 " --requests 1 --concurrency 1");
    EXPECT_EQ(o.exit_code, 2);
    EXPECT_THAT(o.err, HasSubstr(file.path() + ":1: max_tokens: expected an integer"));
}

// Outside sanitizer and fuzz builds the binary's malloc is mimalloc's (CMakeLists.txt).
// --version says which allocator actually serves malloc, so a link that loses the override
// (library order, --as-needed) fails here rather than only in the gateway benchmark.
TEST(Cli, VersionNamesTheAllocatorThatServesMalloc) {
    auto o = run("--version");
    EXPECT_EQ(o.exit_code, 0) << o.err;
#ifdef TOKENRADAR_WITH_MIMALLOC
    EXPECT_THAT(o.out, ::testing::MatchesRegex(
                           "[0-9.]+ \\(malloc: mimalloc [0-9]+\\.[0-9]+\\.[0-9]+\\)\n"));
#else
    EXPECT_THAT(o.out, ::testing::MatchesRegex("[0-9.]+ \\(malloc: system\\)\n"));
#endif
}

TEST(Cli, SimBadProfileIsOneLineAndExitCode2) {
    auto o = run("sim --profile no-such-profile --port 0");
    EXPECT_EQ(o.exit_code, 2);
    EXPECT_THAT(o.err, HasSubstr("no-such-profile"));
    EXPECT_EQ(lines(o.err), 1) << o.err;
}

TEST(Cli, ServeChecksItsConfigurationAndExplainsIt) {
    auto ok = run("serve --check-config --config " + std::string(TOKENRADAR_SOURCE_DIR) +
                  "/examples/gateway-sim.toml");
    // The example reads its upstream key from SIM_KEY: unset, that is the error.
    EXPECT_EQ(ok.exit_code, 2);
    EXPECT_THAT(ok.err, HasSubstr("gateway-sim.toml:20: providers[0].key_env"));
    EXPECT_THAT(ok.err, HasSubstr("SIM_KEY is not set"));
    EXPECT_EQ(lines(ok.err), 1) << ok.err;

    auto valid = run("serve --check-config --config " + std::string(TOKENRADAR_SOURCE_DIR) +
                         "/examples/gateway-sim.toml",
                     "SIM_KEY=sk-sim-secret ");
    EXPECT_EQ(valid.exit_code, 0) << valid.err;
    EXPECT_THAT(
        valid.out,
        HasSubstr("model     gpt-4o (task chat) -> openai-sim/gpt-4o llama-sim/llama-3-70b"));
    EXPECT_THAT(valid.out, Not(HasSubstr("sk-sim-secret")));  // keys are named, never shown

    auto missing = run("serve --config /nonexistent/gw.toml");
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_THAT(missing.err, HasSubstr("/nonexistent/gw.toml: no such file"));
}

TEST(Cli, ServeHashesClientKeysFromStdin) {
    // The same digest as `echo -n my-team-key | sha256sum`.
    auto o = run("serve --hash-key", "echo -n my-team-key | ");
    EXPECT_EQ(o.exit_code, 0) << o.err;
    EXPECT_EQ(o.out, "53ba349d7fc09d92266503ce236e0c3da9e46ea0f6510fe70219b7777e7a31a5\n");
}

}  // namespace
}  // namespace tokenradar

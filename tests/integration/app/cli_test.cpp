// The binary's bad-input contract: a one-line error naming what is wrong, exit code 2,
// never a crash.

#include "../../support/run_cli.hpp"
#include "../../support/scripted_server.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tokenradar {
namespace {

using ::testing::HasSubstr;

testing::CliOutcome run(const std::string& args) { return testing::run_cli(args); }
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
        {"bench --target a=openai:http://127.0.0.1:9/v1#m --workload /nonexistent/w.toml --requests 1 --concurrency 1",
         "/nonexistent/w.toml"},
        {"bench --target a=openai:http://127.0.0.1:9/v1#m --workload chat --requests 1", "--concurrency"},
        {"bench --target a=openai:http://127.0.0.1:9/v1#m --workload chat --concurrency 1 --duration 10parsecs",
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
    const auto path = std::filesystem::temp_directory_path() / "tokenradar_cli_bad_workload.toml";
    std::ofstream(path) << "max_tokens = \"lots\"\n[prompt]\nuser = \"x\"\n";
    auto o = run("bench --target a=openai:http://127.0.0.1:9/v1#m --workload " + path.string() +
                 " --requests 1 --concurrency 1");
    EXPECT_EQ(o.exit_code, 2);
    EXPECT_THAT(o.err, HasSubstr(path.string() + ":1: max_tokens: expected an integer"));
}

TEST(Cli, SimBadProfileIsOneLineAndExitCode2) {
    auto o = run("sim --profile no-such-profile --port 0");
    EXPECT_EQ(o.exit_code, 2);
    EXPECT_THAT(o.err, HasSubstr("no-such-profile"));
    EXPECT_EQ(lines(o.err), 1) << o.err;
}

}  // namespace
}  // namespace tokenradar

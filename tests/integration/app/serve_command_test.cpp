// `tokenradar serve` as a user runs it: the real binary in front of the real sim, requests
// with curl, SIGTERM, then `tokenradar stats` over the store it wrote.

#include "../../support/child_process.hpp"
#include "../../support/run_cli.hpp"
#include "../../support/temp_path.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

namespace tokenradar {
namespace {

using ::testing::HasSubstr;

using testing::capture;
using testing::Child;
using testing::slurp;
using testing::url_in;

TEST(ServeCommand, RelaysMeasuresAndFlushesItsStoreOnSigterm) {
    const testing::TempDir work("serve");
    const std::filesystem::path dir = work.dir();
    const std::string binary = TOKENRADAR_BINARY;

    Child sim(binary + " sim --profile instant --port 0", dir / "sim.err");
    const std::string sim_url = url_in(sim.read_line());
    ASSERT_FALSE(sim_url.empty());

    std::ofstream(dir / "gw.toml")
        << "[auth]\nmode = \"none\"\n[store]\npath = \"" << (dir / "gw.db").string()
        << "\"\n[[providers]]\nname = \"sim\"\napi = \"openai\"\nbase_url = \"" << sim_url
        << "/v1\"\nkey_env = \"SIM_KEY\"\n[[models]]\nname = \"fast\"\nupstreams = "
           "[\"sim/gpt-4o\"]\ntask = \"code\"\n";
    Child serve(
        "env SIM_KEY=sk-sim " + binary + " serve --port 0 --config " + (dir / "gw.toml").string(),
        dir / "serve.err");
    const std::string line = serve.read_line();
    const std::string gw_url = url_in(line);
    ASSERT_FALSE(gw_url.empty()) << line << slurp(dir / "serve.err");

    // A second server on the same store would save its rollups over the first's: refused.
    auto second = testing::run_cli("serve --port 0 --config " + (dir / "gw.toml").string(),
                                   "env SIM_KEY=sk-sim ");
    EXPECT_EQ(second.exit_code, 2);
    EXPECT_THAT(second.err, HasSubstr((dir / "gw.db").string() +
                                      ": in use by another tokenradar process (pid "));

    for (const char* stream : {"true", "false", "true"}) {
        const std::string body = std::string(R"({"model":"fast","max_tokens":4,"stream":)") +
                                 stream + R"(,"messages":[{"role":"user","content":"hi"}]})";
        const std::string out =
            capture("curl -s " + gw_url +
                    "/v1/chat/completions -H 'content-type: application/json' -d '" + body + "'");
        EXPECT_THAT(out,
                    HasSubstr(std::string(stream) == "true" ? "data: [DONE]" : "chat.completion"))
            << out;
    }
    EXPECT_EQ(serve.terminate(std::chrono::seconds(15)), 0);
    EXPECT_THAT(slurp(dir / "serve.err"), HasSubstr("3 records written"));

    auto stats = testing::run_cli("stats --db " + (dir / "gw.db").string() +
                                  " --window all --by provider,model,task");
    EXPECT_EQ(stats.exit_code, 0) << stats.err;
    EXPECT_THAT(stats.out, HasSubstr("sim"));
    EXPECT_THAT(stats.out, HasSubstr("code"));
}

}  // namespace
}  // namespace tokenradar

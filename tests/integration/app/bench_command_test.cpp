// `tokenradar bench` as a user runs it: the real binary against a real `tokenradar sim`.

#include "../../support/child_process.hpp"
#include "../../support/run_cli.hpp"
#include "../../support/temp_path.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace tokenradar {
namespace {

using ::testing::HasSubstr;

using testing::Child;
using testing::slurp;
using testing::url_in;

TEST(BenchCommand, RealtimeMeasuresAndIsRecordedInTheSummary) {
    const testing::TempDir work("bench_rt");
    const std::filesystem::path dir = work.dir();
    Child sim(std::string(TOKENRADAR_BINARY) + " sim --profile instant --port 0", dir / "sim.err");
    const std::string url = url_in(sim.read_line());
    ASSERT_FALSE(url.empty()) << slurp(dir / "sim.err");
    auto run = testing::run_cli("bench --target s=openai:" + url +
                                    "/v1#gpt-4o --workload chat --requests 3 "
                                    "--concurrency 1 --key-env s=SIM_KEY --realtime --out " +
                                    (dir / "run").string(),
                                "env SIM_KEY=sk-test ");
    if (run.exit_code != 0) {
        // Only a missing privilege may stop it, and the error must say so.
        EXPECT_THAT(run.err, HasSubstr("--realtime: cannot switch to real-time scheduling"));
        GTEST_SKIP() << "no real-time scheduling here: " << run.err;
    }
    const std::string summary = slurp(dir / "run.summary.json");
    EXPECT_THAT(summary, HasSubstr("\"realtime\":true")) << summary;
    EXPECT_THAT(summary, HasSubstr("\"requests\":3")) << summary;
}

TEST(BenchCommand, BadExtraBodyIsOneLineNamingTheOptionAndExitCode2) {
    const std::string common =
        "bench --target a=openai:http://127.0.0.1:9/v1#m --workload chat --requests 1 "
        "--concurrency 1 --no-preflight --extra-body ";
    struct Case {
        std::string arg;
        std::string says;
    } cases[] = {
        {R"('{"ignore_eos": tru}')", "--extra-body '{\"ignore_eos\": tru}': not valid JSON"},
        {"'[1, 2]'", "expected a JSON object such as"},
        {R"('a=true')", "got a boolean"},
        {R"('b={"x":1}')", "no target is named 'b'"},
        {R"('{"x":1}' --extra-body '{"y":2}')", "given twice"},
        {R"('{"stream":false}')", "target a, workload chat: extra body field 'stream'"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.arg);
        auto o = testing::run_cli(common + c.arg);
        EXPECT_EQ(o.exit_code, 2);
        EXPECT_THAT(o.err, HasSubstr(c.says));
        EXPECT_EQ(testing::count_lines(o.err), 1) << o.err;
    }
}

// The extra fields each target's requests carried are in the summary (per target, and the
// workload's in `run`) and in the CSV; a --config file's tables work like the option.
TEST(BenchCommand, ExtraBodyIsRecordedInTheSummaryAndTheCsv) {
    const testing::TempDir work("bench_extra");
    const std::filesystem::path dir = work.dir();
    Child sim(std::string(TOKENRADAR_BINARY) + " sim --profile instant --port 0", dir / "sim.err");
    const std::string url = url_in(sim.read_line());
    ASSERT_FALSE(url.empty()) << slurp(dir / "sim.err");
    const std::string targets =
        "--target s=openai:" + url + "/v1#gpt-4o --target t=openai:" + url + "/v1#gpt-4o";
    auto run = testing::run_cli(
        "bench " + targets + R"( --workload chat --requests 2 --concurrency 1 )" +
            R"(--extra-body '{"ignore_eos":true}' --extra-body 't={"min_tokens":3}' )" +
            "--key-env '*=SIM_KEY' --format csv --out " + (dir / "run").string(),
        "env SIM_KEY=sk-test ");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_THAT(run.out, HasSubstr(",extra_body\n"));
    EXPECT_THAT(run.out, HasSubstr(R"(,"{""ignore_eos"":true}")"));
    EXPECT_THAT(run.out, HasSubstr(R"(,"{""ignore_eos"":true,""min_tokens"":3}")"));
    const std::string summary = slurp(dir / "run.summary.json");
    EXPECT_THAT(summary, HasSubstr(R"("name":"s")")) << summary;
    EXPECT_THAT(summary, HasSubstr(R"("extra_body":{"ignore_eos":true,"min_tokens":3})"))
        << summary;
    EXPECT_THAT(summary, HasSubstr(R"("extra_body":{})")) << summary;  // the chat workload's

    const std::filesystem::path config = dir / "bench.toml";
    {
        std::ofstream out(config);
        out << "[extra_body]\nignore_eos = true\n[target_extra_body.t]\nmin_tokens = 3\n";
    }
    auto from_file =
        testing::run_cli("bench " + targets + " --workload chat --requests 1 --concurrency 1 " +
                             "--key-env '*=SIM_KEY' --format csv --config " + config.string(),
                         "env SIM_KEY=sk-test ");
    ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
    EXPECT_THAT(from_file.out, HasSubstr(R"(,"{""ignore_eos"":true,""min_tokens"":3}")"));
}

}  // namespace
}  // namespace tokenradar

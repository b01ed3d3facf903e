// `tokenradar bench` as a user runs it: the real binary against a real `tokenradar sim`.

#include "../../support/child_process.hpp"
#include "../../support/run_cli.hpp"
#include "../../support/temp_path.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
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
    auto run = testing::run_cli("bench --target s=openai:" + url + "/v1#gpt-4o --workload chat --requests 3 "
                                "--concurrency 1 --key-env s=SIM_KEY --realtime --out " + (dir / "run").string(),
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

}  // namespace
}  // namespace tokenradar

// `tokenradar sim` as a user runs it: the real binary with several I/O threads (one
// io_context each, connections dealt round-robin), streams with curl, SIGTERM.

#include "../../support/child_process.hpp"
#include "../../support/run_cli.hpp"
#include "../../support/temp_path.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sched.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace tokenradar {
namespace {

using ::testing::HasSubstr;

using testing::capture;
using testing::Child;
using testing::slurp;
using testing::url_in;

std::string stream_command(const std::string& url, int max_tokens) {
    return "curl -sN " + url + "/v1/chat/completions -H 'authorization: Bearer sk-test' " +
           "-H 'content-type: application/json' -d "
           "'{\"model\":\"gpt-4o\",\"stream\":true,\"max_tokens\":" +
           std::to_string(max_tokens) + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}'";
}

// The scheduling policy of each thread of a process.
std::vector<int> thread_policies(pid_t pid) {
    std::vector<int> policies;
    for (const auto& task :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
        policies.push_back(::sched_getscheduler(std::stoi(task.path().filename().string())));
    }
    return policies;
}

int count(const std::string& text, const std::string& what) {
    int n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

TEST(SimCommand, ThreadsServeStreamsAndFinishTheInFlightOneOnSigterm) {
    const testing::TempDir work("sim_cmd");  // removed at the end, failed or not
    const std::filesystem::path dir = work.dir();
    Child sim(std::string(TOKENRADAR_BINARY) + " sim --profile fixed --port 0 --threads 3",
              dir / "sim.err");
    const std::string url = url_in(sim.read_line());
    ASSERT_FALSE(url.empty()) << slurp(dir / "sim.err");

    // Six streams at once, one connection each: two on every thread's io_context.
    std::string all = "(";
    for (int i = 0; i < 6; ++i)
        all += stream_command(url, 3) + " > " + (dir / std::to_string(i)).string() + " & ";
    all += "wait)";
    capture(all);
    for (int i = 0; i < 6; ++i) {
        const std::string out = slurp(dir / std::to_string(i));
        EXPECT_EQ(count(out, "\"content\":\""), 4) << out;  // the role chunk's "" and 3 tokens
        EXPECT_THAT(out, HasSubstr("data: [DONE]")) << out;
    }
    const std::string stats = capture("curl -s " + url + "/sim/stats");
    EXPECT_THAT(stats, HasSubstr("\"requests\":7,\"chunks\":18,"))
        << stats;  // 6 streams and this GET

    // A 50-token stream (~1.2 s) in flight when SIGTERM comes is finished, then the sim exits 0.
    Child stream(stream_command(url, 50), dir / "curl.err");
    const std::string first = stream.read_line();  // the first event: the stream is running
    EXPECT_THAT(first, HasSubstr("chat.completion.chunk"));
    EXPECT_EQ(sim.terminate(std::chrono::seconds(15)), 0);
    std::string rest;
    for (std::string line = stream.read_line(); !line.empty(); line = stream.read_line())
        rest += line;
    EXPECT_EQ(count(first + rest, "\"content\":\""), 51);
    EXPECT_THAT(rest, HasSubstr("data: [DONE]"));
    EXPECT_THAT(slurp(dir / "sim.err"), HasSubstr("sim fixed: 8 requests, 68 chunks"));
}

TEST(SimCommand, RealtimeRunsEveryThreadFifoAndAQuantumOutsideItsRangeIsRefused) {
    auto refused = testing::run_cli("sim --profile fixed --pacing-quantum 11ms");
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_THAT(refused.err,
                HasSubstr("--pacing-quantum 11ms: expected a duration from 0us to 10ms"));

    const testing::TempDir work("sim_rt");
    const std::filesystem::path dir = work.dir();
    Child sim(std::string(TOKENRADAR_BINARY) +
                  " sim --profile fixed --port 0 --threads 2 --realtime --pacing-quantum 1ms",
              dir / "sim.err");
    const std::string url = url_in(sim.read_line());
    if (url.empty()) {
        // Only a missing privilege may stop it (a container may drop CAP_SYS_NICE), and the
        // error must say so.
        EXPECT_THAT(slurp(dir / "sim.err"),
                    HasSubstr("--realtime: cannot switch to real-time scheduling"));
        EXPECT_THAT(slurp(dir / "sim.err"), HasSubstr("CAP_SYS_NICE"));
        GTEST_SKIP() << "no real-time scheduling here: " << slurp(dir / "sim.err");
    }
    const std::vector<int> policies = thread_policies(sim.pid());
    EXPECT_GE(policies.size(), 2u);  // the main thread and the second I/O thread
    for (int policy : policies) EXPECT_EQ(policy, SCHED_FIFO);

    const std::string out = capture(stream_command(url, 3));
    EXPECT_EQ(count(out, "\"content\":\""), 4) << out;
    EXPECT_THAT(out, HasSubstr("data: [DONE]"));
    EXPECT_EQ(sim.terminate(std::chrono::seconds(15)), 0);
}

}  // namespace
}  // namespace tokenradar

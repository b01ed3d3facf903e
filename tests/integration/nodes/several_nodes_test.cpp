// Three `serve` nodes behind nginx, sharing one PostgreSQL (records, the key registry) and one
// Redis (rate limits, the response cache), as README "Running several nodes" sets them up;
// bench drives traffic through nginx while one node is killed with SIGKILL. What a team that
// runs several nodes relies on:
// - a key limited to N requests a minute gets N over all nodes, not N per node;
// - an answer cached by one node is a hit on another;
// - nothing a node measured more than one flush interval before it died is lost;
// - the other nodes carry on: no request sent after the kill fails.

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/measurement.hpp>
#include <tokenradar/net/api_keys.hpp>
#include <tokenradar/store/postgres_store.hpp>

#include "../../support/child_process.hpp"
#include "../../support/postgres_server.hpp"
#include "../../support/redis_server.hpp"
#include "../../support/temp_path.hpp"

#include <signal.h>
#include <unistd.h>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace tokenradar {
namespace {

using namespace std::chrono_literals;
using testing::capture;
using testing::Child;
using ::testing::HasSubstr;
using testing::slurp;
using testing::url_in;

constexpr const char* kAdminKey = "tr-admin-several-nodes";
constexpr const char* kClientKey = "tr-client-several-nodes";
constexpr const char* kNginx = "/usr/sbin/nginx";
constexpr auto kFlushInterval = 200ms;
// One commit's time plus scheduling on a loaded 2-core machine (as crash_test's margin).
constexpr auto kLossMargin = 300ms;

std::string node_config(const std::string& sim_url, const std::string& pg_url,
                        const std::string& redis_url) {
    std::ostringstream c;
    c << "[auth]\nrefresh = \"200ms\"\n"
      << "[[auth.admin_keys]]\nname = \"ops\"\nsha256 = \"" << net::hash_api_key(kAdminKey)
      << "\"\n[[auth.keys]]\nname = \"team\"\nsha256 = \"" << net::hash_api_key(kClientKey)
      << "\"\n[limits]\nredis = \"" << redis_url << "\"\n[cache]\nredis = \"" << redis_url
      << "\"\n[store]\nurl = \"" << pg_url << "\"\nflush_interval = \"200ms\"\n"
      << "[observatory]\nenabled = false\n"
      << "[[providers]]\nname = \"sim\"\napi = \"openai\"\nbase_url = \"" << sim_url
      << "/v1\"\nkey_env = \"SIM_KEY\"\n"
      << "[[models]]\nname = \"fast\"\nupstreams = [\"sim/gpt-4o\"]\ncache = \"exact\"\n";
    return c.str();
}

std::string nginx_config(const std::filesystem::path& dir, std::uint16_t port,
                         const std::vector<std::string>& nodes) {
    std::ostringstream c;
    if (::geteuid() == 0) c << "user root;\n";
    c << "worker_processes 1;\ndaemon off;\npid " << (dir / "nginx.pid").string() << ";\nerror_log "
      << (dir / "nginx.err").string()
      << " warn;\nevents { worker_connections 512; }\nhttp {\n  access_log off;\n"
      << "  client_body_temp_path " << (dir / "nginx-body").string() << ";\n"
      << "  proxy_temp_path " << (dir / "nginx-proxy").string() << ";\n"
      << "  upstream nodes {\n";
    for (const auto& url : nodes) {
        c << "    server " << url.substr(std::string("http://").size())
          << " max_fails=1 fail_timeout=30s;\n";
    }
    // A dead node refuses connections: nginx sends that request to the next node (a POST is
    // retried only when none of it reached the dead one).
    c << "    keepalive 16;\n  }\n  server {\n    listen 127.0.0.1:" << port
      << ";\n    location / {\n      proxy_pass http://nodes;\n      proxy_http_version 1.1;\n"
      << "      proxy_set_header Connection \"\";\n      proxy_buffering off;\n"
      << "      proxy_connect_timeout 1s;\n      proxy_next_upstream error timeout;\n    }\n  "
         "}\n}\n";
    return c.str();
}

// POST `body` to `url` with `key`; the status line's code and the response headers and body.
std::string post(const std::string& url, const std::string& key, const std::string& body) {
    return capture("curl -s -i -m 10 " + url + " -H 'authorization: Bearer " + key +
                   "' -H 'content-type: application/json' -d '" + body + "'");
}

int status_of(const std::string& response) {
    return response.size() > 12 ? std::atoi(response.c_str() + 9) : 0;
}

class SeveralNodes : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!testing::PostgresServer::available()) {
            GTEST_SKIP() << testing::PostgresServer::skip_reason();
        }
        if (!testing::RedisServer::available() || ::access(kNginx, X_OK) != 0) {
            GTEST_SKIP() << "redis-server or nginx is not installed (scripts/install-deps.sh)";
        }
        pg_ = std::make_unique<testing::PostgresServer>();
        redis_ = std::make_unique<testing::RedisServer>();
        const std::string binary = TOKENRADAR_BINARY;
        sim_ =
            std::make_unique<Child>(binary + " sim --profile instant --port 0", dir() / "sim.err");
        const std::string sim_url = url_in(sim_->read_line());
        ASSERT_FALSE(sim_url.empty()) << slurp(dir() / "sim.err");
        std::ofstream(dir() / "node.toml") << node_config(sim_url, pg_->url(), redis_->url());
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
            const auto err = dir() / ("node" + std::to_string(i) + ".err");
            nodes_[i] = std::make_unique<Child>("env SIM_KEY=sk-sim " + binary +
                                                    " serve --port 0 --config " +
                                                    (dir() / "node.toml").string(),
                                                err);
            const std::string line = nodes_[i]->read_line();
            urls_.push_back(url_in(line));
            ASSERT_FALSE(urls_.back().empty()) << line << slurp(err);
        }
        const std::uint16_t port = testing::RedisServer::free_port();
        std::ofstream(dir() / "nginx.conf") << nginx_config(dir(), port, urls_);
        nginx_ = std::make_unique<Child>(std::string(kNginx) + " -p " + dir().string() + " -c " +
                                             (dir() / "nginx.conf").string(),
                                         dir() / "nginx.stderr");
        front_ = "http://127.0.0.1:" + std::to_string(port);
        for (int i = 0; i < 100 && capture("curl -s -o /dev/null -w '%{http_code}' " + front_ +
                                           "/healthz") != "200";
             ++i) {
            std::this_thread::sleep_for(50ms);
        }
        ASSERT_EQ(capture("curl -s -o /dev/null -w '%{http_code}' " + front_ + "/healthz"), "200")
            << slurp(dir() / "nginx.err");
    }

    [[nodiscard]] std::filesystem::path dir() const { return work_.dir(); }

    testing::TempDir work_{"nodes"};
    std::unique_ptr<testing::PostgresServer> pg_;
    std::unique_ptr<testing::RedisServer> redis_;
    std::unique_ptr<Child> sim_;
    std::array<std::unique_ptr<Child>, 3> nodes_;
    std::unique_ptr<Child> nginx_;
    std::vector<std::string> urls_;
    std::string front_;
};

TEST_F(SeveralNodes, LimitsCacheAndRecordsHoldAcrossNodesAndAKill9) {
    // A virtual key of 4 requests a minute, created through nginx (whichever node).
    const std::string created = capture(
        "curl -s -m 10 " + front_ + "/admin/v1/keys -H 'authorization: Bearer " + kAdminKey +
        "' -H 'content-type: application/json' -d '{\"name\":\"ci\",\"rpm\":4}'");
    boost::system::error_code ec;
    const auto key_json = boost::json::parse(created, ec);
    ASSERT_FALSE(ec) << created;
    const std::string limited(key_json.at("key").as_string());
    std::this_thread::sleep_for(1s);  // every node reads the registry within [auth] refresh

    // 12 requests, one node after another: 4 answered in all, the rest refused.
    const std::string small =
        R"({"model":"fast","max_tokens":3,"messages":[{"role":"user","content":"hi"}]})";
    int answered = 0;
    int limited_429 = 0;
    for (int i = 0; i < 12; ++i) {
        const int status = status_of(post(urls_[i % 3] + "/v1/chat/completions", limited, small));
        answered += status == 200 ? 1 : 0;
        limited_429 += status == 429 ? 1 : 0;
    }
    EXPECT_EQ(answered, 4);
    EXPECT_EQ(limited_429, 8);

    // An answer cached by node 0 is a hit on node 1 and node 2.
    const std::string exact =
        R"({"model":"fast","max_tokens":5,"temperature":0,"messages":[{"role":"user","content":"what is two plus two?"}]})";
    EXPECT_THAT(post(urls_[0] + "/v1/chat/completions", kClientKey, exact),
                HasSubstr("x-tokenradar-cache: miss"));
    std::this_thread::sleep_for(300ms);  // the L2 write follows the answer
    EXPECT_THAT(post(urls_[1] + "/v1/chat/completions", kClientKey, exact),
                HasSubstr("x-tokenradar-cache: exact"));
    EXPECT_THAT(post(urls_[2] + "/v1/chat/completions", kClientKey, exact),
                HasSubstr("x-tokenradar-cache: exact"));

    // bench through nginx; node 1 dies in the middle.
    const std::string bench_out = (dir() / "run").string();
    Child bench("env TR_KEY=" + std::string(kClientKey) + " " + TOKENRADAR_BINARY +
                    " bench --target gw=openai:" + front_ +
                    "/v1#fast --workload chat --duration 6s --concurrency 4 --key-env '*=TR_KEY' "
                    "--no-preflight --out " +
                    bench_out,
                dir() / "bench.err");
    std::this_thread::sleep_for(3s);
    const std::int64_t killed_us = wall_now_us();
    ASSERT_EQ(::kill(nodes_[1]->pid(), SIGKILL), 0);
    EXPECT_EQ(bench.wait(60s), 0) << slurp(dir() / "bench.err");
    EXPECT_EQ(nodes_[0]->terminate(30s), 0);
    EXPECT_EQ(nodes_[2]->terminate(30s), 0);

    std::vector<Measurement> sent;
    std::ifstream lines(bench_out + ".jsonl");
    for (std::string line; std::getline(lines, line);) {
        auto m = measurement_from_json(boost::json::parse(line));
        ASSERT_TRUE(m) << m.error().message;
        sent.push_back(std::move(*m));
    }
    ASSERT_GT(sent.size(), 30U) << slurp(dir() / "bench.err");

    store::PostgresOptions reader;
    reader.migrate = false;
    auto db = store::PostgresStore::open(pg_->url(), reader);
    ASSERT_TRUE(db) << db.error().message;
    auto stored = (*db)->select(store::RecordQuery{});
    ASSERT_TRUE(stored) << stored.error().message;
    std::set<std::string> stored_ids;
    for (const auto& m : *stored) stored_ids.insert(m.response_id);

    const std::int64_t safe_before_us =
        killed_us - std::chrono::microseconds(kFlushInterval + kLossMargin).count();
    int before = 0;
    int after = 0;
    for (const Measurement& m : sent) {
        const std::int64_t done_us = m.ts_us + (m.t.done.value_or(m.t.send) - m.t.send) / 1000;
        if (m.status == RequestStatus::ok && done_us < safe_before_us) {
            ++before;
            EXPECT_TRUE(stored_ids.contains(m.response_id))
                << m.response_id << " completed " << (killed_us - done_us) / 1000
                << " ms before the kill and is not in the store";
        }
        if (m.ts_us > killed_us + 500'000) {
            ++after;
            EXPECT_EQ(m.status, RequestStatus::ok)
                << "sent " << (m.ts_us - killed_us) / 1000 << " ms after the kill";
        }
    }
    std::cout << sent.size() << " requests; " << before << " finished before the kill's loss "
              << "window, all stored; " << after << " sent after the kill, all answered\n";
    EXPECT_GT(before, 20);
    EXPECT_GT(after, 20);
}

}  // namespace
}  // namespace tokenradar

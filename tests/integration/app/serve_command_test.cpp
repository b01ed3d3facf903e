// `tokenradar serve` as a user runs it: the real binary in front of the real sim, requests
// with curl, SIGTERM, then `tokenradar stats` over the store it wrote; HTTPS with curl
// verifying the certificate, and a new certificate taken on SIGHUP.

#include "../../support/child_process.hpp"
#include "../../support/run_cli.hpp"
#include "../../support/temp_path.hpp"
#include "../../support/test_pki.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

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

TEST(ServeCommand, ServesHttpsAndTakesANewCertificateOnSighup) {
    const testing::TempDir work("serve-tls");
    const std::filesystem::path dir = work.dir();
    const std::string binary = TOKENRADAR_BINARY;
    namespace fs = std::filesystem;
    ASSERT_TRUE(testing::make_test_pki(dir / "a", "DNS:localhost,IP:127.0.0.1"));
    ASSERT_TRUE(testing::make_test_pki(dir / "b", "DNS:localhost,IP:127.0.0.1"));
    const auto install = [&](const char* pki) {
        fs::copy_file(dir / pki / "server.pem", dir / "cert.pem",
                      fs::copy_options::overwrite_existing);
        fs::copy_file(dir / pki / "server.key", dir / "key.pem",
                      fs::copy_options::overwrite_existing);
    };
    install("a");
    const std::string listener = "[listener]\ntls_cert = \"" + (dir / "cert.pem").string() +
                                 "\"\ntls_key = \"" + (dir / "key.pem").string() + "\"\n";
    std::ofstream(dir / "gw.toml") << listener << "[auth]\nmode = \"none\"\n";

    auto checked = testing::run_cli("serve --check-config --config " + (dir / "gw.toml").string());
    EXPECT_EQ(checked.exit_code, 0) << checked.err;
    EXPECT_THAT(checked.out, HasSubstr("listener  https://127.0.0.1:8080"));

    Child serve(binary + " serve --port 0 --config " + (dir / "gw.toml").string(),
                dir / "serve.err");
    const std::string line = serve.read_line();
    const std::string url = url_in(line);
    ASSERT_EQ(url.rfind("https://", 0), 0U) << line << slurp(dir / "serve.err");
    const auto curl_status = [&](const char* pki) {
        return capture("curl -s -o /dev/null -w '%{http_code}' --cacert " +
                       (dir / pki / "ca.pem").string() + " " + url + "/healthz; echo \" $?\"");
    };
    EXPECT_EQ(curl_status("a"), "200 0\n");
    EXPECT_EQ(curl_status("b"), "000 60\n");  // curl: peer certificate cannot be authenticated

    install("b");
    ::kill(serve.pid(), SIGHUP);
    std::string err;
    for (int i = 0; i < 200 && err.find("TLS certificate reloaded") == std::string::npos; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        err = slurp(dir / "serve.err");
    }
    EXPECT_THAT(err, HasSubstr("TLS certificate reloaded from " + (dir / "cert.pem").string()));
    EXPECT_EQ(curl_status("b"), "200 0\n");
    EXPECT_EQ(curl_status("a"), "000 60\n");

    // A key that is not the certificate's: refused, the certificate in use stays.
    fs::copy_file(dir / "a" / "server.key", dir / "key.pem", fs::copy_options::overwrite_existing);
    ::kill(serve.pid(), SIGHUP);
    for (int i = 0; i < 200 && err.find("not reloaded") == std::string::npos; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        err = slurp(dir / "serve.err");
    }
    EXPECT_THAT(err, HasSubstr("TLS certificate not reloaded, the one in use stays: tls_key '" +
                               (dir / "key.pem").string() + "': expected the private key of"));
    EXPECT_EQ(curl_status("b"), "200 0\n");
    EXPECT_EQ(serve.terminate(std::chrono::seconds(15)), 0);

    // Half a pair is a configuration error naming the key.
    std::ofstream(dir / "half.toml") << "[listener]\ntls_cert = \"" << (dir / "cert.pem").string()
                                     << "\"\n[auth]\nmode = \"none\"\n";
    auto half = testing::run_cli("serve --check-config --config " + (dir / "half.toml").string());
    EXPECT_EQ(half.exit_code, 2);
    EXPECT_THAT(half.err, HasSubstr("half.toml:1: listener.tls_key: expected a PEM file here too"));
}

}  // namespace
}  // namespace tokenradar

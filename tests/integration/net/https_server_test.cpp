// HttpServer with TLS ([listener] tls_cert / tls_key): whole and streamed answers over TLS to
// our client verifying against a CA made at test time (test_pki.hpp), a plain-HTTP client and
// a silent one closed without harm, a reload that serves the new certificate to new
// connections, and errors that name the file.

#include "test_support.hpp"

#include "../../support/temp_path.hpp"
#include "../../support/test_pki.hpp"

#include <tokenradar/net/server_tls.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

namespace tokenradar::net::test {
namespace {

using asio::ip::tcp;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

class HttpsServerTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = tokenradar::testing::unique_temp_path("https-server", "");
        generated_ = tokenradar::testing::make_test_pki(dir_ / "a", "DNS:localhost") &&
                     tokenradar::testing::make_test_pki(dir_ / "b", "DNS:localhost");
    }
    static void TearDownTestSuite() {
        std::error_code ignored;
        fs::remove_all(dir_, ignored);
    }
    void SetUp() override {
        ASSERT_TRUE(generated_) << "openssl CLI failed, see " << dir_ << "/*/gen.log";
        observed().requests = 0;
    }

    static std::string file(const char* pki, const char* name) {
        return (dir_ / pki / name).string();
    }
    static std::shared_ptr<ServerTls> tls(const char* pki) {
        auto loaded = ServerTls::load(file(pki, "server.pem"), file(pki, "server.key"));
        if (!loaded) throw std::runtime_error(loaded.error().message);
        return *loaded;
    }
    static ClientOptions trusting(const char* pki) {
        ClientOptions options;
        options.ca_file = file(pki, "ca.pem");
        return options;
    }

    static inline fs::path dir_;
    static inline bool generated_ = false;
    asio::io_context ioc;
};

TEST_F(HttpsServerTest, AnswersWholeAndStreamedResponsesOverTls) {
    TestServer server({}, steered_handler, 1, tls("a"));
    HttpClient client(ioc.get_executor(), trusting("a"));
    auto whole = run(ioc, get(&client, server.url("/"), {}));
    ASSERT_TRUE(whole) << whole.error().message;
    EXPECT_EQ(whole->status, 200U);
    EXPECT_EQ(whole->body, "ok");
    EXPECT_GT(whole->timings.tls_ns, 0);
    // The next request reuses the connection: no second handshake.
    auto streamed = run(ioc, stream_get(&client, server.url("/"), {{"x-chunks", "3"}}));
    ASSERT_FALSE(streamed.error) << streamed.error->message;
    EXPECT_EQ(streamed.status, 200U);
    EXPECT_EQ(streamed.body(), "chunk-0\nchunk-1\nchunk-2\n");
    EXPECT_EQ(streamed.timings.tls_ns, 0);
    EXPECT_EQ(observed().requests.load(), 2);
}

TEST_F(HttpsServerTest, APlainHttpClientIsRefusedAndTheServerCarriesOn) {
    TestServer server({}, steered_handler, 1, tls("a"));
    HttpClient plain(ioc.get_executor());
    auto refused = run(ioc, get(&plain, Url{"http", "127.0.0.1", server.port(), "/"}, {}));
    EXPECT_FALSE(refused);
    HttpClient client(ioc.get_executor(), trusting("a"));
    auto answered = run(ioc, get(&client, server.url("/"), {}));
    ASSERT_TRUE(answered) << answered.error().message;
    EXPECT_EQ(answered->status, 200U);
}

TEST_F(HttpsServerTest, AClientThatNeverHandshakesIsClosedAtTheHeaderTimeout) {
    ServerLimits limits;
    limits.header_timeout = std::chrono::milliseconds(200);
    TestServer server(limits, steered_handler, 1, tls("a"));
    asio::io_context io;
    tcp::socket socket(io);
    socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port()));
    const auto t0 = std::chrono::steady_clock::now();
    char byte = 0;
    boost::system::error_code ec;
    asio::read(socket, asio::buffer(&byte, 1), ec);  // blocks until the server closes
    EXPECT_EQ(ec, asio::error::eof);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    EXPECT_TRUE(wait_for([&] { return server.server().active_connections() == 0; },
                         std::chrono::seconds(2)));
}

TEST_F(HttpsServerTest, AReloadServesTheNewCertificateToNewConnections) {
    // The files the server is configured with, first PKI a's, then b's.
    const fs::path cert = dir_ / "live.pem";
    const fs::path key = dir_ / "live.key";
    fs::copy_file(file("a", "server.pem"), cert, fs::copy_options::overwrite_existing);
    fs::copy_file(file("a", "server.key"), key, fs::copy_options::overwrite_existing);
    auto live = ServerTls::load(cert.string(), key.string());
    ASSERT_TRUE(live) << live.error().message;
    TestServer server({}, steered_handler, 1, *live);
    {
        HttpClient client(ioc.get_executor(), trusting("a"));
        auto before = run(ioc, get(&client, server.url("/"), {}));
        ASSERT_TRUE(before) << before.error().message;
    }
    fs::copy_file(file("b", "server.pem"), cert, fs::copy_options::overwrite_existing);
    fs::copy_file(file("b", "server.key"), key, fs::copy_options::overwrite_existing);
    ASSERT_TRUE((*live)->reload());
    HttpClient trusts_b(ioc.get_executor(), trusting("b"));
    auto after = run(ioc, get(&trusts_b, server.url("/"), {}));
    ASSERT_TRUE(after) << after.error().message;
    EXPECT_EQ(after->status, 200U);
    HttpClient trusts_a(ioc.get_executor(), trusting("a"));
    auto old = run(ioc, get(&trusts_a, server.url("/"), {}));
    ASSERT_FALSE(old);
    EXPECT_EQ(old.error().code, make_error_code(Errc::tls_failed)) << old.error().message;

    // A reload that fails (a key of another certificate) keeps b's in use.
    fs::copy_file(file("a", "server.key"), key, fs::copy_options::overwrite_existing);
    auto failed = (*live)->reload();
    ASSERT_FALSE(failed);
    EXPECT_THAT(failed.error().message, HasSubstr("expected the private key of tls_cert"));
    HttpClient still_b(ioc.get_executor(), trusting("b"));
    auto kept = run(ioc, get(&still_b, server.url("/"), {}));
    ASSERT_TRUE(kept) << kept.error().message;
}

TEST_F(HttpsServerTest, LoadErrorsNameTheFile) {
    auto missing = ServerTls::load("/nonexistent/cert.pem", file("a", "server.key"));
    ASSERT_FALSE(missing);
    EXPECT_THAT(missing.error().message,
                HasSubstr("tls_cert '/nonexistent/cert.pem': expected a PEM certificate chain"));
    auto not_a_key = ServerTls::load(file("a", "server.pem"), file("a", "server.pem"));
    ASSERT_FALSE(not_a_key);
    EXPECT_THAT(not_a_key.error().message,
                HasSubstr("tls_key '" + file("a", "server.pem") + "': expected a PEM private key"));
}

}  // namespace
}  // namespace tokenradar::net::test

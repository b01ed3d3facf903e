// TLS client against a throwaway TLS server whose CA and certificate are generated at test
// time with the openssl CLI (test_pki.hpp). The server certificate names
// only DNS:localhost, so connecting to "127.0.0.1" is a hostname mismatch.

#include "test_support.hpp"

#include "../../support/temp_path.hpp"
#include "../../support/test_pki.hpp"

#include <tokenradar/net/http_client.hpp>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

namespace tokenradar::net::test {
namespace {

namespace http = beast::http;
namespace ssl = asio::ssl;
using asio::ip::tcp;
namespace fs = std::filesystem;

class TlsTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = tokenradar::testing::unique_temp_path("tls", "");
        generated_ = tokenradar::testing::make_test_pki(dir_);
    }
    static void TearDownTestSuite() {
        std::error_code ignored;
        fs::remove_all(dir_, ignored);
    }
    void SetUp() override {
        ASSERT_TRUE(generated_) << "openssl CLI failed, see " << dir_ / "gen.log";
    }

    // Serves `connections` TLS connections (one request each) on a thread, then exits.
    void serve(int connections) {
        server_ctx_.use_certificate_chain_file((dir_ / "server.pem").string());
        server_ctx_.use_private_key_file((dir_ / "server.key").string(), ssl::context::pem);
        acceptor_.open(tcp::v4());
        acceptor_.bind(tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
        acceptor_.listen();
        port_ = acceptor_.local_endpoint().port();
        server_ = std::thread([this, connections] {
            for (int i = 0; i < connections; ++i) {
                boost::system::error_code ec;
                tcp::socket socket(server_ioc_);
                acceptor_.accept(socket, ec);
                if (ec) return;
                ssl::stream<tcp::socket> stream(std::move(socket), server_ctx_);
                stream.handshake(ssl::stream_base::server, ec);
                if (ec) continue;  // the client refused our certificate
                beast::flat_buffer buffer;
                http::request<http::string_body> request;
                http::read(stream, buffer, request, ec);
                if (ec) continue;
                http::response<http::string_body> response{http::status::ok, 11};
                response.body() = "tls-ok";
                response.keep_alive(false);
                response.prepare_payload();
                http::write(stream, response, ec);
                stream.shutdown(ec);
            }
        });
    }
    void TearDown() override {
        if (server_.joinable()) server_.join();
    }

    Url url(const std::string& host) const { return Url{"https", host, port_, "/"}; }
    std::string ca_file() const { return (dir_ / "ca.pem").string(); }

    static inline fs::path dir_;
    static inline bool generated_ = false;
    asio::io_context ioc;
    asio::io_context server_ioc_;
    ssl::context server_ctx_{ssl::context::tls_server};
    tcp::acceptor acceptor_{server_ioc_};
    std::thread server_;
    std::uint16_t port_ = 0;
};

TEST_F(TlsTest, VerifiesAgainstTheGivenCa) {
    serve(1);
    ClientOptions options;
    options.ca_file = ca_file();
    HttpClient client(ioc.get_executor(), options);
    auto response = run(ioc, get(&client, url("localhost"), {}));
    ASSERT_TRUE(response) << response.error().message;
    EXPECT_EQ(response->status, 200u);
    EXPECT_EQ(response->body, "tls-ok");
    EXPECT_GT(response->timings.tls_ns, 0);
}

TEST_F(TlsTest, UnknownCaIsTlsFailed) {
    serve(1);
    HttpClient client(ioc.get_executor());
    auto response = run(ioc, get(&client, url("localhost"), {}));
    ASSERT_FALSE(response);
    EXPECT_EQ(response.error().code, make_error_code(Errc::tls_failed));
    EXPECT_NE(response.error().message.find("localhost:"), std::string::npos);
}

TEST_F(TlsTest, WrongHostnameIsTlsFailed) {
    serve(1);
    ClientOptions options;
    options.ca_file = ca_file();
    HttpClient client(ioc.get_executor(), options);
    auto response = run(ioc, get(&client, url("127.0.0.1"), {}));
    ASSERT_FALSE(response);
    EXPECT_EQ(response.error().code, make_error_code(Errc::tls_failed));
}

TEST_F(TlsTest, VerificationOffConnectsAnyway) {
    serve(1);
    ClientOptions options;
    options.verify_tls = false;
    HttpClient client(ioc.get_executor(), options);
    auto response = run(ioc, get(&client, url("127.0.0.1"), {}));
    ASSERT_TRUE(response) << response.error().message;
    EXPECT_EQ(response->body, "tls-ok");
}

TEST_F(TlsTest, MissingCaFileIsTlsFailed) {
    serve(1);
    ClientOptions options;
    options.ca_file = (dir_ / "nope.pem").string();
    HttpClient client(ioc.get_executor(), options);
    auto response = run(ioc, get(&client, url("localhost"), {}));
    ASSERT_FALSE(response);
    EXPECT_EQ(response.error().code, make_error_code(Errc::tls_failed));
    EXPECT_NE(response.error().message.find("ca_file"), std::string::npos);
}

}  // namespace
}  // namespace tokenradar::net::test

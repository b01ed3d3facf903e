// The gateway against input nobody friendly sends: bodies from strangers, browsers on other
// origins, odd framing, slow requests, non-finite numbers, and upstreams that echo the key
// they were sent or answer in the wrong shape.

#include "../../support/gateway_fixture.hpp"
#include "../../support/raw_http_server.hpp"
#include "../../support/service_fixture.hpp"
#include "../../support/sim_fixture.hpp"

#include <sys/socket.h>
#include <sys/time.h>

#include <tokenradar/net/api_keys.hpp>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace tokenradar::gateway {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;
using testing::GatewayFixture;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::SimFixture;
using ::testing::StartsWith;

constexpr std::string_view kUpstreamKey = "sk-upstream-secret-1234";  // gateway_fixture's
constexpr std::string_view kClientKey = "tr-client-key-abc";

std::string providers(const std::string& base_url, std::string_view api = "openai") {
    return R"(
[[providers]]
name = "up"
api = ")" + std::string(api) +
           R"("
base_url = ")" +
           base_url +
           R"("
key_env = "TEST_UPSTREAM_KEY"
[[models]]
name = "fast"
upstreams = ["up/gpt-4o"]
)";
}

std::string keyed(const std::string& base_url, const std::string& extra = {}) {
    return R"(
[auth]
mode = "keys"
[[auth.keys]]
name = "team-a"
sha256 = ")" +
           net::hash_api_key(kClientKey) +
           R"("
[store]
path = ""
)" + extra +
           providers(base_url);
}

std::string keyless(const std::string& base_url, const std::string& extra = {},
                    std::string_view api = "openai") {
    return "[store]\npath = \"\"\n" + extra + "[auth]\nmode = \"none\"\n" +
           providers(base_url, api);
}

testing::HeaderPairs bearer() { return {{"authorization", "Bearer " + std::string(kClientKey)}}; }

std::string chat(bool stream, std::string_view extra = {}) {
    return std::string(R"({"model":"fast","max_tokens":5,"stream":)") +
           (stream ? "true" : "false") + std::string(extra) +
           R"(,"messages":[{"role":"user","content":"hi"}]})";
}

// A raw connection to the gateway: writes bytes, reads what comes back within a timeout.
class RawClient {
  public:
    explicit RawClient(std::uint16_t port) : socket_(ioc_) {
        socket_.connect({boost::asio::ip::make_address("127.0.0.1"), port});
        const timeval timeout{3, 0};
        setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    }
    void send(std::string_view bytes) { boost::asio::write(socket_, boost::asio::buffer(bytes)); }
    // Reads until `done(text so far)` holds, the peer closes, or 3 s pass without a byte.
    std::string read_until(const std::function<bool(const std::string&)>& done) {
        std::string out;
        char buf[4096];
        while (!done(out)) {
            const ssize_t n = ::recv(socket_.native_handle(), buf, sizeof buf, 0);
            if (n <= 0) break;
            out.append(buf, static_cast<std::size_t>(n));
        }
        return out;
    }
    std::string read_head() {
        return read_until(
            [](const std::string& s) { return s.find("\r\n\r\n") != std::string::npos; });
    }

  private:
    boost::asio::io_context ioc_;
    boost::asio::ip::tcp::socket socket_;
};

TEST(GatewayHostile, ALargeBodyFromAStrangerIsRefusedFromItsHeadWithoutA100Continue) {
    SimFixture sim("instant");
    GatewayFixture gw(keyed(sim.base_url() + "/v1"));
    RawClient client(gw.server().port());
    client.send(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
        "application/json\r\n"
        "Content-Length: 3000000\r\nExpect: 100-continue\r\n\r\n");
    const std::string head = client.read_head();
    EXPECT_THAT(head, StartsWith("HTTP/1.1 401")) << head;  // not "100 Continue"
}

TEST(GatewayHostile, EachRouteHasItsOwnBodyLimitWhateverIngestionAllows) {
    SimFixture sim("instant");
    // serve's assembly: the listener takes ingestion's bodies, each route keeps its own limit.
    testing::ServiceFixture gw(
        keyed(sim.base_url() + "/v1", "[observatory]\ningest = \"public\"\n"));
    RawClient client(gw.service().server().port());
    // 20 MB fits ingestion's 32 MiB, not a chat request's 4 MiB: refused before a byte of it.
    client.send(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
        "application/json\r\n"
        "Authorization: Bearer " +
        std::string(kClientKey) + "\r\nContent-Length: 20000000\r\n\r\n");
    EXPECT_THAT(client.read_head(), StartsWith("HTTP/1.1 413"));
    RawClient stranger(gw.service().server().port());
    stranger.send(
        "POST /v1/anything HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 20000000\r\n\r\n");
    EXPECT_THAT(stranger.read_head(), StartsWith("HTTP/1.1 404"));
}

TEST(GatewayHostile, BodiesInFlightShareOneBudget) {
    SimFixture sim("instant");
    GatewayFixture gw(
        keyed(sim.base_url() + "/v1", "[limits]\nmax_body_bytes_in_flight = 1000000\n"));
    const std::string head =
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: application/json\r\nAuthorization: Bearer " +
        std::string(kClientKey) + "\r\nContent-Length: 600000\r\n\r\n";
    RawClient first(gw.server().port());
    first.send(head + std::string(1000, ' '));  // holds its 600 KB reservation while it trickles
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    RawClient second(gw.server().port());
    second.send(head);
    const std::string refused = second.read_head();
    EXPECT_THAT(refused, StartsWith("HTTP/1.1 503")) << refused;
}

TEST(GatewayHostile, AnUnknownTransferCodingIsNotImplemented) {
    SimFixture sim("instant");
    GatewayFixture gw(keyless(sim.base_url() + "/v1"));
    RawClient client(gw.server().port());
    client.send(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
        "application/json\r\n"
        "Transfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
    EXPECT_THAT(client.read_head(), StartsWith("HTTP/1.1 501"));
}

TEST(GatewayHostile, ARequestThatDoesNotArriveInTimeGets408BeforeTheClose) {
    SimFixture sim("instant");
    GatewayFixture gw(keyless(sim.base_url() + "/v1", "[limits]\nheader_timeout = \"300ms\"\n"));
    RawClient client(gw.server().port());
    client.send(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: "
        "100\r\n\r\n{\"mo");
    const std::string answer =
        client.read_until([](const std::string&) { return false; });  // to the close
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 408")) << answer;
}

TEST(GatewayHostile, JsonAnswersCarryNoSniff) {
    SimFixture sim("instant");
    GatewayFixture gw(keyless(sim.base_url() + "/v1"));
    auto models = testing::fetch(http::verb::get, gw.url("/v1/models"));
    EXPECT_EQ(models.headers["x-content-type-options"], "nosniff");
    auto missing = testing::fetch(http::verb::get, gw.url("/v1/nothing"));
    EXPECT_EQ(missing.status, 404u);
    EXPECT_EQ(missing.headers["x-content-type-options"], "nosniff");
}

TEST(GatewayHostile, NonFiniteAndOutOfRangeSamplingValuesAre400sNamingTheField) {
    SimFixture sim("instant");
    GatewayFixture gw(keyless(sim.base_url() + "/v1"));
    for (const auto& [extra, field] : std::vector<std::pair<std::string, std::string>>{
             {R"(,"temperature":1e999)", "temperature"},
             {R"(,"top_p":-1e999)", "top_p"},
             {R"(,"temperature":7)", "temperature"},
             {R"(,"presence_penalty":-3)", "presence_penalty"}}) {
        auto f = testing::post_json(gw.url("/v1/chat/completions"), chat(false, extra));
        EXPECT_EQ(f.status, 400u) << extra;
        EXPECT_THAT(f.body, HasSubstr(field)) << f.body;
    }
    auto negative = testing::post_json(
        gw.url("/v1/chat/completions"),
        R"({"model":"fast","max_tokens":-5,"messages":[{"role":"user","content":"hi"}]})");
    EXPECT_EQ(negative.status, 400u);
    EXPECT_THAT(negative.body, HasSubstr("max_tokens"));
}

TEST(GatewayHostile, AKeylessListenerAnswersOnlyItsOwnHostNamesAndJsonBodies) {
    SimFixture sim("instant");
    GatewayFixture gw(keyless(sim.base_url() + "/v1"));
    const auto post_as = [&](std::string_view host) {
        const std::string body = chat(false);
        RawClient client(gw.server().port());
        client.send("POST /v1/chat/completions HTTP/1.1\r\nHost: " + std::string(host) +
                    "\r\nContent-Type: application/json\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
        return client.read_until([](const std::string&) { return false; });
    };
    // DNS rebinding: a page on evil.example resolved to 127.0.0.1.
    const std::string rebound = post_as("evil.example:8080");
    EXPECT_THAT(rebound, StartsWith("HTTP/1.1 403")) << rebound;
    EXPECT_THAT(rebound, HasSubstr("allowed_hosts"));
    EXPECT_THAT(post_as("localhost:8080"), StartsWith("HTTP/1.1 200"));
    // A cross-origin "simple request" a browser sends without asking.
    auto plain = testing::fetch(
        http::verb::post, gw.url("/v1/chat/completions"),
        {{"content-type", "text/plain"}, {"origin", "https://evil.example"}}, chat(false));
    EXPECT_EQ(plain.status, 415u);
    EXPECT_EQ(gw.records().wait_for(1).size(),
              1u);  // only the localhost request reached the upstream
}

TEST(GatewayHostile, CorsIsAnsweredOnlyForConfiguredOrigins) {
    SimFixture sim("instant");
    GatewayFixture gw(
        keyless(sim.base_url() + "/v1", "[listener]\ncors_origins = [\"https://app.example\"]\n"));
    auto preflight = testing::fetch(
        http::verb::options, gw.url("/v1/chat/completions"),
        {{"origin", "https://app.example"}, {"access-control-request-method", "POST"}});
    EXPECT_EQ(preflight.status, 204u);
    EXPECT_EQ(preflight.headers["access-control-allow-origin"], "https://app.example");
    auto foreign = testing::fetch(
        http::verb::options, gw.url("/v1/chat/completions"),
        {{"origin", "https://evil.example"}, {"access-control-request-method", "POST"}});
    EXPECT_NE(foreign.status, 204u);
    EXPECT_EQ(foreign.headers.count("access-control-allow-origin"), 0u);
    auto post = testing::post_json(gw.url("/v1/chat/completions"), chat(false),
                                   {{"origin", "https://app.example"}});
    EXPECT_EQ(post.status, 200u);
    EXPECT_EQ(post.headers["access-control-allow-origin"], "https://app.example");
}

TEST(GatewayHostile, OneModelIsRetrievableById) {
    SimFixture sim("instant");
    GatewayFixture gw(keyed(sim.base_url() + "/v1"));
    auto found = testing::fetch(http::verb::get, gw.url("/v1/models/fast"), bearer());
    ASSERT_EQ(found.status, 200u);
    EXPECT_EQ(json::parse(found.body).at("id").as_string(), "fast");
    auto missing = testing::fetch(http::verb::get, gw.url("/v1/models/nope"), bearer());
    EXPECT_EQ(missing.status, 404u);
    EXPECT_EQ(json::parse(missing.body).at("error").at("code").as_string(), "model_not_found");
    EXPECT_EQ(testing::fetch(http::verb::get, gw.url("/v1/models/fast")).status, 401u);
}

// An upstream that echoes the Authorization it received, as some error pages do.
testing::RawResponse echo_key(const testing::RawRequest& request, bool stream) {
    const auto at = request.head.find("Bearer ");
    const std::string key = request.head.substr(at + 7, request.head.find("\r\n", at) - at - 7);
    if (!stream) {
        const std::string body = R"({"error":{"message":"invalid request for key )" + key +
                                 R"(","type":"invalid_request_error"}})";
        return {
            "HTTP/1.1 400 Bad Request\r\nx-request-id: req_upstream_42\r\nContent-Type: "
            "application/json\r\n"
            "Content-Length: " +
            std::to_string(body.size()) + "\r\n\r\n" + body};
    }
    const std::string events = R"(data: {"error":{"message":"quota exceeded for )" + key +
                               R"(","type":"server_error"}})"
                               "\n\n";
    return {
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
        testing::chunked({events})};
}

TEST(GatewayHostile, AnUpstreamEchoingItsKeyIsRedactedAndItsRequestIdPassedOn) {
    for (bool stream : {false, true}) {
        testing::RawHttpServer upstream(
            {}, [stream](const testing::RawRequest& r) { return echo_key(r, stream); });
        GatewayFixture gw(keyless(upstream.base_url() + "/v1"));
        auto f = testing::post_json(gw.url("/v1/chat/completions"), chat(stream));
        EXPECT_THAT(f.body, Not(HasSubstr(std::string(kUpstreamKey)))) << f.body;
        EXPECT_THAT(f.body, HasSubstr("[redacted]")) << f.body;
        if (!stream) {
            EXPECT_EQ(f.status, 400u);
            EXPECT_EQ(f.headers["x-request-id"], "req_upstream_42");
            EXPECT_FALSE(f.headers["x-tokenradar-request-id"].empty());
        }
    }
}

TEST(GatewayHostile, AGeminiOkInAnotherShapeIsAProtocolError) {
    testing::RawHttpServer upstream({}, [](const testing::RawRequest&) {
        const std::string body = R"({"object":"chat.completion","choices":[]})";
        return testing::RawResponse{
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
            std::to_string(body.size()) + "\r\n\r\n" + body};
    });
    GatewayFixture gw(keyless(upstream.base_url(), {}, "gemini"));
    auto f = testing::post_json(gw.url("/v1/chat/completions"), chat(false));
    EXPECT_EQ(f.status, 502u) << f.body;
    EXPECT_EQ(gw.records().wait_for(1).at(0).status, RequestStatus::protocol_error);
}

}  // namespace
}  // namespace tokenradar::gateway

// ResponseWriter: a handler's response on its connection's socket, head and body in one
// gather write, chunked framing without copies.

#include <tokenradar/core/logging.hpp>
#include <tokenradar/net/http_server.hpp>

#include "message_head.hpp"
#include "server_connection.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/status.hpp>

#include <array>
#include <charconv>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tokenradar::net {

namespace http = beast::http;
using detail::ServerConnection;
using detail::write_buffers;

ResponseWriter::ResponseWriter(detail::ServerConnection& conn, bool keep_alive, unsigned version,
                               std::int64_t request_read_ns, bool head_request)
    : conn_(&conn),
      keep_alive_(keep_alive),
      version_(version),
      request_read_ns_(request_read_ns),
      head_request_(head_request) {}

bool ResponseWriter::client_gone() const { return conn_->gone; }

std::string ResponseWriter::remote_address() const {
    boost::system::error_code ec;
    const auto endpoint = conn_->socket.remote_endpoint(ec);
    return ec ? std::string() : endpoint.address().to_string();
}

void ResponseWriter::abort() {
    keep_alive_ = false;
    conn_->close();
}

namespace {

boost::system::error_code gone_error() {
    return asio::error::make_error_code(asio::error::not_connected);
}

// The head for a response, or (a header value with CR or LF: a bug of the handler's, which
// must not reach the wire) an error that leaves the response unstarted, so the server
// answers 500.
Result<std::string> checked_head(http::status status, unsigned version, bool keep_alive,
                                 std::string_view content_type, const HeaderList& headers,
                                 ResponseBody body, std::size_t body_size) {
    auto head = response_head(status, version, keep_alive, content_type, headers, body, body_size);
    if (!head) spdlog::error("response head: {}", head.error().message);
    return head;
}

// Chunked framing without Beast's chunk_body, whose size line is a shared_ptr allocation
// per chunk: "<hex size>\r\n" <bytes> "\r\n".
struct ChunkFrame {
    explicit ChunkFrame(std::size_t size) {
        char* end = std::to_chars(line.data(), line.data() + line.size() - 2, size, 16).ptr;
        end[0] = '\r';
        end[1] = '\n';
        length = static_cast<std::size_t>(end + 2 - line.data());
    }
    std::array<char, 20> line{};
    std::size_t length = 0;
};

constexpr std::string_view kCrlf = "\r\n";
constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace

asio::awaitable<boost::system::error_code> ResponseWriter::send(http::status status,
                                                                std::string_view content_type,
                                                                std::string body,
                                                                const HeaderList& headers) {
    if (started_ || conn_->gone) co_return gone_error();
    std::string filtered_type;
    if (filter_ != nullptr) {
        filtered_type.assign(content_type);
        filter_->whole(status, filtered_type, body);
        content_type = filtered_type;
    }
    if (conn_->stopping) keep_alive_ = false;
    const bool bodiless = http::to_status_class(status) == http::status_class::informational ||
                          status == http::status::no_content ||
                          status == http::status::not_modified;
    if (bodiless && !body.empty()) {
        throw std::invalid_argument("a 1xx, 204 or 304 response has no body");  // as Beast's
    }
    const auto head = checked_head(status, version_, keep_alive_, content_type, headers,
                                   ResponseBody::content_length, body.size());
    if (!head) co_return make_error_code(boost::system::errc::invalid_argument);
    started_ = true;
    boost::system::error_code ec;
    if (head_request_) {
        const auto buffer = asio::buffer(*head);  // named: no temporaries in co_await arguments
        ec = co_await write_buffers(*conn_, buffer);
    } else {
        const std::array<asio::const_buffer, 2> buffers{asio::buffer(*head), asio::buffer(body)};
        ec = co_await write_buffers(*conn_, buffers);
    }
    if (ec) {
        conn_->gone = true;
        co_return ec;
    }
    complete_ = true;
    co_return ec;
}

asio::awaitable<boost::system::error_code> ResponseWriter::start_stream(
    http::status status, std::string_view content_type, const HeaderList& headers,
    std::string_view first_chunk) {
    if (started_ || conn_->gone) co_return gone_error();
    if (filter_ != nullptr) {
        filtered_.clear();
        filter_->stream(first_chunk, filtered_);
        first_chunk = filtered_;
    }
    if (conn_->stopping || version_ < 11) keep_alive_ = false;
    const auto built = checked_head(status, version_, keep_alive_, content_type, headers,
                                    ResponseBody::chunked, 0);
    if (!built) co_return make_error_code(boost::system::errc::invalid_argument);
    started_ = true;
    streaming_ = true;
    const std::string& head = *built;
    if (head_request_) first_chunk = {};
    boost::system::error_code ec;
    if (first_chunk.empty()) {
        const auto buffer = asio::buffer(head);  // named: no temporaries in co_await arguments
        ec = co_await write_buffers(*conn_, buffer);
    } else if (version_ >= 11) {
        const ChunkFrame frame(first_chunk.size());
        const std::array<asio::const_buffer, 4> buffers{
            asio::buffer(head), asio::buffer(frame.line.data(), frame.length),
            asio::buffer(first_chunk.data(), first_chunk.size()),
            asio::buffer(kCrlf.data(), kCrlf.size())};
        ec = co_await write_buffers(*conn_, buffers);
    } else {
        const std::array<asio::const_buffer, 2> buffers{
            asio::buffer(head), asio::buffer(first_chunk.data(), first_chunk.size())};
        ec = co_await write_buffers(*conn_, buffers);
    }
    if (ec) conn_->gone = true;
    if (head_request_) complete_ = !ec;  // the head is the whole answer to HEAD
    co_return ec;
}

asio::awaitable<boost::system::error_code> ResponseWriter::write_chunk(std::string_view bytes) {
    if (filter_ != nullptr && !bytes.empty()) {
        filtered_.clear();
        filter_->stream(bytes, filtered_);
        bytes = filtered_;
    }
    if (head_request_ && streaming_) co_return boost::system::error_code{};
    if (!streaming_ || complete_ || conn_->gone) co_return gone_error();
    if (bytes.empty()) co_return boost::system::error_code{};
    boost::system::error_code ec;
    if (version_ >= 11) {
        // A buffer sequence over the caller's bytes: size line, data, CRLF (no copy).
        const ChunkFrame frame(bytes.size());
        const std::array<asio::const_buffer, 3> buffers{
            asio::buffer(frame.line.data(), frame.length), asio::buffer(bytes.data(), bytes.size()),
            asio::buffer(kCrlf.data(), kCrlf.size())};
        ec = co_await write_buffers(*conn_, buffers);
    } else {
        const auto buffer = asio::buffer(bytes.data(), bytes.size());
        ec = co_await write_buffers(*conn_, buffer);
    }
    if (ec) conn_->gone = true;
    co_return ec;
}

asio::awaitable<boost::system::error_code> ResponseWriter::finish(std::string_view last_bytes) {
    if (filter_ != nullptr && streaming_ && !complete_) {
        filtered_.clear();
        filter_->stream(last_bytes, filtered_);
        filter_->end(filtered_);
        last_bytes = filtered_;
    }
    if (head_request_ && streaming_) co_return boost::system::error_code{};
    if (!streaming_ || complete_ || conn_->gone) co_return gone_error();
    boost::system::error_code ec;
    if (version_ < 11) {
        if (!last_bytes.empty()) {
            const auto buffer = asio::buffer(last_bytes.data(), last_bytes.size());
            ec = co_await write_buffers(*conn_, buffer);
        }
    } else if (last_bytes.empty()) {
        const auto buffer = asio::buffer(kLastChunk.data(), kLastChunk.size());
        ec = co_await write_buffers(*conn_, buffer);
    } else {
        // The last chunk and the terminating one in one write: one wake-up of the client.
        const ChunkFrame frame(last_bytes.size());
        const std::array<asio::const_buffer, 4> buffers{
            asio::buffer(frame.line.data(), frame.length),
            asio::buffer(last_bytes.data(), last_bytes.size()),
            asio::buffer(kCrlf.data(), kCrlf.size()),
            asio::buffer(kLastChunk.data(), kLastChunk.size())};
        ec = co_await write_buffers(*conn_, buffers);
    }
    if (ec) {
        conn_->gone = true;
        co_return ec;
    }
    complete_ = true;
    co_return ec;
}

}  // namespace tokenradar::net

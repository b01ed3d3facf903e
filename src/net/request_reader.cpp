#include <tokenradar/net/request_reader.hpp>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace tokenradar::net {

namespace http = beast::http;

void configure_request_parser(RequestParser& parser, const ServerLimits& limits) {
    parser.header_limit(static_cast<std::uint32_t>(
        std::min<std::size_t>(limits.max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
    parser.body_limit(limits.max_body_bytes);
}

std::optional<Errc> classify_request_error(const boost::system::error_code& ec) {
    if (ec == http::error::header_limit) return Errc::headers_too_large;
    if (ec == http::error::body_limit) return Errc::payload_too_large;
    if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message &&
        ec != http::error::need_more && ec != http::error::need_buffer) {
        return Errc::bad_request;
    }
    return std::nullopt;
}

std::optional<Error> unsupported_transfer_coding(const Request& head) {
    const auto it = head.find(http::field::transfer_encoding);
    if (it == head.end()) return std::nullopt;
    for (const auto& coding : http::token_list(it->value())) {
        if (!beast::iequals(coding, "chunked")) {
            return Error(Errc::not_implemented,
                         fmt::format("Transfer-Encoding '{}': only chunked is implemented",
                                     std::string_view(coding.data(),
                                                      std::min<std::size_t>(coding.size(), 64))));
        }
    }
    return std::nullopt;
}

Result<Request> parse_request(std::string_view bytes, const ServerLimits& limits) {
    RequestParser parser;
    configure_request_parser(parser, limits);
    parser.eager(true);
    boost::system::error_code ec;
    // Feed in small pieces, as a socket would deliver them, so the parser's incremental
    // paths (split headers, split chunks) are exercised too.
    constexpr std::size_t kPiece = 512;
    std::string pending;
    std::size_t offset = 0;
    while (!parser.is_done()) {
        if (!pending.empty()) {
            std::size_t used = parser.put(asio::buffer(pending), ec);
            pending.erase(0, used);
            if (ec == http::error::need_more) {
                ec = {};
            } else if (ec) {
                break;
            } else if (used > 0) {
                continue;
            }
        }
        if (parser.is_done()) break;
        if (offset < bytes.size()) {
            std::size_t n = std::min(kPiece, bytes.size() - offset);
            pending.append(bytes.substr(offset, n));
            offset += n;
            continue;
        }
        // put_eof() asserts that some bytes were seen; a socket reader gets plain eof.
        if (!parser.got_some()) return Error(Errc::bad_request, "request: no bytes");
        parser.put_eof(ec);
        break;
    }
    // The server answers an unknown coding as soon as the head is in, before any body error.
    if (parser.is_header_done()) {
        if (auto coding = unsupported_transfer_coding(parser.get())) return *coding;
    }
    if (ec) {
        Errc errc = classify_request_error(ec).value_or(Errc::bad_request);
        return Error(errc, fmt::format("request: {}", ec.message()));
    }
    if (!parser.is_done()) return Error(Errc::bad_request, "request: incomplete");
    return parser.release();
}

}  // namespace tokenradar::net

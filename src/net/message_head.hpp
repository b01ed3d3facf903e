#pragma once
// The head of an HTTP/1.1 message (start line and header block) written into one string
// (sans-IO): the client's request heads and the server's response heads. Each leaves with
// its body in one gather write. Beast's message serializer walked the header list as a chain
// of buffer views and allocated per field (~8% of bench's CPU per small request; on the
// server, a field list per response plus a dozen iovecs per sendmsg).

#include <tokenradar/core/error.hpp>
#include <tokenradar/net/header_list.hpp>

#include <boost/beast/http/status.hpp>
#include <boost/beast/http/verb.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenradar::net {

using HeaderFields = std::vector<std::pair<std::string, std::string>>;

// `Host: host` first, then `headers` in their order (names as given), then `User-Agent:
// tokenradar` unless the caller set one, then `Content-Length` when the body is not empty or
// the method is POST, PUT or OPTIONS (as Beast's prepare_payload did). The caller's own
// Content-Length and Transfer-Encoding are dropped: the body is always sent whole. Errors
// (Errc::bad_request, naming the header) for a name that is not an HTTP token and a value with
// CR, LF or NUL: either would let a configured value smuggle a header or a second request.
Result<std::string> request_head(boost::beast::http::verb method, std::string_view target,
                                 std::string_view host, const HeaderFields& headers,
                                 std::size_t body_size);

// How a response's body is framed.
enum class ResponseBody {
    content_length,  // `Content-Length: size`; none for 1xx, 204 and 304, which have no body
    chunked,         // `Transfer-Encoding: chunked`; HTTP/1.0: neither, the close ends the body
};

// `HTTP/1.x <code> <reason>`, then `Content-Type` unless empty, then `headers` in their order
// (names as given), then `Connection: close` (HTTP/1.1 without keep-alive) or `Connection:
// keep-alive` (HTTP/1.0 with it), then the framing header: what Beast's response serializer
// wrote after `keep_alive()` and `prepare_payload()` / `chunked(true)`. The caller's own
// Connection, Content-Length and Transfer-Encoding are dropped (the framing is this
// function's). `version` is 10 or 11. Errors as request_head's, for the same reasons.
Result<std::string> response_head(boost::beast::http::status status, unsigned version,
                                  bool keep_alive, std::string_view content_type,
                                  const HeaderList& headers, ResponseBody body,
                                  std::size_t body_size = 0);

}  // namespace tokenradar::net

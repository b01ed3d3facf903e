#pragma once
// The request line and header block of an HTTP/1.1 client request, written into one string
// (sans-IO). The client sends it and the body with one gather write: Beast's message
// serializer walked the header list as a chain of buffer views and allocated per field,
// ~8% of bench's CPU per small request.

#include <tokenradar/core/error.hpp>

#include <boost/beast/http/verb.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenradar::net {

// `Host: host` first, then `headers` in their order (names as given), then `User-Agent:
// tokenradar` unless the caller set one, then `Content-Length` when the body is not empty or
// the method is POST, PUT or OPTIONS (as Beast's prepare_payload did). The caller's own
// Content-Length and Transfer-Encoding are dropped: the body is always sent whole. Errors
// (Errc::bad_request, naming the header) for a name that is not an HTTP token and a value with
// CR, LF or NUL: either would let a configured value smuggle a header or a second request.
Result<std::string> request_head(boost::beast::http::verb method, std::string_view target,
                                 std::string_view host,
                                 const std::vector<std::pair<std::string, std::string>>& headers,
                                 std::size_t body_size);

}  // namespace tokenradar::net

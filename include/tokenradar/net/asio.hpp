#pragma once
// Namespace aliases and the completion token every net coroutine uses, defined once.
// `net` is our own namespace, so Asio is `asio` here, not `net`.

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace boost::beast {}

namespace tokenradar::net {

namespace asio = boost::asio;
namespace beast = boost::beast;

// Expected I/O errors come back as values ((error_code, ...) tuples), never as exceptions.
// Named like Asio's own completion tokens (use_awaitable), not like a constant.
// NOLINTNEXTLINE(readability-identifier-naming)
constexpr auto use_nothrow = asio::as_tuple(asio::use_awaitable);

}  // namespace tokenradar::net

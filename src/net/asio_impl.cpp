// The one translation unit that compiles Boost.Asio, Asio SSL and Beast
// (BOOST_ASIO_SEPARATE_COMPILATION / BOOST_BEAST_SEPARATE_COMPILATION are set globally in
// cmake/TokenRadarOptions.cmake), so no other file pays for their implementation.

#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>

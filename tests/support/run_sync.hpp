#pragma once
// Runs one coroutine to completion on a private io_context and returns its value: the
// blocking bridge integration tests use to talk to in-process servers.

#include <tokenradar/net/asio.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <chrono>
#include <future>
#include <stdexcept>

namespace tokenradar::testing {

template <class T>
T run_sync(boost::asio::io_context& ioc, boost::asio::awaitable<T> task) {
    auto future = boost::asio::co_spawn(ioc, std::move(task), boost::asio::use_future);
    ioc.restart();
    ioc.run();
    if (future.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
        throw std::runtime_error("run_sync: the coroutine did not finish");
    }
    return future.get();
}

}  // namespace tokenradar::testing

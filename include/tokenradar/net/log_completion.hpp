#pragma once
// The completion handler of every co_spawn in the project: a spawned coroutine's exception is
// logged with what it was, never dropped (a `detached` spawn would swallow it; banned by
// scripts/lint.py).

#include <exception>

namespace tokenradar::net {

struct LogCompletion {
    const char* what = "coroutine";  // "accept loop", "redis connection", ...
    void operator()(const std::exception_ptr& ex) const;
};

}  // namespace tokenradar::net

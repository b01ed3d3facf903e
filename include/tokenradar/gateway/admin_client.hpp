#pragma once
// `tokenradar keys`: a client of a running gateway's admin API (/admin/v1/keys, README "Keys,
// limits and budgets"), so that it works the same against any node and any registry (SQLite
// now, PostgreSQL later), the node applies the change at once, and the audit log names the
// admin key that made it. Blocking: each call runs its own io_context until the answer.

#include <tokenradar/core/error.hpp>
#include <tokenradar/keys/virtual_key.hpp>
#include <tokenradar/net/url.hpp>

#include <cstddef>
#include <string>

namespace tokenradar::gateway {

struct AdminTarget {
    net::Url base;          // the gateway ("http://127.0.0.1:8080")
    std::string admin_key;  // an [[auth.admin_keys]] key (from $TOKENRADAR_ADMIN_KEY)
    std::string ca_file;    // extra CA bundle for https (tests)
};

// What to do; `json`: print the API's JSON instead of a table.
struct KeysCommand {
    enum class Action { list, create, rotate, revoke, audit };
    Action action = Action::list;
    keys::KeySpec spec;      // create
    std::string id;          // rotate, revoke
    std::size_t limit = 20;  // audit
    bool json = false;
};

// The text to print: a table of keys, the new key (shown once), the audit log. An error
// carries the API's message (401: the admin key; 404: no such key) or the connection's.
Result<std::string> run_keys_command(const AdminTarget& target, const KeysCommand& command);

}  // namespace tokenradar::gateway

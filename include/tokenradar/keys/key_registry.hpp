#pragma once
// Where virtual keys live, shared by every gateway node that reads it: the interface of the
// SQLite registry (sqlite_key_registry.hpp, nodes on one host) and the PostgreSQL one
// (store/postgres_key_registry.hpp, nodes on several hosts). Every change is one transaction with
// its audit entry.
//
// Threads: implementations are thread-safe, and every call blocks (disk, network): the
// gateway calls them on a thread of its own (`tr-keys`), never on an I/O thread. Errors are
// values; messages name the registry (its file) and never hold a key or a digest.

#include <tokenradar/core/error.hpp>
#include <tokenradar/keys/virtual_key.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::keys {

class KeyRegistry {
  public:
    virtual ~KeyRegistry() = default;

    // Adds `key` (new id) and its audit entry. Errc::bad_request when an active key already
    // has its name.
    virtual Result<void> create(const VirtualKey& key, const AuditEntry& audit) = 0;
    // Every key (revoked ones too when asked), oldest first.
    virtual Result<std::vector<VirtualKey>> list(bool with_revoked) = 0;
    // Replaces an active key's digest; false when no active key has that id.
    virtual Result<bool> rotate(std::string_view id, std::string_view sha256, std::int64_t now_us,
                                const AuditEntry& audit) = 0;
    // Revokes an active key; false when no active key has that id.
    virtual Result<bool> revoke(std::string_view id, std::int64_t now_us,
                                const AuditEntry& audit) = 0;
    // Adds each delta to its (key, period) row: usage counted by this node since the last call.
    virtual Result<void> add_usage(std::span<const KeyUsage> deltas) = 0;
    // The rows of periods that started at or after `since_us` (every node's sum).
    virtual Result<std::vector<KeyUsage>> usage(std::int64_t since_us) = 0;
    // The newest `limit` audit entries, newest first.
    virtual Result<std::vector<AuditEntry>> audit(std::size_t limit) = 0;
    // What it is, for messages and --check-config ("sqlite FILE").
    [[nodiscard]] virtual std::string describe() const = 0;
};

}  // namespace tokenradar::keys

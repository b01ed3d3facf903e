#include "key_book.hpp"

#include "shared_buckets.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/logging.hpp>
#include <tokenradar/core/thread_name.hpp>
#include <tokenradar/keys/key_spec.hpp>
#include <tokenradar/net/api_keys.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <map>
#include <unordered_map>

namespace tokenradar::gateway {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;

// Digests are uniformly random: 16 of their hex digits are hash enough.
struct DigestHash {
    using is_transparent = void;  // looked up by string_view: no std::string per request
    std::size_t operator()(std::string_view hex) const noexcept {
        std::uint64_t a = 0;
        std::uint64_t b = 0;
        if (hex.size() >= 16) {
            std::memcpy(&a, hex.data(), 8);
            std::memcpy(&b, hex.data() + 8, 8);
        }
        return static_cast<std::size_t>((a * 0x9E3779B97F4A7C15ULL) ^ b);
    }
};

// x-ratelimit-reset-* as OpenAI writes them ("20ms", "1.5s", "60s"), built by hand: once
// or twice per request of a key with a rate.
std::string reset_text(std::int64_t ms) {
    if (ms < 1000) return std::to_string(std::max<std::int64_t>(ms, 0)) + "ms";
    std::string s = std::to_string(ms / 1000);
    if (std::int64_t frac = ms % 1000; frac != 0) {
        char digits[4] = {static_cast<char>('0' + frac / 100),
                          static_cast<char>('0' + frac / 10 % 10),
                          static_cast<char>('0' + frac % 10), '\0'};
        std::size_t n = 3;
        while (digits[n - 1] == '0') --n;
        s.append(1, '.').append(digits, n);
    }
    s += 's';
    return s;
}

// Constants: each name is longer than std::string's inline buffer (a malloc per header).
const net::HeaderName kLimitRequests = net::HeaderName::constant("x-ratelimit-limit-requests");
const net::HeaderName kRemainingRequests =
    net::HeaderName::constant("x-ratelimit-remaining-requests");
const net::HeaderName kResetRequests = net::HeaderName::constant("x-ratelimit-reset-requests");
const net::HeaderName kLimitTokens = net::HeaderName::constant("x-ratelimit-limit-tokens");
const net::HeaderName kRemainingTokens = net::HeaderName::constant("x-ratelimit-remaining-tokens");
const net::HeaderName kResetTokens = net::HeaderName::constant("x-ratelimit-reset-tokens");
const net::HeaderName kRetryAfter = net::HeaderName::constant("retry-after");

void append_limit_headers(net::HeaderList& out, const keys::KeySpec& spec,
                          const keys::BucketState& rs, const keys::BucketState& ts) {
    if (spec.rpm > 0) {
        out.emplace_back(kLimitRequests, std::to_string(spec.rpm));
        out.emplace_back(kRemainingRequests,
                         std::to_string(std::max<std::int64_t>(0, rs.remaining)));
        out.emplace_back(kResetRequests, reset_text(rs.reset_ms));
    }
    if (spec.tpm > 0) {
        out.emplace_back(kLimitTokens, std::to_string(spec.tpm));
        out.emplace_back(kRemainingTokens, std::to_string(std::max<std::int64_t>(0, ts.remaining)));
        out.emplace_back(kResetTokens, reset_text(ts.reset_ms));
    }
}

std::int64_t reset_ms(std::int64_t limit, std::int64_t remaining) {
    if (limit <= 0 || remaining >= limit) return 0;
    return static_cast<std::int64_t>(
        std::ceil(static_cast<double>(limit - remaining) * 60'000.0 / static_cast<double>(limit)));
}

std::string retry_after_text(std::int64_t ms) {
    return std::to_string(std::max<std::int64_t>(1, (ms + 999) / 1000));
}

// Runs `work` on `pool`'s thread and completes with its result on the awaiting coroutine's
// executor (the coroutine never leaves its executor). The job keeps that executor's
// io_context from running out of work until the result is delivered.
template <typename T, typename Work>
asio::awaitable<T> run_on(asio::thread_pool& pool, Work work) {
    return asio::async_initiate<decltype(asio::use_awaitable), void(T)>(
        [&pool](auto handler, Work w) {
            const auto ex = asio::get_associated_executor(handler);
            asio::post(pool, [ex, guard = asio::make_work_guard(ex), w = std::move(w),
                              handler = std::move(handler)]() mutable {
                std::optional<T> result;
                try {
                    result.emplace(w());
                } catch (const std::exception& e) {
                    result.emplace(Error(Errc::internal, e.what()));
                }
                asio::post(ex,
                           [handler = std::move(handler), result = std::move(*result)]() mutable {
                               std::move(handler)(std::move(result));
                           });
            });
        },
        asio::use_awaitable, std::move(work));
}

std::int64_t budget_used(const KeyState& s, std::int64_t now_us) {
    const std::int64_t synced = now_us < s.period_end_us.load(std::memory_order_relaxed)
                                    ? s.synced_tokens.load(std::memory_order_relaxed)
                                    : 0;
    return synced + s.pending_tokens.load(std::memory_order_relaxed);
}

json::object key_json(const keys::VirtualKey& k) {
    json::array models;
    for (const auto& m : k.spec.models) models.emplace_back(m);
    json::object o{{"id", k.id},
                   {"object", "key"},
                   {"name", k.spec.name},
                   {"models", std::move(models)},
                   {"rpm", k.spec.rpm},
                   {"tpm", k.spec.tpm},
                   {"budget_tokens", k.spec.budget_tokens},
                   {"budget_period", keys::to_string(k.spec.budget_period)},
                   {"created_at", rfc3339_utc(k.created_us)}};
    o["rotated_at"] = k.rotated_us != 0 ? json::value(rfc3339_utc(k.rotated_us)) : nullptr;
    o["revoked_at"] = k.revoked_us != 0 ? json::value(rfc3339_utc(k.revoked_us)) : nullptr;
    return o;
}

}  // namespace

std::string key_object_json(const keys::VirtualKey& key) { return json::serialize(key_json(key)); }

struct KeyBook::Table {
    std::unordered_map<std::string, KeyRef, DigestHash, std::equal_to<>> by_digest;
    std::vector<KeyRef> keys;  // oldest first
};

struct KeyBook::Shared {
    explicit Shared(std::unique_ptr<SharedBuckets> b) : buckets(std::move(b)) {}
    std::unique_ptr<SharedBuckets> buckets;
    std::atomic<std::uint64_t> fallbacks{0};
    std::atomic<bool> down{false};
    std::atomic<std::int64_t> last_warning_ns{0};

    void failed(const Error& error) {
        fallbacks.fetch_add(1, std::memory_order_relaxed);
        // One warning when an outage starts, then at most one a minute while it lasts.
        const std::int64_t now = steady_now_ns();
        std::int64_t last = last_warning_ns.load(std::memory_order_relaxed);
        const bool was_down = down.exchange(true, std::memory_order_relaxed);
        if ((!was_down || now - last > std::int64_t{60'000'000'000}) &&
            last_warning_ns.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
            spdlog::warn("limits: redis {} failed, each node limits on its own buckets: {}",
                         buckets->authority(), error.message);
        }
    }
    void answered() {
        if (down.exchange(false, std::memory_order_relaxed)) {
            spdlog::info("limits: redis {} answers again: limits are shared", buckets->authority());
        }
    }
};

struct KeyBook::Impl {
    explicit Impl(std::chrono::milliseconds every) : refresh(every) {}
    std::chrono::milliseconds refresh;
    // Used on the pool's thread only (and by the constructor before it starts).
    std::unordered_map<std::string, std::unique_ptr<KeyState>> states;
    asio::thread_pool pool{1};
    asio::steady_timer timer{pool.get_executor()};
    bool stopped = false;
};

KeyBook::KeyBook(std::shared_ptr<keys::KeyRegistry> registry, const GatewayConfig& config,
                 const std::vector<net::asio::any_io_executor>& io_executors)
    : registry_(std::move(registry)),
      config_(config),
      views_(std::max<std::size_t>(1, io_executors.size())),
      impl_(std::make_unique<Impl>(config.keys_refresh)) {
    if (!config.limits_redis_url.empty() && !io_executors.empty()) {
        auto url = net::parse_redis_url(config.limits_redis_url);  // checked by the config
        net::RedisOptions options;
        options.command_timeout = config.limits_redis_timeout;
        options.connect_timeout = config.limits_redis_timeout * 2;
        shared_ = std::make_unique<Shared>(
            std::make_unique<SharedBuckets>(io_executors.front(), std::move(*url), options));
    }
    sync();
    asio::post(impl_->pool, [] { name_this_thread("tr-keys"); });
    // Every `refresh`: usage out, keys and every node's usage in.
    struct Tick {
        KeyBook* book;
        void operator()(const boost::system::error_code& ec) const {
            if (ec || book->impl_->stopped) return;
            book->sync();
            book->impl_->timer.expires_after(book->impl_->refresh);
            book->impl_->timer.async_wait(*this);
        }
    };
    impl_->timer.expires_after(impl_->refresh);
    impl_->timer.async_wait(Tick{this});
}

KeyBook::~KeyBook() {
    // The last usage goes to the registry before the thread ends.
    asio::post(impl_->pool, [this] {
        impl_->stopped = true;
        impl_->timer.cancel();
        sync();
    });
    impl_->pool.join();
}

std::shared_ptr<const KeyBook::Table> KeyBook::table() const {
    std::lock_guard lock(table_mu_);
    return table_;
}

KeyRef KeyBook::find(std::string_view sha256, std::size_t thread) const {
    View& view = views_[thread % views_.size()];
    const std::uint64_t version = version_.load(std::memory_order_acquire);
    if (view.version != version) {
        std::lock_guard lock(table_mu_);
        view.table = table_;
        view.version = version_.load(std::memory_order_relaxed);
    }
    if (!view.table) return nullptr;
    const auto it = view.table->by_digest.find(sha256);
    return it == view.table->by_digest.end() ? nullptr : it->second;
}

void KeyBook::sync() {
    const std::int64_t now_us = wall_now_us();
    // This node's usage since the last time, counted in the period it was counted in; kept
    // for the next time when the registry refuses it.
    std::vector<keys::KeyUsage> deltas;
    std::vector<KeyState*> owners;
    for (auto& [id, state] : impl_->states) {
        const std::int64_t r = state->pending_requests.exchange(0, std::memory_order_relaxed);
        const std::int64_t t = state->pending_tokens.exchange(0, std::memory_order_relaxed);
        if (r == 0 && t == 0) continue;
        state->synced_requests.fetch_add(r, std::memory_order_relaxed);
        state->synced_tokens.fetch_add(t, std::memory_order_relaxed);
        deltas.push_back({id, state->period_start_us.load(std::memory_order_relaxed), r, t});
        owners.push_back(state.get());
    }
    const auto failed = [this](const Error& error) {
        registry_errors_.fetch_add(1, std::memory_order_relaxed);
        if (!registry_failing_.exchange(true, std::memory_order_relaxed)) {
            spdlog::warn("keys: the registry failed, keeping the keys read before: {}",
                         error.message);
        }
    };
    if (auto added = registry_->add_usage(deltas); !added) {
        for (std::size_t i = 0; i < deltas.size(); ++i) {
            owners[i]->synced_requests.fetch_sub(deltas[i].requests, std::memory_order_relaxed);
            owners[i]->synced_tokens.fetch_sub(deltas[i].tokens, std::memory_order_relaxed);
            owners[i]->pending_requests.fetch_add(deltas[i].requests, std::memory_order_relaxed);
            owners[i]->pending_tokens.fetch_add(deltas[i].tokens, std::memory_order_relaxed);
        }
        failed(added.error());
        return;
    }
    auto listed = registry_->list(false);
    if (!listed) {
        failed(listed.error());
        return;
    }
    // A month starts no later than the day: one query covers both kinds of period.
    auto usage = registry_->usage(keys::period_start_us(keys::BudgetPeriod::month, now_us));
    if (!usage) {
        failed(usage.error());
        return;
    }
    if (registry_failing_.exchange(false, std::memory_order_relaxed)) {
        spdlog::info("keys: the registry answers again");
    }
    std::map<std::pair<std::string_view, std::int64_t>, const keys::KeyUsage*> by_period;
    for (const auto& u : *usage) by_period[{u.key_id, u.period_start_us}] = &u;
    auto table = std::make_shared<Table>();
    for (auto& key : *listed) {
        auto& state = impl_->states[key.id];
        if (!state) state = std::make_unique<KeyState>();
        const keys::BudgetPeriod period = keys::usage_period(key.spec);
        const std::int64_t start = keys::period_start_us(period, now_us);
        const auto found = by_period.find({key.id, start});
        state->synced_requests.store(found == by_period.end() ? 0 : found->second->requests,
                                     std::memory_order_relaxed);
        state->synced_tokens.store(found == by_period.end() ? 0 : found->second->tokens,
                                   std::memory_order_relaxed);
        state->period_start_us.store(start, std::memory_order_relaxed);
        state->period_end_us.store(keys::period_end_us(period, now_us), std::memory_order_relaxed);
        auto entry = std::make_shared<KeyEntry>();
        entry->tenant = "key:" + key.id;
        entry->state = state.get();
        entry->key = std::move(key);
        table->by_digest.emplace(entry->key.sha256, entry);
        table->keys.push_back(std::move(entry));
    }
    std::lock_guard lock(table_mu_);
    table_ = std::move(table);
    version_.fetch_add(1, std::memory_order_release);
}

net::asio::awaitable<std::optional<Refusal>> KeyBook::admit(KeyRef key, std::string model,
                                                            net::HeaderList& headers) {
    const KeyEntry& e = *key;
    KeyState& s = *e.state;
    const keys::KeySpec& spec = e.key.spec;
    const auto refuse = [&s](KeyRefusal why) {
        s.refused[static_cast<std::size_t>(why)].fetch_add(1, std::memory_order_relaxed);
    };
    if (!spec.models.empty() &&
        std::find(spec.models.begin(), spec.models.end(), model) == spec.models.end()) {
        refuse(KeyRefusal::model);
        Refusal r;
        r.code = Errc::forbidden;
        r.message = fmt::format("this key ('{}') may not use model '{}'; it may use: {}", spec.name,
                                model.substr(0, 128), fmt::join(spec.models, ", "));
        r.param = "model";
        r.type_code = "model_not_allowed";
        co_return r;
    }
    if (spec.budget_tokens > 0) {
        const std::int64_t now_us = wall_now_us();
        const std::int64_t used = budget_used(s, now_us);
        if (used >= spec.budget_tokens) {
            refuse(KeyRefusal::budget);
            const std::int64_t end_us = s.period_end_us.load(std::memory_order_relaxed);
            Refusal r;
            r.message = fmt::format(
                "this key ('{}') has used its token budget for this {}: {} of {} tokens; it "
                "renews at {}",
                spec.name, keys::to_string(spec.budget_period), used, spec.budget_tokens,
                rfc3339_utc(end_us));
            r.type_code = "insufficient_quota";
            r.headers.emplace_back(kRetryAfter, retry_after_text((end_us - now_us) / 1000));
            co_return r;
        }
    }
    if (spec.rpm == 0 && spec.tpm == 0) {
        s.pending_requests.fetch_add(1, std::memory_order_relaxed);
        s.requests_total.fetch_add(1, std::memory_order_relaxed);
        co_return std::nullopt;
    }
    std::optional<SharedVerdict> shared;
    if (shared_) {
        auto verdict = co_await shared_->buckets->take(e.key.id, spec.rpm, spec.tpm);
        if (verdict) {
            shared = *verdict;
            shared_->answered();
        } else {
            shared_->failed(verdict.error());
        }
    }
    // This node's buckets follow its own traffic even while Redis decides, so that they are
    // not full (a fresh burst) when Redis fails.
    const std::int64_t now = steady_now_ns();
    keys::BucketState rs;
    keys::BucketState ts;
    bool requests_ok = true;
    bool tokens_ok = true;
    {
        std::lock_guard lock(s.mu);
        if (spec.rpm > 0) requests_ok = s.requests.available(spec.rpm, now);
        if (spec.tpm > 0) tokens_ok = s.tokens.available(spec.tpm, now);
        const bool admitted = shared ? shared->admitted : requests_ok && tokens_ok;
        if (admitted && spec.rpm > 0) s.requests.take(spec.rpm, 1, now);
        if (spec.rpm > 0) rs = s.requests.state(spec.rpm, now);
        if (spec.tpm > 0) ts = s.tokens.state(spec.tpm, now);
    }
    if (shared) {
        requests_ok = spec.rpm == 0 || shared->admitted || shared->requests_left >= 1;
        tokens_ok = spec.tpm == 0 || shared->admitted || shared->tokens_left >= 1;
        rs.remaining = shared->requests_left;
        ts.remaining = shared->tokens_left;
        rs.reset_ms = reset_ms(spec.rpm, rs.remaining);
        ts.reset_ms = reset_ms(spec.tpm, ts.remaining);
    }
    if (requests_ok && tokens_ok) {
        append_limit_headers(headers, spec, rs, ts);
        s.pending_requests.fetch_add(1, std::memory_order_relaxed);
        s.requests_total.fetch_add(1, std::memory_order_relaxed);
        co_return std::nullopt;
    }
    const bool by_requests = !requests_ok;
    refuse(by_requests ? KeyRefusal::requests : KeyRefusal::tokens);
    const std::int64_t retry_ms =
        shared ? shared->retry_after_ms
               : std::max(by_requests ? rs.retry_after_ms : 0, tokens_ok ? 0 : ts.retry_after_ms);
    Refusal r;
    r.message = by_requests ? fmt::format(
                                  "this key ('{}') is over its {} requests per minute; retry "
                                  "after {} s",
                                  spec.name, spec.rpm, retry_after_text(retry_ms))
                            : fmt::format(
                                  "this key ('{}') is over its {} tokens per minute; retry "
                                  "after {} s",
                                  spec.name, spec.tpm, retry_after_text(retry_ms));
    r.type_code = "rate_limit_exceeded";
    append_limit_headers(r.headers, spec, rs, ts);
    r.headers.emplace_back(kRetryAfter, retry_after_text(retry_ms));
    co_return r;
}

void KeyBook::settle(const KeyEntry& key, std::int64_t tokens) {
    if (tokens <= 0) return;
    KeyState& s = *key.state;
    s.pending_tokens.fetch_add(tokens, std::memory_order_relaxed);
    s.tokens_total.fetch_add(static_cast<std::uint64_t>(tokens), std::memory_order_relaxed);
    const std::int64_t tpm = key.key.spec.tpm;
    if (tpm <= 0) return;
    {
        std::lock_guard lock(s.mu);
        s.tokens.take(tpm, tokens, steady_now_ns());
    }
    if (shared_) shared_->buckets->debit(key.key.id, tpm, tokens);
}

template <typename T, typename Work>
net::asio::awaitable<T> KeyBook::on_book_thread(Work work) {
    auto op = run_on<T>(impl_->pool, std::move(work));  // named: GCC 12
    T result = co_await std::move(op);
    co_return result;
}

Result<void> KeyBook::check_spec(const keys::KeySpec& spec) const {
    for (const auto& m : spec.models) {
        if (config_.find_model(m) == nullptr) {
            return Error(Errc::bad_request,
                         fmt::format("models: '{}' is not served here; GET /v1/models lists the "
                                     "models",
                                     m.substr(0, 128)));
        }
    }
    for (const auto& k : config_.client_keys) {
        if (k.name == spec.name) {
            return Error(Errc::bad_request,
                         fmt::format("name: '{}' is a key of the configuration file", spec.name));
        }
    }
    return {};
}

net::asio::awaitable<Result<IssuedKey>> KeyBook::create(keys::KeySpec spec, std::string actor) {
    if (auto ok = check_spec(spec); !ok) co_return ok.error();
    auto work = [this, spec = std::move(spec), actor = std::move(actor)]() -> Result<IssuedKey> {
        IssuedKey issued;
        issued.secret = keys::new_secret();
        issued.key.id = keys::new_key_id();
        issued.key.sha256 = net::hash_api_key(issued.secret);
        issued.key.spec = spec;
        issued.key.created_us = wall_now_us();
        const keys::AuditEntry audit{issued.key.created_us, actor, "create", issued.key.id,
                                     keys::key_spec_json(spec)};
        if (auto created = registry_->create(issued.key, audit); !created) {
            return created.error();
        }
        spdlog::info("keys: {} created key {} ('{}')", actor, issued.key.id, spec.name);
        sync();  // this node uses it at once
        return issued;
    };
    Result<IssuedKey> result = co_await on_book_thread<Result<IssuedKey>>(std::move(work));
    co_return result;
}

net::asio::awaitable<Result<IssuedKey>> KeyBook::rotate(std::string id, std::string actor) {
    auto work = [this, id = std::move(id), actor = std::move(actor)]() -> Result<IssuedKey> {
        IssuedKey issued;
        issued.secret = keys::new_secret();
        const std::int64_t now_us = wall_now_us();
        const keys::AuditEntry audit{now_us, actor, "rotate", id, "{}"};
        auto rotated = registry_->rotate(id, net::hash_api_key(issued.secret), now_us, audit);
        if (!rotated) return rotated.error();
        if (!*rotated) return Error(Errc::not_found, fmt::format("no active key {}", id));
        spdlog::info("keys: {} rotated key {}", actor, id);
        sync();  // the old key stops working here at once
        auto listed = registry_->list(false);
        if (!listed) return listed.error();
        for (auto& k : *listed) {
            if (k.id == id) issued.key = std::move(k);
        }
        return issued;
    };
    Result<IssuedKey> result = co_await on_book_thread<Result<IssuedKey>>(std::move(work));
    co_return result;
}

net::asio::awaitable<Result<keys::VirtualKey>> KeyBook::revoke(std::string id, std::string actor) {
    auto work = [this, id = std::move(id), actor = std::move(actor)]() -> Result<keys::VirtualKey> {
        const std::int64_t now_us = wall_now_us();
        const keys::AuditEntry audit{now_us, actor, "revoke", id, "{}"};
        auto revoked = registry_->revoke(id, now_us, audit);
        if (!revoked) return revoked.error();
        if (!*revoked) return Error(Errc::not_found, fmt::format("no active key {}", id));
        spdlog::info("keys: {} revoked key {}", actor, id);
        sync();
        auto listed = registry_->list(true);
        if (!listed) return listed.error();
        for (auto& k : *listed) {
            if (k.id == id) return std::move(k);
        }
        return Error(Errc::not_found, fmt::format("no key {}", id));
    };
    Result<keys::VirtualKey> result =
        co_await on_book_thread<Result<keys::VirtualKey>>(std::move(work));
    co_return result;
}

net::asio::awaitable<Result<std::string>> KeyBook::list_json() {
    auto work = [this]() -> Result<std::string> {
        auto listed = registry_->list(true);
        if (!listed) return listed.error();
        const std::int64_t now_us = wall_now_us();
        auto usage = registry_->usage(keys::period_start_us(keys::BudgetPeriod::month, now_us));
        if (!usage) return usage.error();
        json::array data;
        for (const auto& k : *listed) {
            json::object o = key_json(k);
            const keys::BudgetPeriod period = keys::usage_period(k.spec);
            const std::int64_t start = keys::period_start_us(period, now_us);
            std::int64_t requests = 0;
            std::int64_t tokens = 0;
            for (const auto& u : *usage) {
                if (u.key_id == k.id && u.period_start_us == start) {
                    requests = u.requests;
                    tokens = u.tokens;
                }
            }
            // Plus what this node counted since it last wrote to the registry.
            if (const auto it = impl_->states.find(k.id); it != impl_->states.end()) {
                requests += it->second->pending_requests.load(std::memory_order_relaxed);
                tokens += it->second->pending_tokens.load(std::memory_order_relaxed);
            }
            o["usage"] = json::object{{"period", keys::to_string(period)},
                                      {"period_start", rfc3339_utc(start)},
                                      {"requests", requests},
                                      {"tokens", tokens}};
            data.push_back(std::move(o));
        }
        return json::serialize(json::object{{"object", "list"}, {"data", std::move(data)}});
    };
    Result<std::string> result = co_await on_book_thread<Result<std::string>>(std::move(work));
    co_return result;
}

net::asio::awaitable<Result<std::string>> KeyBook::audit_json(std::size_t limit) {
    auto work = [this, limit]() -> Result<std::string> {
        auto entries = registry_->audit(limit);
        if (!entries) return entries.error();
        json::array data;
        for (const auto& a : *entries) {
            boost::system::error_code ec;
            json::value detail = json::parse(a.detail, ec);
            if (ec) detail = json::object();
            data.push_back(json::object{{"at", rfc3339_utc(a.ts_us)},
                                        {"actor", a.actor},
                                        {"action", a.action},
                                        {"key_id", a.key_id},
                                        {"detail", std::move(detail)}});
        }
        return json::serialize(json::object{{"object", "list"}, {"data", std::move(data)}});
    };
    Result<std::string> result = co_await on_book_thread<Result<std::string>>(std::move(work));
    co_return result;
}

void KeyBook::render(PrometheusText& out) const {
    const auto t = table();
    const std::int64_t now_us = wall_now_us();
    constexpr std::string_view kActive = "tokenradar_keys_active";
    out.family(kActive, MetricType::gauge, "Active virtual keys this node knows.");
    out.sample(kActive, t ? t->keys.size() : std::size_t{0});
    constexpr std::string_view kErrors = "tokenradar_keys_registry_errors_total";
    out.family(kErrors, MetricType::counter,
               "Reads or writes of the key registry that failed (the keys read before stay).");
    out.sample(kErrors, registry_errors_.load(std::memory_order_relaxed));
    if (shared_) {
        constexpr std::string_view kFallback = "tokenradar_limits_redis_fallback_total";
        out.family(kFallback, MetricType::counter,
                   "Rate-limit checks that Redis did not answer: decided on this node's own "
                   "buckets.");
        out.sample(kFallback, shared_->fallbacks.load(std::memory_order_relaxed));
        constexpr std::string_view kUp = "tokenradar_limits_redis_up";
        out.family(kUp, MetricType::gauge, "1 while the limits' Redis connection is up.");
        out.sample(kUp, shared_->buckets->up() ? 1 : 0);
    }
    if (!t || t->keys.empty()) return;
    constexpr std::string_view kRequests = "tokenradar_key_requests_total";
    out.family(kRequests, MetricType::counter,
               "Requests admitted per virtual key on this node since it started.");
    for (const auto& e : t->keys) {
        out.sample(kRequests, {{"key", e->key.spec.name}},
                   e->state->requests_total.load(std::memory_order_relaxed));
    }
    constexpr std::string_view kTokens = "tokenradar_key_tokens_total";
    out.family(kTokens, MetricType::counter,
               "Tokens (prompt + output) per virtual key on this node since it started.");
    for (const auto& e : t->keys) {
        out.sample(kTokens, {{"key", e->key.spec.name}},
                   e->state->tokens_total.load(std::memory_order_relaxed));
    }
    constexpr std::string_view kRefused = "tokenradar_key_rejected_total";
    out.family(kRefused, MetricType::counter,
               "Requests refused per virtual key: model not allowed (403), over its requests or "
               "tokens per minute, budget spent (429).");
    for (const auto& e : t->keys) {
        for (std::size_t i = 0; i < kKeyRefusalNames.size(); ++i) {
            out.sample(kRefused, {{"key", e->key.spec.name}, {"reason", kKeyRefusalNames[i]}},
                       e->state->refused[i].load(std::memory_order_relaxed));
        }
    }
    constexpr std::string_view kPeriod = "tokenradar_key_period_tokens";
    out.family(kPeriod, MetricType::gauge,
               "Tokens per virtual key in its budget period (a UTC day without a budget), every "
               "node's as of the registry's last read plus this node's since.");
    for (const auto& e : t->keys) {
        out.sample(kPeriod, {{"key", e->key.spec.name}}, budget_used(*e->state, now_us));
    }
    constexpr std::string_view kBudget = "tokenradar_key_budget_tokens";
    out.family(kBudget, MetricType::gauge, "Per virtual key with a budget: its tokens per period.");
    for (const auto& e : t->keys) {
        if (e->key.spec.budget_tokens > 0) {
            out.sample(kBudget, {{"key", e->key.spec.name}}, e->key.spec.budget_tokens);
        }
    }
}

void KeyBook::close() {
    if (shared_) shared_->buckets->close();
}

}  // namespace tokenradar::gateway

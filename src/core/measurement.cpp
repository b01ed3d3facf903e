#include <tokenradar/core/measurement.hpp>

#include <fmt/format.h>

#include <array>
#include <cmath>

namespace tokenradar {
namespace {

constexpr double kNsPerMs = 1e6;

std::optional<double> ms_between(std::int64_t from, const std::optional<std::int64_t>& to) {
    if (!to) return std::nullopt;
    return static_cast<double>(*to - from) / kNsPerMs;
}

void put_optional(boost::json::object& o, std::string_view key,
                  const std::optional<std::int64_t>& v) {
    if (v) o[key] = *v;
}

void put_offset(boost::json::object& o, std::string_view key, const std::optional<std::int64_t>& v,
                std::int64_t send) {
    if (v) o[key] = *v - send;
}

void put_derived(boost::json::object& o, std::string_view key, const std::optional<double>& v) {
    if (v && std::isfinite(*v)) o[key] = *v;
}

// Reads fields of one JSON object, remembering the first error with its field name.
class FieldReader {
  public:
    explicit FieldReader(const boost::json::object& o) : o_(o) {}

    std::optional<std::int64_t> integer(std::string_view key, std::int64_t min, std::int64_t max) {
        const auto* v = o_.if_contains(key);
        if (v == nullptr || v->is_null()) return std::nullopt;
        std::int64_t out = 0;
        if (v->is_int64()) {
            out = v->get_int64();
        } else if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
            out = static_cast<std::int64_t>(v->get_uint64());
        } else if (v->is_double() && std::trunc(v->get_double()) == v->get_double() &&
                   std::abs(v->get_double()) < 9e18) {
            out = static_cast<std::int64_t>(v->get_double());
        } else {
            fail(key, fmt::format("an integer from {} to {}", min, max));
            return std::nullopt;
        }
        if (out < min || out > max) {
            fail(key, fmt::format("an integer from {} to {}", min, max));
            return std::nullopt;
        }
        return out;
    }

    std::string string(std::string_view key, std::string_view fallback = {}) {
        return std::string(text(key).value_or(fallback));
    }

    // A string field without a copy (valid while the JSON lives); nullopt when absent or
    // null, and empty after an error.
    std::optional<std::string_view> text(std::string_view key) {
        const auto* v = o_.if_contains(key);
        if (v == nullptr || v->is_null()) return std::nullopt;
        if (!v->is_string()) {
            fail(key, "a string");
            return std::string_view();
        }
        if (v->get_string().size() > 256) {
            fail(key, "a string of at most 256 bytes");
            return std::string_view();
        }
        return std::string_view(v->get_string());
    }

    bool boolean(std::string_view key, bool fallback) {
        const auto* v = o_.if_contains(key);
        if (v == nullptr || v->is_null()) return fallback;
        if (!v->is_bool()) {
            fail(key, "true or false");
            return fallback;
        }
        return v->get_bool();
    }

    void fail(std::string_view key, std::string_view expected) {
        if (!error_) error_ = fmt::format("{}: expected {}", key, expected);
    }
    // An error that already reads "field: expected ..." (the label and status parsers').
    void fail(const Error& e) {
        if (!error_) error_ = e.message;
    }

    [[nodiscard]] const std::optional<std::string>& error() const { return error_; }

  private:
    const boost::json::object& o_;
    std::optional<std::string> error_;
};

constexpr std::int64_t kMaxNs = 86'400'000'000'000;  // a day: no single request is longer
constexpr std::int64_t kMaxTokens = 100'000'000;

}  // namespace

std::string_view to_string(TokenSource s) noexcept {
    return s == TokenSource::usage ? "usage" : "estimate";
}

Derived derive(const Measurement& m) noexcept {
    Derived d;
    const auto& t = m.t;
    d.ttft_ms = ms_between(t.send, t.first_token);
    d.ttft_sched_ms = ms_between(t.sched, t.first_token);
    d.ttfat_ms = ms_between(t.send, t.first_answer);
    d.ttfb_ms = ms_between(t.send, t.headers);
    d.e2e_ms = ms_between(t.send, t.done);
    const std::int64_t n = m.output_tokens.value_or(0);
    if (n >= 2 && t.first_token && t.last_token) {
        d.tpot_ms = static_cast<double>(*t.last_token - *t.first_token) / kNsPerMs /
                    static_cast<double>(n - 1);
        if (*d.tpot_ms > 0) d.decode_tps = 1000.0 / *d.tpot_ms;
        if (d.ttft_ms) d.e2e500_ms = *d.ttft_ms + 499.0 * *d.tpot_ms;
    }
    if (m.output_tokens && d.e2e_ms && *d.e2e_ms > 0) {
        d.e2e_tps = static_cast<double>(n) / *d.e2e_ms * 1000.0;
    }
    if (m.output_tokens && m.output_events > 0) {
        d.tokens_per_chunk = static_cast<double>(n) / static_cast<double>(m.output_events);
    }
    return d;
}

boost::json::object to_json(const Measurement& m) {
    boost::json::object o;
    o["metrics_spec"] = 1;
    o["request_id"] = m.request_id;
    if (!m.response_id.empty()) o["response_id"] = m.response_id;
    if (!m.client_id.empty()) o["client_id"] = m.client_id;
    o["attempt"] = m.attempt;
    o["status"] = to_string(m.status);
    if (m.http_status != 0) o["http_status"] = m.http_status;
    o["ts_us"] = m.ts_us;
    if (m.received_us != 0) o["received_us"] = m.received_us;
    for (const LabelInfo& label : kLabelTable) {
        if (label.label == Label::stream) {
            o[label.name] = m.labels.stream;
        } else {
            o[label.name] = label_value(m.labels, label.label);
        }
    }

    const std::int64_t send = m.t.send;
    o["sched_offset_ns"] = m.t.sched - send;
    put_offset(o, "headers_ns", m.t.headers, send);
    put_offset(o, "first_chunk_ns", m.t.first_chunk, send);
    put_offset(o, "first_token_ns", m.t.first_token, send);
    put_offset(o, "first_answer_ns", m.t.first_answer, send);
    put_offset(o, "last_token_ns", m.t.last_token, send);
    put_offset(o, "done_ns", m.t.done, send);
    o["connect_ns"] = m.connect_ns;
    o["tls_ns"] = m.tls_ns;

    put_optional(o, "prompt_tokens", m.prompt_tokens);
    put_optional(o, "cached_prompt_tokens", m.cached_prompt_tokens);
    put_optional(o, "cache_creation_tokens", m.cache_creation_tokens);
    put_optional(o, "output_tokens", m.output_tokens);
    put_optional(o, "reasoning_tokens", m.reasoning_tokens);
    o["token_source"] = to_string(m.token_source);
    o["output_events"] = m.output_events;
    put_optional(o, "chunk_gap_p50_ns", m.chunk_gap_p50_ns);
    put_optional(o, "chunk_gap_p99_ns", m.chunk_gap_p99_ns);
    put_optional(o, "chunk_gap_max_ns", m.chunk_gap_max_ns);
    put_optional(o, "overhead_ns", m.overhead_ns);
    put_optional(o, "relay_p50_ns", m.relay_p50_ns);
    put_optional(o, "relay_max_ns", m.relay_max_ns);

    const Derived d = derive(m);
    put_derived(o, "ttft_ms", d.ttft_ms);
    put_derived(o, "ttft_sched_ms", d.ttft_sched_ms);
    put_derived(o, "ttfat_ms", d.ttfat_ms);
    put_derived(o, "ttfb_ms", d.ttfb_ms);
    put_derived(o, "e2e_ms", d.e2e_ms);
    put_derived(o, "tpot_ms", d.tpot_ms);
    put_derived(o, "decode_tps", d.decode_tps);
    put_derived(o, "e2e_tps", d.e2e_tps);
    put_derived(o, "tokens_per_chunk", d.tokens_per_chunk);
    put_derived(o, "e2e500_ms", d.e2e500_ms);
    return o;
}

Result<Measurement> measurement_from_json(const boost::json::value& v) {
    if (!v.is_object()) return Error(Errc::bad_request, "record: expected a JSON object");
    const auto& o = v.get_object();
    FieldReader r(o);
    if (auto spec = r.integer("metrics_spec", 1, 1); !spec && o.contains("metrics_spec")) {
        return Error(Errc::bad_request, "metrics_spec: expected 1 (this server implements spec 1)");
    }
    Measurement m;
    m.request_id = r.string("request_id");
    if (m.request_id.empty()) r.fail("request_id", "a non-empty string");
    m.response_id = r.string("response_id");
    m.client_id = r.string("client_id");
    m.attempt = static_cast<int>(r.integer("attempt", 1, 100).value_or(1));
    if (const std::string status = r.string("status", "ok"); !r.error()) {
        if (auto parsed = parse_request_status(status)) {
            m.status = *parsed;
        } else {
            r.fail(parsed.error());
        }
    }
    m.http_status = static_cast<int>(r.integer("http_status", 100, 599).value_or(0));
    m.ts_us = r.integer("ts_us", 0, INT64_MAX).value_or(0);
    if (!o.contains("ts_us")) r.fail("ts_us", "UTC microseconds since the epoch");

    // Absent labels keep their defaults (Labels{}): unset, or bypass, primary and streamed.
    for (const LabelInfo& label : kLabelTable) {
        if (label.label == Label::stream) {
            m.labels.stream = r.boolean(label.name, m.labels.stream);
            continue;
        }
        const std::optional<std::string_view> text = r.text(label.name);
        if (!text || r.error()) continue;
        if (auto set = set_label(m.labels, label.label, *text); !set) r.fail(set.error());
    }

    m.t.send = 0;
    m.t.sched = r.integer("sched_offset_ns", -kMaxNs, 0).value_or(0);
    m.t.headers = r.integer("headers_ns", 0, kMaxNs);
    m.t.first_chunk = r.integer("first_chunk_ns", 0, kMaxNs);
    m.t.first_token = r.integer("first_token_ns", 0, kMaxNs);
    m.t.first_answer = r.integer("first_answer_ns", 0, kMaxNs);
    m.t.last_token = r.integer("last_token_ns", 0, kMaxNs);
    m.t.done = r.integer("done_ns", 0, kMaxNs);
    m.connect_ns = r.integer("connect_ns", 0, kMaxNs).value_or(0);
    m.tls_ns = r.integer("tls_ns", 0, kMaxNs).value_or(0);

    m.prompt_tokens = r.integer("prompt_tokens", 0, kMaxTokens);
    m.cached_prompt_tokens = r.integer("cached_prompt_tokens", 0, kMaxTokens);
    m.cache_creation_tokens = r.integer("cache_creation_tokens", 0, kMaxTokens);
    m.output_tokens = r.integer("output_tokens", 0, kMaxTokens);
    m.reasoning_tokens = r.integer("reasoning_tokens", 0, kMaxTokens);
    const std::string source = r.string("token_source", "usage");
    if (source == "usage") {
        m.token_source = TokenSource::usage;
    } else if (source == "estimate") {
        m.token_source = TokenSource::estimate;
    } else {
        r.fail("token_source", "usage or estimate");
    }
    m.output_events = r.integer("output_events", 0, kMaxTokens).value_or(0);
    m.chunk_gap_p50_ns = r.integer("chunk_gap_p50_ns", 0, kMaxNs);
    m.chunk_gap_p99_ns = r.integer("chunk_gap_p99_ns", 0, kMaxNs);
    m.chunk_gap_max_ns = r.integer("chunk_gap_max_ns", 0, kMaxNs);
    m.overhead_ns = r.integer("overhead_ns", 0, kMaxNs);
    m.relay_p50_ns = r.integer("relay_p50_ns", 0, kMaxNs);
    m.relay_max_ns = r.integer("relay_max_ns", 0, kMaxNs);
    if (r.error()) return Error(Errc::bad_request, *r.error());

    // Timestamps must be in the order metrics.md defines them (skipping the absent ones).
    const auto& t = m.t;
    const std::array<std::optional<std::int64_t>, 5> chain{t.headers, t.first_chunk, t.first_token,
                                                           t.last_token, t.done};
    std::int64_t latest = 0;
    bool ordered = true;
    for (const auto& stamp : chain) {
        if (!stamp) continue;
        ordered = ordered && *stamp >= latest;
        latest = *stamp;
    }
    if (t.first_answer) {
        ordered = ordered && t.first_token && *t.first_answer >= *t.first_token &&
                  (!t.last_token || *t.first_answer <= *t.last_token) &&
                  (!t.done || *t.first_answer <= *t.done);
    }
    if (!ordered) {
        return Error(Errc::bad_request,
                     "timestamps: expected 0 <= headers <= first_chunk <= first_token <= "
                     "first_answer <= last_token <= done");
    }
    if (m.cached_prompt_tokens && m.prompt_tokens && *m.cached_prompt_tokens > *m.prompt_tokens) {
        return Error(Errc::bad_request, "cached_prompt_tokens: expected at most prompt_tokens");
    }
    return m;
}

}  // namespace tokenradar

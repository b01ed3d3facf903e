#include <tokenradar/observatory/http_api.hpp>

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/error.hpp>
#include <tokenradar/net/api_keys.hpp>
#include <tokenradar/observatory/badge.hpp>
#include <tokenradar/observatory/ingest.hpp>
#include <tokenradar/observatory/label_budget.hpp>
#include <tokenradar/observatory/query_api.hpp>
#include <tokenradar/observatory/rate_limiter.hpp>
#include <tokenradar/store/batch_writer.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <future>
#include <optional>
#include <variant>

namespace tokenradar::observatory {
namespace {

namespace http = net::beast::http;
using net::asio::awaitable;

constexpr std::string_view kPrefix = "/api/v1/";
constexpr std::string_view kBadgePrefix = "/badge/";
constexpr std::string_view kMeasurements = "/api/v1/measurements";
// Queries and ingestion share these; two keep one slow answer from holding up the rest
// without taking more than this 2-core machine's share from the relay thread.
constexpr int kWorkers = 2;

struct Answer {
    int status = 200;
    std::string body;
    net::HeaderList headers;
    std::string content_type = "application/json";
};

// A read answer's status, body and headers (ETag, Cache-Control, a CSV's file name).
Answer answer_of(ApiResponse r) {
    Answer a{r.status, std::move(r.body), {}, std::move(r.content_type)};
    if (!r.etag.empty()) a.headers.emplace_back("etag", std::move(r.etag));
    if (!r.cache_control.empty()) a.headers.emplace_back("cache-control", r.cache_control);
    if (!r.filename.empty()) {
        a.headers.emplace_back("content-disposition",
                               fmt::format("attachment; filename=\"{}\"", r.filename));
    }
    return a;
}

Answer error_answer(Errc code, std::string_view message, net::HeaderList headers = {}) {
    headers.emplace_back("cache-control", "no-store");
    if (code == Errc::unauthorized) headers.emplace_back("www-authenticate", net::kBearerChallenge);
    return {http_status(code), openai_error_body(code, message), std::move(headers)};
}

Answer error_answer(const Error& e) {
    return error_answer(static_cast<Errc>(e.code.value()), e.message);
}

std::string_view header(const net::Request& request, http::field field) {
    const auto it = request.find(field);
    return it == request.end() ? std::string_view{} : std::string_view(it->value());
}

// The media type without parameters, lowercased ("application/x-ndjson").
std::string media_type(std::string_view value) {
    std::string out(value.substr(0, value.find(';')));
    while (!out.empty() && out.back() == ' ') out.pop_back();
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

}  // namespace

struct HttpApi::Impl {
    Impl(ObservatoryConfig c, std::shared_ptr<const RollupIndex> i)
        : config(std::move(c)),
          index(std::move(i)),
          queries(*index, QueryApiOptions{.min_samples = config.min_samples,
                                          .cache_ttl = config.cache_ttl}),
          badges(queries),
          limiter(RateLimiterOptions{.rate = config.public_rate, .burst = config.public_burst}),
          budget(index, config.label_budget) {}

    const ObservatoryConfig config;
    const std::shared_ptr<const RollupIndex> index;
    QueryApi queries;
    BadgeApi badges;  // GET /badge/...: read through `queries`
    RateLimiter limiter;
    LabelBudget budget;  // new label values and cells from submissions (label_budget.hpp)
    std::atomic<store::BatchWriter*> writer{nullptr};
    std::function<bool()> loaded;  // set before the server starts; empty = always
    std::vector<std::pair<std::string, HttpApi::ExtraRoute>> routes;  // add_route(), likewise
    net::asio::thread_pool workers{kWorkers};
    // Waits for the store's commits of ingested records, so the workers parse the next body
    // (or answer a query) meanwhile. One thread is enough: the writer commits submissions in
    // the order they came.
    net::asio::thread_pool committer{1};

    // Ingestion counters (relaxed: each exact, the set not one snapshot).
    std::atomic<std::uint64_t> requests_ok{0}, requests_refused{0}, records_accepted{0},
        records_duplicate{0}, records_rejected{0};
};

namespace {

struct IngestJob {
    std::string body;
    bool gzip = false;
    BodyFormat format = BodyFormat::json_array;
    IngestContext context;
};

// On a worker thread: the answer of a GET.
awaitable<Answer> run_query(std::shared_ptr<HttpApi::Impl> impl, std::string target,
                            std::string if_none_match) {
    co_return answer_of(impl->queries.get(target, if_none_match, wall_now_us()));
}

// On a worker thread: a badge not in the badge cache.
awaitable<Answer> run_badge(std::shared_ptr<HttpApi::Impl> impl, std::string target,
                            std::string if_none_match) {
    co_return answer_of(impl->badges.get(target, if_none_match, wall_now_us()));
}

// What a worker hands on after parsing: the answer already (an error, or nothing to store),
// or the store's pending commit and what the answer needs besides its flags.
struct Submitted {
    std::optional<Answer> answer;
    std::future<Result<std::vector<bool>>> pending;
    std::size_t duplicates = 0;
    std::vector<RecordError> errors;
};

Answer outcome_answer(HttpApi::Impl& impl, std::size_t stored, std::size_t duplicates,
                      const std::vector<RecordError>& errors) {
    impl.records_accepted.fetch_add(stored, std::memory_order_relaxed);
    impl.records_duplicate.fetch_add(duplicates, std::memory_order_relaxed);
    impl.records_rejected.fetch_add(errors.size(), std::memory_order_relaxed);
    return Answer{200,
                  boost::json::serialize(outcome_json(stored, duplicates, errors)),
                  {{"cache-control", "no-store"}}};
}

// On a worker thread: gunzip, parse and validate, then hand the records to the store's writer.
awaitable<Submitted> parse_and_submit(std::shared_ptr<HttpApi::Impl> impl, IngestJob job) {
    Submitted out;
    std::string inflated;
    std::string_view body = job.body;
    if (job.gzip) {
        auto unzipped = gunzip(job.body, impl->config.max_body_bytes);
        if (!unzipped) {
            out.answer = error_answer(unzipped.error());
            co_return out;
        }
        inflated = std::move(*unzipped);
        body = inflated;
    }
    auto submission = parse_submission(body, job.format, job.context);
    if (!submission) {
        out.answer = error_answer(submission.error());
        co_return out;
    }
    // After the whole body parsed: a body refused at its end spends no budget.
    impl->budget.apply(*submission, job.context.submitter, job.context.client_region,
                       job.context.now_us);
    out.duplicates = submission->duplicates;
    out.errors = std::move(submission->errors);
    if (submission->records.empty()) {
        out.answer = outcome_answer(*impl, 0, out.duplicates, out.errors);
        co_return out;
    }
    store::BatchWriter* writer = impl->writer.load(std::memory_order_acquire);
    if (writer == nullptr) {
        out.answer =
            error_answer(Errc::overloaded, "measurements: this server has no store to ingest into");
        co_return out;
    }
    out.pending = writer->submit(std::move(submission->records));
    co_return out;
}

// On the commit thread: waits for the store's commit (blocking that thread, never a worker or
// the I/O thread) and answers how many records were stored.
awaitable<Answer> await_commit(std::shared_ptr<HttpApi::Impl> impl, Submitted submitted) {
    auto flags = submitted.pending.get();
    if (!flags) {
        co_return error_answer(Errc::overloaded,
                               fmt::format("measurements: {}", flags.error().message),
                               {{"retry-after", "1"}});
    }
    std::size_t stored = 0;
    std::size_t duplicates = submitted.duplicates;
    for (bool new_record : *flags) new_record ? ++stored : ++duplicates;
    co_return outcome_answer(*impl, stored, duplicates, submitted.errors);
}

// The submitter's address: the peer's, or behind a trusted reverse proxy the client its
// X-Forwarded-For names (net/forwarded.hpp).
std::string client_address(const HttpApi::Impl& impl, const net::Request& request,
                           const net::ResponseWriter& writer) {
    std::string peer = writer.remote_address();
    if (impl.config.trusted_proxies.empty()) return peer;
    std::string forwarded_for;
    const auto [first, last] = request.equal_range("x-forwarded-for");
    for (auto field = first; field != last; ++field) {
        if (!forwarded_for.empty()) forwarded_for += ',';
        forwarded_for.append(field->value().data(), field->value().size());
    }
    return impl.config.trusted_proxies.client_address(peer, forwarded_for);
}

// Who submits: an ingest key's name, or (public mode, no key) the client's address, which is
// then rate-limited. An error answer when neither is allowed.
std::variant<std::string, Answer> submitter(HttpApi::Impl& impl, const net::Request& request,
                                            const std::string& address) {
    const ObservatoryConfig& c = impl.config;
    if (c.ingest == IngestMode::off) {
        return error_answer(Errc::not_found,
                            "measurements: ingestion is off on this server ([observatory] ingest)");
    }
    const std::string_view authorization = header(request, http::field::authorization);
    if (!authorization.empty()) {
        if (auto key = net::find_bearer_key(authorization, c.ingest_keys)) {
            return "key:" + c.ingest_keys[*key].name;
        }
        return error_answer(Errc::unauthorized, "measurements: unknown ingest key");
    }
    if (c.ingest == IngestMode::keys) {
        return error_answer(Errc::unauthorized,
                            "measurements: expected Authorization: Bearer <ingest key>");
    }
    const RateDecision d = impl.limiter.try_acquire(address, std::chrono::steady_clock::now());
    if (!d.allowed) {
        return error_answer(
            Errc::rate_limited,
            fmt::format("measurements: at most {} requests/s from one address", c.public_rate),
            {{"retry-after", std::to_string(d.retry_after.count())}});
    }
    return "ip:" + address;
}

awaitable<Answer> ingest(std::shared_ptr<HttpApi::Impl> impl, net::Request& request,
                         net::ResponseWriter& writer) {
    const std::string address = client_address(*impl, request, writer);
    auto who = submitter(*impl, request, address);
    if (auto* refused = std::get_if<Answer>(&who)) {
        impl->requests_refused.fetch_add(1, std::memory_order_relaxed);
        co_return std::move(*refused);
    }
    IngestJob job;
    job.context.now_us = wall_now_us();
    job.context.submitter = std::get<std::string>(std::move(who));
    if (job.context.submitter.starts_with("key:")) {
        const std::string_view name = std::string_view(job.context.submitter).substr(4);
        const auto& trusted = impl->config.gateway_keys;
        job.context.trusted_source =
            std::find(trusted.begin(), trusted.end(), name) != trusted.end();
    }
    job.context.limits.max_records = impl->config.max_records;
    // Records that carry a client_region keep theirs.
    if (const auto& geoip = impl->config.geoip) {
        job.context.client_region = geoip->region_of(address);
    }
    const std::string encoding = media_type(header(request, http::field::content_encoding));
    if (encoding == "gzip") {
        job.gzip = true;
    } else if (!encoding.empty() && encoding != "identity") {
        co_return error_answer(
            Errc::bad_request,
            fmt::format("content-encoding: expected gzip or none, got '{}'", encoding));
    }
    const std::string type = media_type(header(request, http::field::content_type));
    if (type == "application/x-ndjson" || type == "application/jsonl") {
        job.format = BodyFormat::ndjson;
    } else if (!type.empty() && type != "application/json") {
        co_return error_answer(Errc::bad_request,
                               fmt::format("content-type: expected application/json or "
                                           "application/x-ndjson, got '{}'",
                                           type));
    }
    if (request.body().size() > impl->config.max_body_bytes) {
        co_return error_answer(
            Errc::payload_too_large,
            fmt::format("body: expected at most {} bytes", impl->config.max_body_bytes));
    }
    job.body = std::move(request.body());
    auto task = parse_and_submit(impl, std::move(job));
    Submitted submitted =
        co_await net::asio::co_spawn(impl->workers, std::move(task), net::asio::use_awaitable);
    Answer answer;
    if (submitted.answer) {
        answer = std::move(*submitted.answer);
    } else {
        auto wait = await_commit(impl, std::move(submitted));
        answer = co_await net::asio::co_spawn(impl->committer, std::move(wait),
                                              net::asio::use_awaitable);
    }
    auto& counter = answer.status == 200 ? impl->requests_ok : impl->requests_refused;
    counter.fetch_add(1, std::memory_order_relaxed);
    co_return answer;
}

awaitable<void> send(net::ResponseWriter& writer, Answer answer) {
    answer.headers.emplace_back(net::HeaderName::constant("x-content-type-options"), "nosniff");
    co_await writer.send(static_cast<http::status>(answer.status), answer.content_type,
                         std::move(answer.body), answer.headers);
}

}  // namespace

HttpApi::HttpApi(ObservatoryConfig config, std::shared_ptr<const RollupIndex> index)
    : impl_(std::make_shared<Impl>(std::move(config), std::move(index))) {}

HttpApi::~HttpApi() { stop(); }

void HttpApi::attach_writer(store::BatchWriter* writer) {
    impl_->writer.store(writer, std::memory_order_release);
}

void HttpApi::attach_readiness(std::function<bool()> loaded) { impl_->loaded = std::move(loaded); }

void HttpApi::attach_incidents(const IncidentMonitor* monitor, StatusJudgement judgement) {
    impl_->queries.attach_incidents(monitor, judgement);
}

void HttpApi::add_route(std::string path, ExtraRoute route) {
    impl_->routes.emplace_back(std::move(path), std::move(route));
}

void HttpApi::stop() {
    impl_->workers.join();
    impl_->committer.join();
}

std::optional<net::HeadVerdict> HttpApi::check_head(const net::Request& head,
                                                    std::size_t default_limit) const {
    const std::string_view target = head.target();
    const std::string_view path = target.substr(0, target.find('?'));
    if (path.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
    const ObservatoryConfig& c = impl_->config;
    if (path != kMeasurements || c.ingest == IngestMode::off)
        return net::HeadVerdict{default_limit, {}, {}};
    const std::string_view authorization = header(head, http::field::authorization);
    const auto refuse = [](std::string message) {
        return net::HeadVerdict{0,
                                Error(Errc::unauthorized, std::move(message)),
                                {{"www-authenticate", std::string(net::kBearerChallenge)}}};
    };
    if (!authorization.empty() && !net::find_bearer_key(authorization, c.ingest_keys)) {
        return refuse("measurements: unknown ingest key");
    }
    if (authorization.empty() && c.ingest == IngestMode::keys) {
        return refuse("measurements: expected Authorization: Bearer <ingest key>");
    }
    return net::HeadVerdict{c.max_body_bytes, {}, {}};
}

awaitable<bool> HttpApi::handle(net::Request& request, net::ResponseWriter& writer) {
    const std::string_view target = request.target();
    const std::string_view path = target.substr(0, target.find('?'));
    const bool badge = path.starts_with(kBadgePrefix);
    if (!badge && !path.starts_with(kPrefix)) co_return false;
    const auto method = request.method();
    Answer answer;
    if (path == kMeasurements) {
        if (method != http::verb::post) {
            answer = error_answer(Errc::method_not_allowed, "measurements: use POST");
            answer.headers.emplace_back("allow", "POST");
        } else {
            answer = co_await ingest(impl_, request, writer);
        }
    } else if (!impl_->config.enabled) {
        answer = error_answer(Errc::not_found,
                              "the observatory API is off on this server ([observatory] enabled)");
    } else if (method != http::verb::get && method != http::verb::head) {
        answer = error_answer(Errc::method_not_allowed, "use GET");
        answer.headers.emplace_back("allow", "GET, HEAD");
    } else if (impl_->loaded && !impl_->loaded()) {
        answer = error_answer(Errc::overloaded,
                              "the observatory is still loading its rollups from the store",
                              {{"retry-after", "1"}});
    } else if (badge) {
        const std::string if_none_match(header(request, http::field::if_none_match));
        // A badge fetched again is a map lookup on this thread; only a new one goes to a
        // worker.
        if (auto hit = impl_->badges.cached(target, if_none_match, wall_now_us())) {
            answer = answer_of(std::move(*hit));
        } else {
            auto task = run_badge(impl_, std::string(target), if_none_match);
            answer = co_await net::asio::co_spawn(impl_->workers, std::move(task),
                                                  net::asio::use_awaitable);
        }
    } else if (const auto route = std::find_if(impl_->routes.begin(), impl_->routes.end(),
                                               [path](const auto& r) { return r.first == path; });
               route != impl_->routes.end()) {
        answer = answer_of(route->second(target, wall_now_us()));
    } else {
        auto task = run_query(impl_, std::string(target),
                              std::string(header(request, http::field::if_none_match)));
        answer =
            co_await net::asio::co_spawn(impl_->workers, std::move(task), net::asio::use_awaitable);
    }
    co_await send(writer, std::move(answer));
    co_return true;
}

std::optional<ApiResponse> HttpApi::query(std::string_view target, std::int64_t now_us) const {
    if (impl_->loaded && !impl_->loaded()) return std::nullopt;
    return impl_->queries.get(target, "", now_us);
}

std::string HttpApi::client_region(const net::Request& request,
                                   const net::ResponseWriter& writer) const {
    const auto& geoip = impl_->config.geoip;
    return geoip ? geoip->region_of(client_address(*impl_, request, writer)) : std::string();
}

void HttpApi::metrics(PrometheusText& out) const {
    const Impl& i = *impl_;
    constexpr auto kRelaxed = std::memory_order_relaxed;
    constexpr std::string_view kRequests = "tokenradar_ingest_requests_total";
    out.family(kRequests, MetricType::counter, "POST /api/v1/measurements by outcome.");
    out.sample(kRequests, {{"outcome", "ok"}}, i.requests_ok.load(kRelaxed));
    out.sample(kRequests, {{"outcome", "refused"}}, i.requests_refused.load(kRelaxed));
    constexpr std::string_view kRecords = "tokenradar_ingest_records_total";
    out.family(kRecords, MetricType::counter, "Submitted records by outcome.");
    out.sample(kRecords, {{"outcome", "accepted"}}, i.records_accepted.load(kRelaxed));
    out.sample(kRecords, {{"outcome", "duplicate"}}, i.records_duplicate.load(kRelaxed));
    out.sample(kRecords, {{"outcome", "rejected"}}, i.records_rejected.load(kRelaxed));
    constexpr std::string_view kBudget = "tokenradar_ingest_label_budget_rejected_total";
    out.family(kBudget, MetricType::counter,
               "Submitted records rejected for new label values or combinations over "
               "[observatory] max_*label_* (also in rejected).");
    out.sample(kBudget, i.budget.rejected());
    constexpr std::string_view kGeneration = "tokenradar_rollup_generation";
    out.family(kGeneration, MetricType::counter, "Changes of the observatory's rollups.");
    out.sample(kGeneration, i.index->generation());
}

}  // namespace tokenradar::observatory

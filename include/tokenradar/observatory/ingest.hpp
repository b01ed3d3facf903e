#pragma once
// Ingestion of submitted measurements (POST /api/v1/measurements, docs/observatory-api.md):
// the sans-IO half. The HTTP handler reads the body, calls gunzip() when it is
// gzip-encoded, parse_submission() to get validated records and per-record errors, hands
// the records to the store (which drops cross-submission duplicates) and answers with
// outcome_json(). Nothing here does I/O, blocks or keeps state between calls; every
// function is safe to call from any thread.
//
//     auto body = gunzip(raw, 64 << 20);                      // if content-encoding: gzip
//     auto sub = parse_submission(*body, BodyFormat::ndjson, {.now_us = now, .submitter = key});
//     if (!sub) -> http_status(sub.error().code), openai_error_body(...)
//     store.insert(sub->records) ...; outcome_json(accepted, duplicates, sub->errors)
//
// Whose records they are: every accepted record gets `client_id = ctx.submitter` (the
// ingest key's name, or the client IP in public mode); a `client_id` in the record is
// ignored. The submitter, not the record, decides, so one submitter cannot split itself into
// many clients to dodge per-client weighting (rollup.hpp) nor collide with another
// submitter's request ids in the store's (client_id, request_id, attempt) identity.

#include <tokenradar/core/error.hpp>
#include <tokenradar/core/measurement.hpp>

#include <boost/json/object.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::observatory {

// Inflates a gzip body (RFC 1952; zlib data without the gzip wrapper is refused).
// Concatenated gzip members are accepted and their outputs joined, as gzip -d does; bytes
// after the last member that do not start another member are an error.
// Errors: more than `max_output` bytes of output -> Errc::payload_too_large (413), found
// without inflating more than max_output + 1 bytes (a gzip bomb costs at most that);
// empty, truncated or corrupt input -> Errc::bad_request "body: expected gzip data, ...".
Result<std::string> gunzip(std::string_view gz, std::size_t max_output);

// The submitter's side: `data` as one gzip member (zlib `level` -1 = default, 0..9; data
// under 4 GiB). Throws std::bad_alloc when zlib cannot allocate.
std::string gzip(std::string_view data, int level = -1);

enum class BodyFormat {
    json_array,  // [ {...}, {...} ]
    ndjson,      // one record per line; blank lines and CR before LF are allowed
};

struct IngestLimits {
    std::size_t max_records = 10'000;  // more in one body: Errc::payload_too_large
    std::size_t max_request_id_bytes = 128;
    // ts_us must lie in [now - max_age, now + max_clock_skew].
    std::chrono::microseconds max_clock_skew = std::chrono::minutes(5);
    std::chrono::microseconds max_age = std::chrono::hours(24 * 7);
};

struct IngestContext {
    std::int64_t now_us = 0;  // the server's wall clock, UTC microseconds: stamps received_us
    std::string submitter;    // becomes every record's client_id (see the top of this file)
    // Used for records that carry no client_region (e.g. from a GeoIP lookup of the
    // submitter's address); empty leaves them empty.
    std::string client_region;
    // Whether records may say they are this node's own: `source` "gateway" (the /gateway page
    // counts those) or "sim" (the demo's history). False, the default: such a record's source
    // becomes "submitted", so no submitter can change what the gateway page says. True for
    // the ingest keys listed in [observatory] gateway_keys (gateways forwarding their records).
    bool trusted_source = false;
    IngestLimits limits;
};

// One rejected record: `index` is its position among the submission's records (0-based;
// in NDJSON blank lines do not count), `field` the JSON key at fault ("record" when it is
// not an object, "timestamps" for their order), `message` what was expected
// ("expected an integer from 1 to 100").
struct RecordError {
    std::size_t index = 0;
    std::string field;
    std::string message;

    friend bool operator==(const RecordError&, const RecordError&) = default;
};

struct Submission {
    std::vector<Measurement> records;  // accepted, in submission order, stamped
    std::vector<std::size_t> indexes;  // indexes[i]: position of records[i] in the submission
    std::vector<RecordError> errors;   // rejected records, in submission order
    // Valid records dropped because an earlier record of this submission had the same
    // (request_id, attempt); the first one is kept.
    std::size_t duplicates = 0;
    std::size_t total = 0;  // records in the body: records + errors + duplicates
};

// Parses and validates a submission. Per-record problems are RecordErrors; the whole body
// is an Error only when it cannot be split into records: not a JSON array / not NDJSON, a
// record that is not JSON (naming its line and column), Errc::bad_request; more than
// ctx.limits.max_records records, Errc::payload_too_large (found before parsing the extra
// record).
//
// A record is accepted when measurement_from_json() accepts it and: provider and model are
// non-empty; provider, model, endpoint, task, upstream_region and client_region pass
// check_label_value(); request_id has at most max_request_id_bytes; ts_us is within
// [now - max_age, now + max_clock_skew]. Accepted records get received_us = ctx.now_us,
// client_id = ctx.submitter, source "submitted" when empty (or "gateway" / "sim" without
// ctx.trusted_source; "bench" and "submitted" stay), no client_key without ctx.trusted_source,
// and ctx.client_region when they had none.
Result<Submission> parse_submission(std::string_view body, BodyFormat format,
                                    const IngestContext& ctx);

// What a submitter learns from the answers to its requests.
struct SubmitOutcome {
    std::size_t accepted = 0;
    std::size_t duplicates = 0;
    std::size_t rejected = 0;
    std::vector<std::string> errors;  // the first few per-record errors, "record N: field: message"
};

// Adds one answer of outcome_json's shape (from the network: anything may arrive) to `out`;
// `first_index` is the submission index of the batch's first record. Errc::protocol_error
// when the body is not such an answer.
Result<void> add_outcome(SubmitOutcome& out, std::string_view answer, std::size_t first_index);

inline constexpr std::size_t kMaxReportedErrors = 100;

// The documented answer: {"accepted": N, "duplicates": N, "rejected": N, "errors": [{"index",
// "field", "message"}...]} with at most `max_errors` errors listed and, when some were left
// out, "more_errors": how many. `duplicates` is the caller's total (in-submission plus those
// the store already had); `rejected` is errors.size().
boost::json::object outcome_json(std::size_t accepted, std::size_t duplicates,
                                 std::span<const RecordError> errors,
                                 std::size_t max_errors = kMaxReportedErrors);

}  // namespace tokenradar::observatory

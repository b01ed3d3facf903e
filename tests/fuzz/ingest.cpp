// Observatory ingestion over arbitrary bytes: the first byte picks the path (JSON array,
// NDJSON, or either after gunzip), the rest is the body. Whatever parse_submission()
// accepts must hold together: every record counted once, indexes in order, every accepted
// record stamped with the submitter and the server's clock, valid labels, a ts_us inside the
// window, and a to_json round trip that measurement_from_json() reads back equal. gunzip()
// must honour its output bound. No record may keep source "gateway" or "sim" (the context is
// not trusted), and a LabelBudget applied after parsing keeps those invariants. A first byte of
// 0xFF feeds add_outcome() instead (the submitter's reading of an answer).

#include <tokenradar/observatory/cell.hpp>
#include <tokenradar/observatory/ingest.hpp>
#include <tokenradar/observatory/label_budget.hpp>
#include <tokenradar/observatory/rollup.hpp>

#include <boost/json/serialize.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

namespace {

using namespace tokenradar;
using namespace tokenradar::observatory;

void check(bool ok) {
    if (!ok) std::abort();
}

void check_submission(const Submission& s, const IngestContext& ctx) {
    check(s.records.size() == s.indexes.size());
    check(s.records.size() + s.errors.size() + s.duplicates == s.total);
    check(s.total <= ctx.limits.max_records);
    for (std::size_t i = 0; i < s.indexes.size(); ++i) {
        check(s.indexes[i] < s.total && (i == 0 || s.indexes[i - 1] < s.indexes[i]));
    }
    for (std::size_t i = 0; i < s.errors.size(); ++i) {
        check(s.errors[i].index < s.total && (i == 0 || s.errors[i - 1].index < s.errors[i].index));
        check(!s.errors[i].field.empty() && !s.errors[i].message.empty());
    }
    for (const Measurement& m : s.records) {
        check(m.client_id == ctx.submitter && m.received_us == ctx.now_us);
        check(!m.labels.provider.empty() && !m.labels.model.empty() && !m.labels.source.empty());
        check(m.labels.source != "gateway" && m.labels.source != "sim");
        check(m.request_id.size() <= ctx.limits.max_request_id_bytes);
        check(m.ts_us >= ctx.now_us - ctx.limits.max_age.count() &&
              m.ts_us <= ctx.now_us + ctx.limits.max_clock_skew.count());
        for (const std::string* label :
             {&m.labels.provider, &m.labels.model, &m.labels.endpoint, &m.labels.task,
              &m.labels.upstream_region, &m.labels.client_region}) {
            check(bool(check_label_value("label", *label)));
        }
        auto again = measurement_from_json(to_json(m));
        check(bool(again));
        again->received_us = m.received_us;  // the server's stamp is never read from a record
        check(*again == m);
    }
    // The answer must serialise (labels are in messages only as field names).
    (void)boost::json::serialize(outcome_json(s.records.size(), s.duplicates, s.errors, 3));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    static const IngestContext kContext = [] {
        IngestContext ctx;
        ctx.now_us = 1'780'000'000'000'000;
        ctx.submitter = "fuzz";
        ctx.limits.max_records = 64;  // small, so the 413 path is reachable
        return ctx;
    }();
    constexpr std::size_t kMaxGunzip = 256 * 1024;
    if (data[0] == 0xFF) {  // an observatory's answer, as bench --submit reads it
        SubmitOutcome outcome;
        const std::string_view answer(reinterpret_cast<const char*>(data + 1), size - 1);
        if (add_outcome(outcome, answer, 5'000)) check(outcome.errors.size() <= 20);
        return 0;
    }
    const unsigned mode = data[0] % 4;
    const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
    std::string inflated;
    std::string_view body = input;
    if (mode >= 2) {
        auto out = gunzip(input, kMaxGunzip);
        if (!out) return 0;
        check(out->size() <= kMaxGunzip);
        inflated = std::move(*out);
        body = inflated;
    }
    const BodyFormat format = mode % 2 == 0 ? BodyFormat::json_array : BodyFormat::ndjson;
    auto sub = parse_submission(body, format, kContext);
    if (!sub) return 0;
    check_submission(*sub, kContext);
    // Small budgets, kept across inputs (as a server keeps them), so both limits are reached.
    static const auto index = std::make_shared<RollupIndex>();
    static LabelBudget budget(index, {.new_values_per_submitter = 3,
                                      .max_values = 8,
                                      .new_cells_per_submitter = 5,
                                      .max_cells = 12});
    budget.apply(*sub, kContext.submitter, "", kContext.now_us);
    check_submission(*sub, kContext);
    index->add(sub->records);
    return 0;
}

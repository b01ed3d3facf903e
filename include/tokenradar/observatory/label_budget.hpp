#pragma once
// How many new label values and label cells (combinations) submitted records may bring into
// the observatory. Every distinct value is a leaderboard row, a filter-menu entry and, with
// the other labels, rollup cells in every bucket: 100,000 unique model names in ten public
// submissions took a server to 1 GB RSS and a 52 MB leaderboard. So a record whose
// provider, model, task, upstream_region or client_region the index does not know yet, or
// whose combination of labels (its cell, cell.hpp) it does not know yet, is accepted only
// within two budgets per label and two for cells:
//
// - per submitter (client id: the ingest key or the client IP) and UTC day: at most
//   `new_values_per_submitter` new values of each label, `new_cells_per_submitter` new cells;
// - in total: the index holds at most `max_values` distinct values of each label and
//   `max_cells` cells (counting those from the gateway's own records, which are never
//   refused: they do not come through here).
//
// Over a budget the record is rejected with a per-record error naming the label ("model") or
// "labels" for a combination; the rest of the submission is stored. Rejected rather than
// folded into "other": a submitter learns why and can resubmit later, and no "other" row mixes
// unrelated models into one percentile. Known values are always accepted, as is an empty
// value ("unknown") and the client_region the server itself stamped (GeoIP).
//
// Memory: the values and cells admitted but not yet seen in the index (at most the totals,
// and dropped once the index has them) and one small counter per submitter that added
// something today (reset each day; each counts at least one admitted value or cell, so there
// are at most as many as the totals allow).
//
// Threads: apply() from any thread (one mutex; it reads the index under its shared lock).

#include <tokenradar/observatory/ingest.hpp>
#include <tokenradar/observatory/rollup.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace tokenradar::observatory {

struct LabelBudgetOptions {
    std::size_t new_values_per_submitter = 50;    // per label per UTC day
    std::size_t max_values = 1'000;               // per label
    std::size_t new_cells_per_submitter = 1'000;  // per UTC day
    std::size_t max_cells = 20'000;
};

class LabelBudget {
  public:
    explicit LabelBudget(std::shared_ptr<const RollupIndex> index, LabelBudgetOptions options = {});
    ~LabelBudget();
    LabelBudget(const LabelBudget&) = delete;
    LabelBudget& operator=(const LabelBudget&) = delete;

    // Moves the records of `sub` that would go over a budget into `sub.errors` (kept in index
    // order; `total` and `duplicates` unchanged) and counts what the others add against
    // `submitter`'s budget for the UTC day of `now_us`. `server_region`: the client_region the
    // server stamped (GeoIP), never counted.
    void apply(Submission& sub, std::string_view submitter, std::string_view server_region,
               std::int64_t now_us);

    // Records apply() has rejected since the start (a metric: the operator sees a budget bite).
    [[nodiscard]] std::uint64_t rejected() const noexcept;

    struct State;

  private:
    std::unique_ptr<State> state_;
};

}  // namespace tokenradar::observatory

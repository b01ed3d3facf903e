#include <tokenradar/observatory/label_budget.hpp>

#include <tokenradar/observatory/cell.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <functional>
#include <iterator>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tokenradar::observatory {
namespace {

// The cell labels whose values come from the submitter's text (any text, in the label
// table), in cell order. The others have a closed set of values (measurement_from_json
// checks them); endpoint is not a rollup label.
constexpr std::size_t kBudgetedCount = [] {
    std::size_t n = 0;
    for (Label l : kCellLabels) n += label_info(l).values.empty() ? 1 : 0;
    return n;
}();
constexpr std::array<Label, kBudgetedCount> kBudgeted = [] {
    std::array<Label, kBudgetedCount> out{};
    std::size_t n = 0;
    for (Label l : kCellLabels) {
        if (label_info(l).values.empty()) out[n++] = l;
    }
    return out;
}();
constexpr std::size_t kClientRegion = [] {
    for (std::size_t i = 0; i < kBudgeted.size(); ++i) {
        if (kBudgeted[i] == Label::client_region) return i;
    }
    return kBudgeted.size();
}();
static_assert(kClientRegion < kBudgeted.size(), "client_region is filled in by the server");

std::string_view value_of(const Labels& l, std::size_t i) noexcept {
    return label_value(l, kBudgeted[i]);
}

struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
        return std::hash<std::string_view>{}(s);
    }
};
using StringSet = std::unordered_set<std::string, StringHash, std::equal_to<>>;

struct CellHash {
    std::size_t operator()(const CellKey& k) const noexcept {
        std::size_t h = 1;
        for (const std::string& v : k.values)
            h = h * 0x100000001b3ULL ^ std::hash<std::string_view>{}(v);
        return h;
    }
};

Labels labels_of(const CellKey& k) {
    Labels l;
    for (std::size_t i = 0; i < kCellLabelCount; ++i) {
        // A cell's values came from checked records, so they are values of their labels (one
        // that is not stays unset: has_cell() then says no, which only costs a recount).
        (void)set_label(l, kCellLabels[i], k.values[i]);
    }
    return l;
}

bool same_cell(const Labels& a, const Labels& b) noexcept {
    for (Label label : kCellLabels) {
        if (label_value(a, label) != label_value(b, label)) return false;
    }
    return true;
}

// Removes the records not kept and merges their errors into sub.errors, by record index.
void drop_refused(Submission& sub, const std::vector<bool>& keep,
                  std::vector<RecordError> refused) {
    std::size_t out = 0;
    for (std::size_t r = 0; r < sub.records.size(); ++r) {
        if (!keep[r]) continue;
        if (out != r) {
            sub.records[out] = std::move(sub.records[r]);
            sub.indexes[out] = sub.indexes[r];
        }
        ++out;
    }
    sub.records.resize(out);
    sub.indexes.resize(out);
    std::vector<RecordError> errors;
    errors.reserve(sub.errors.size() + refused.size());
    std::merge(std::make_move_iterator(sub.errors.begin()),
               std::make_move_iterator(sub.errors.end()), std::make_move_iterator(refused.begin()),
               std::make_move_iterator(refused.end()), std::back_inserter(errors),
               [](const RecordError& a, const RecordError& b) { return a.index < b.index; });
    sub.errors = std::move(errors);
}

}  // namespace

struct LabelBudget::State {
    State(std::shared_ptr<const RollupIndex> i, LabelBudgetOptions o)
        : index(std::move(i)), options(o) {}

    struct Spent {
        std::array<std::size_t, kBudgeted.size()> values{};
        std::size_t cells = 0;
    };

    // Distinct values (cells) in the index and admitted here; admitted ones the index has
    // meanwhile are dropped first when the sum reaches the limit (it counts them twice).
    std::size_t values_total(std::size_t i) {
        const Label label = kBudgeted[i];
        StringSet& p = pending[i];
        if (index->value_count(label) + p.size() >= options.max_values) {
            std::erase_if(p, [&](const std::string& v) { return index->has_value(label, v); });
        }
        return index->value_count(label) + p.size();
    }
    std::size_t cells_total() {
        if (index->cell_count() + pending_cells.size() >= options.max_cells) {
            std::erase_if(pending_cells,
                          [&](const CellKey& k) { return index->has_cell(labels_of(k)); });
        }
        return index->cell_count() + pending_cells.size();
    }

    bool value_known(std::size_t i, std::string_view v) const {
        const StringSet& p = pending[i];
        return p.find(v) != p.end() || index->has_value(kBudgeted[i], v);
    }

    // What a record would add: values of budgeted labels and a cell nobody has yet.
    struct NewLabels {
        std::array<bool, kBudgeted.size()> values{};
        bool cell = false;
    };
    using LastValues = std::array<std::string_view, kBudgeted.size()>;

    // `last_value` holds, per label, the value last found known (or admitted), which answers
    // for the next record without a lookup.
    NewLabels new_labels(const Labels& l, std::string_view server_region,
                         LastValues& last_value) const {
        NewLabels fresh;
        bool any_new = false;
        for (std::size_t i = 0; i < kBudgeted.size(); ++i) {
            const std::string_view v = value_of(l, i);
            if (v.empty() || v == last_value[i]) continue;
            if (i == kClientRegion && v == server_region) continue;
            if (value_known(i, v)) {
                last_value[i] = v;
                continue;
            }
            fresh.values[i] = any_new = true;
        }
        fresh.cell = any_new || (!index->has_cell(l) &&
                                 pending_cells.find(CellKey::of(l)) == pending_cells.end());
        return fresh;
    }

    // Why admitting `fresh` would exceed a limit (the observatory's, or the submitter's for
    // today after `spent_today`), or nullopt.
    std::optional<RecordError> refusal(std::size_t record_index, const NewLabels& fresh,
                                       const Spent& spent_today) {
        for (std::size_t i = 0; i < kBudgeted.size(); ++i) {
            if (!fresh.values[i]) continue;
            const std::string_view name = label_name(kBudgeted[i]);
            if (values_total(i) >= options.max_values) {
                return RecordError{
                    record_index, std::string(name),
                    fmt::format("expected a value this observatory already has: it has {} "
                                "distinct {} values, the most it takes "
                                "([observatory] max_label_values)",
                                options.max_values, name)};
            }
            if (spent_today.values[i] >= options.new_values_per_submitter) {
                return RecordError{
                    record_index, std::string(name),
                    fmt::format("expected a value this observatory already has: this submitter "
                                "added {} new {} values today, the most it may add in a day "
                                "([observatory] max_new_label_values)",
                                options.new_values_per_submitter, name)};
            }
        }
        if (!fresh.cell) return std::nullopt;
        if (cells_total() >= options.max_cells) {
            return RecordError{record_index, "labels",
                               fmt::format("expected a combination of labels this observatory "
                                           "already has: it has {}, the most it takes "
                                           "([observatory] max_label_cells)",
                                           options.max_cells)};
        }
        if (spent_today.cells >= options.new_cells_per_submitter) {
            return RecordError{
                record_index, "labels",
                fmt::format("expected a combination of labels this observatory already "
                            "has: this submitter added {} new ones today, the most it may "
                            "add in a day ([observatory] max_new_label_cells)",
                            options.new_cells_per_submitter)};
        }
        return std::nullopt;
    }

    // Admits the new values and cell of `l`, charged to `spent_today`.
    void admit(const Labels& l, const NewLabels& fresh, Spent& spent_today,
               LastValues& last_value) {
        for (std::size_t i = 0; i < kBudgeted.size(); ++i) {
            if (!fresh.values[i]) continue;
            pending[i].emplace(value_of(l, i));
            ++spent_today.values[i];
            last_value[i] = value_of(l, i);
        }
        pending_cells.insert(CellKey::of(l));
        ++spent_today.cells;
    }

    const std::shared_ptr<const RollupIndex> index;
    const LabelBudgetOptions options;
    std::mutex mutex;
    std::int64_t day = std::numeric_limits<std::int64_t>::min();
    std::unordered_map<std::string, Spent, StringHash, std::equal_to<>> spent;  // today
    std::array<StringSet, kBudgeted.size()> pending;
    std::unordered_set<CellKey, CellHash> pending_cells;
    std::atomic<std::uint64_t> rejected{0};
};

LabelBudget::LabelBudget(std::shared_ptr<const RollupIndex> index, LabelBudgetOptions options)
    : state_(std::make_unique<State>(std::move(index), options)) {}

LabelBudget::~LabelBudget() = default;

std::uint64_t LabelBudget::rejected() const noexcept {
    return state_->rejected.load(std::memory_order_relaxed);
}

void LabelBudget::apply(Submission& sub, std::string_view submitter, std::string_view server_region,
                        std::int64_t now_us) {
    if (sub.records.empty()) return;
    State& s = *state_;
    std::lock_guard lock(s.mutex);
    const std::int64_t day = now_us >= 0 ? now_us / kDayUs : (now_us + 1) / kDayUs - 1;
    if (day != s.day) {
        s.day = day;
        s.spent.clear();
    }
    auto spent_it = s.spent.find(submitter);
    const State::Spent none;

    std::vector<RecordError> refused;
    std::vector<bool> keep(sub.records.size(), true);
    // Records come in runs of equal labels: the last record known to be fine answers for
    // the next one without a lookup.
    const Labels* last_ok = nullptr;
    State::LastValues last_value{};
    for (std::size_t r = 0; r < sub.records.size(); ++r) {
        const Labels& l = sub.records[r].labels;
        if (last_ok != nullptr && same_cell(*last_ok, l)) continue;
        const State::NewLabels fresh = s.new_labels(l, server_region, last_value);
        const State::Spent& spent = spent_it == s.spent.end() ? none : spent_it->second;
        if (auto error = s.refusal(sub.indexes[r], fresh, spent)) {
            keep[r] = false;
            refused.push_back(std::move(*error));
            continue;
        }
        if (fresh.cell) {
            if (spent_it == s.spent.end())
                spent_it = s.spent.try_emplace(std::string(submitter)).first;
            s.admit(l, fresh, spent_it->second, last_value);
        }
        last_ok = &l;
    }
    if (refused.empty()) return;
    s.rejected.fetch_add(refused.size(), std::memory_order_relaxed);
    drop_refused(sub, keep, std::move(refused));
}

}  // namespace tokenradar::observatory

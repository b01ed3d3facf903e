#include "label_sets.hpp"

#include <fmt/format.h>

#include <cstring>
#include <random>

namespace tokenradar::store {
namespace {

// Entries each cache keeps before it starts over: a gateway has a few dozen combinations;
// an observatory's submitters may bring many, and each costs one lookup after a start-over.
constexpr std::size_t kMaxCached = 4096;

// The label columns, kLabelTable's order, which bind() and labels_of() follow.
std::string label_columns() {
    std::string out;
    for (const LabelInfo& label : kLabelTable) {
        out += fmt::format("{}{}", out.empty() ? "" : ", ", label.name);
    }
    return out;
}

std::string find_sql() {
    std::string where;
    int i = 1;
    for (const LabelInfo& label : kLabelTable) {
        where += fmt::format("{}{} = ?{}", where.empty() ? "" : " AND ", label.name, i++);
    }
    return fmt::format("SELECT id FROM label_sets WHERE {}", where);
}

std::string add_sql() {
    std::string values;
    for (std::size_t i = 1; i <= kLabelCount; ++i) {
        values += fmt::format("{}?{}", i == 1 ? "" : ", ", i);
    }
    return fmt::format("INSERT INTO label_sets ({}) VALUES ({})", label_columns(), values);
}

}  // namespace

LabelSets::LabelSets(sqlite3* db, std::string path)
    : db_(db), path_(std::move(path)), seed_(std::random_device()() | 1ULL << 32U) {}

std::uint64_t LabelSets::hash(const Labels& labels) const noexcept {
    constexpr std::uint64_t kOdd = 0x9E3779B97F4A7C15ULL;  // 2^64 / golden ratio
    const auto mix = [](std::uint64_t h, std::uint64_t word) {
        h = (h ^ word) * kOdd;
        return h ^ (h >> 29U);
    };
    const auto load = [](const char* p, auto word) {
        std::memcpy(&word, p, sizeof word);
        return static_cast<std::uint64_t>(word);
    };
    std::uint64_t h = mix(seed_, static_cast<std::uint64_t>(labels.cache) |
                                     static_cast<std::uint64_t>(labels.route) << 8U |
                                     static_cast<std::uint64_t>(labels.stream) << 16U);
    for (const std::string* text :
         {&labels.provider, &labels.model, &labels.endpoint, &labels.upstream_region,
          &labels.client_region, &labels.task, &labels.source, &labels.api}) {
        // Two words that hold every byte (overlapping where the text is shorter than 16), as
        // wyhash reads short input; 8 bytes at a time before the last 8 of a longer one.
        const char* p = text->data();
        const std::size_t n = text->size();
        std::uint64_t first = 0;
        std::uint64_t last = 0;
        if (n >= 8) {
            std::size_t at = 0;
            for (; n - at > 16; at += 8) h = mix(h, load(p + at, std::uint64_t{}));
            first = load(p + at, std::uint64_t{});
            last = load(p + n - 8, std::uint64_t{});
        } else if (n >= 4) {
            first = load(p, std::uint32_t{});
            last = load(p + n - 4, std::uint32_t{});
        } else if (n > 0) {
            first = static_cast<unsigned char>(p[0]) | static_cast<unsigned char>(p[n / 2]) << 8U |
                    static_cast<unsigned char>(p[n - 1]) << 16U;
        }
        h = mix(mix(h ^ n, first), last);
    }
    return h;
}

Result<LabelSets> LabelSets::prepare(sqlite3* db, std::string path) {
    LabelSets sets(db, std::move(path));
    for (auto [slot, sql] :
         {std::pair{&sets.find_, find_sql()}, std::pair{&sets.add_, add_sql()},
          std::pair{&sets.read_,
                    fmt::format("SELECT {} FROM label_sets WHERE id = ?1", label_columns())}}) {
        auto prepared = store::prepare(db, sets.path_, sql);
        if (!prepared) return prepared.error();
        *slot = std::move(*prepared);
    }
    return sets;
}

void LabelSets::bind(sqlite3_stmt* s, const Labels& labels) const {
    int i = 1;
    for (const LabelInfo& label : kLabelTable) {
        if (label.label == Label::stream) {
            sqlite3_bind_int64(s, i++, labels.stream ? 1 : 0);
        } else {
            const std::string_view v = label_value(labels, label.label);
            // SQLITE_STATIC: `labels` outlives the statement's step.
            sqlite3_bind_text(s, i++, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
        }
    }
}

Result<std::int64_t> LabelSets::id_of(const Labels& labels) {
    const std::uint64_t h = hash(labels);
    for (auto [it, end] = ids_.equal_range(h); it != end; ++it) {
        if (it->second.labels == labels) return it->second.id;
    }
    sqlite3_stmt* find = find_.get();
    bind(find, labels);
    std::int64_t id = 0;
    const int rc = sqlite3_step(find);
    if (rc == SQLITE_ROW) id = sqlite3_column_int64(find, 0);
    sqlite3_reset(find);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return sqlite_error(path_, db_, "find label set");
    if (rc == SQLITE_DONE) {
        bind(add_.get(), labels);
        if (step_once(add_.get()) != SQLITE_DONE) return sqlite_error(path_, db_, "add label set");
        id = sqlite3_last_insert_rowid(db_);
    }
    if (ids_.size() >= kMaxCached) ids_.clear();
    ids_.emplace(h, Known{labels, id});
    return id;
}

Result<const Labels*> LabelSets::labels_of(std::int64_t id) {
    if (auto it = labels_.find(id); it != labels_.end()) return &it->second;
    sqlite3_stmt* read = read_.get();
    sqlite3_bind_int64(read, 1, id);
    const int rc = sqlite3_step(read);
    if (rc != SQLITE_ROW) {
        Error error = sqlite_error(path_, db_, "read label set");
        sqlite3_reset(read);
        if (rc == SQLITE_DONE) return nullptr;
        return error;
    }
    static const Labels defaults;  // what a value no longer allowed falls back to
    Labels labels;
    int column = 0;
    for (const LabelInfo& label : kLabelTable) {
        if (label.label == Label::stream) {
            labels.stream = sqlite3_column_int64(read, column++) != 0;
            continue;
        }
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(read, column));
        const auto n = static_cast<std::size_t>(sqlite3_column_bytes(read, column++));
        // Stored values passed these checks on the way in; one that no longer does (a value
        // dropped from the table) reads as the label's default.
        if (!set_label(labels, label.label,
                       p == nullptr ? std::string_view() : std::string_view(p, n))) {
            (void)set_label(labels, label.label, label_value(defaults, label.label));
        }
    }
    sqlite3_reset(read);
    if (labels_.size() >= kMaxCached) labels_.clear();
    return &labels_.emplace(id, std::move(labels)).first->second;
}

}  // namespace tokenradar::store

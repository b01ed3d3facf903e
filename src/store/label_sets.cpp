#include "label_sets.hpp"

#include <fmt/format.h>

namespace tokenradar::store {
namespace {

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

LabelSets::LabelSets(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

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
    if (auto known = cache_.find_id(labels)) return *known;
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
    cache_.remember_id(labels, id);
    return id;
}

Result<const Labels*> LabelSets::labels_of(std::int64_t id) {
    if (const Labels* known = cache_.find_labels(id)) return known;
    sqlite3_stmt* read = read_.get();
    sqlite3_bind_int64(read, 1, id);
    const int rc = sqlite3_step(read);
    if (rc != SQLITE_ROW) {
        Error error = sqlite_error(path_, db_, "read label set");
        sqlite3_reset(read);
        if (rc == SQLITE_DONE) return nullptr;
        return error;
    }
    Labels labels;
    int column = 0;
    for (const LabelInfo& label : kLabelTable) {
        if (label.label == Label::stream) {
            labels.stream = sqlite3_column_int64(read, column++) != 0;
            continue;
        }
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(read, column));
        const auto n = static_cast<std::size_t>(sqlite3_column_bytes(read, column++));
        set_stored_label(labels, label.label,
                         p == nullptr ? std::string_view() : std::string_view(p, n));
    }
    sqlite3_reset(read);
    return cache_.remember_labels(id, std::move(labels));
}

}  // namespace tokenradar::store

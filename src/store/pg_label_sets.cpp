#include "pg_label_sets.hpp"

#include <fmt/format.h>

namespace tokenradar::store {
namespace {

// The label columns in kLabelTable's order, which bind() and labels_of() follow.
std::string label_columns() {
    std::string out;
    for (const LabelInfo& label : kLabelTable) {
        out += fmt::format("{}{}", out.empty() ? "" : ", ", label.name);
    }
    return out;
}

}  // namespace

PgLabelSets::PgLabelSets() {
    std::string where;
    std::string values;
    int i = 1;
    for (const LabelInfo& label : kLabelTable) {
        where += fmt::format("{}{} = ${}", where.empty() ? "" : " AND ", label.name, i);
        values += fmt::format("{}${}", values.empty() ? "" : ", ", i);
        ++i;
    }
    find_sql_ = fmt::format("SELECT id FROM label_sets WHERE {}", where);
    add_sql_ = fmt::format(
        "INSERT INTO label_sets ({}) VALUES ({}) ON CONFLICT DO NOTHING "
        "RETURNING id",
        label_columns(), values);
    read_sql_ = fmt::format("SELECT {} FROM label_sets WHERE id = $1", label_columns());
}

void PgLabelSets::bind(const Labels& labels) {
    params_.clear();
    for (const LabelInfo& label : kLabelTable) {
        if (label.label == Label::stream) {
            params_.boolean(labels.stream);
        } else {
            params_.text(label_value(labels, label.label));
        }
    }
}

Result<std::int64_t> PgLabelSets::id_of(PgConnection& db, const Labels& labels) {
    if (auto known = cache_.find_id(labels)) return *known;
    // Find, else add; when the add meets another node's concurrent row (ON CONFLICT), that
    // row is committed by then and the second find sees it.
    for (const std::string* sql : {&find_sql_, &add_sql_, &find_sql_}) {
        bind(labels);
        auto rows = db.exec_params("find label set", *sql, params_, PGRES_TUPLES_OK);
        if (!rows) return rows.error();
        if (PQntuples(rows->get()) == 1) {
            const std::int64_t id = pg_int8(rows->get(), 0, 0);
            cache_.remember_id(labels, id);
            return id;
        }
    }
    return Error(Errc::internal, db.name() + ": label set neither found nor added");
}

Result<const Labels*> PgLabelSets::labels_of(PgConnection& db, std::int64_t id) {
    if (const Labels* known = cache_.find_labels(id)) return known;
    params_.clear();
    params_.int8(id);
    auto rows = db.exec_params("read label set", read_sql_, params_, PGRES_TUPLES_OK);
    if (!rows) return rows.error();
    if (PQntuples(rows->get()) != 1) return nullptr;
    Labels labels;
    int column = 0;
    for (const LabelInfo& label : kLabelTable) {
        if (label.label == Label::stream) {
            labels.stream = pg_bool(rows->get(), 0, column++);
        } else {
            set_stored_label(labels, label.label, pg_text(rows->get(), 0, column++));
        }
    }
    return cache_.remember_labels(id, std::move(labels));
}

}  // namespace tokenradar::store

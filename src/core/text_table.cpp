#include <tokenradar/core/text_table.hpp>

#include <algorithm>
#include <cassert>

namespace tokenradar {
namespace {

std::string csv_cell(const std::string& cell) {
    if (cell.find_first_of(",\"\r\n") == std::string::npos) return cell;
    std::string out = "\"";
    for (char c : cell) {
        if (c == '"') out += '"';
        out += c;
    }
    out += '"';
    return out;
}

// Markdown cells cannot hold a bare pipe or a line break.
std::string markdown_cell(const std::string& cell) {
    std::string out;
    for (char c : cell) {
        if (c == '|') {
            out += "\\|";
        } else if (c == '\n' || c == '\r') {
            out += ' ';
        } else {
            out += c;
        }
    }
    return out;
}

}  // namespace

void TextTable::add_row(std::vector<std::string> cells) {
    assert(cells.size() <= columns_.size());
    cells.resize(columns_.size());
    rows_.push_back(std::move(cells));
}

std::string TextTable::render_aligned() const {
    std::vector<std::size_t> widths(columns_.size());
    for (std::size_t c = 0; c < columns_.size(); ++c) {
        widths[c] = columns_[c].name.size();
        for (const auto& row : rows_) widths[c] = std::max(widths[c], row[c].size());
    }
    std::string out;
    const auto line = [&](const auto& cell_of) {
        std::string text;
        for (std::size_t c = 0; c < columns_.size(); ++c) {
            const std::string& cell = cell_of(c);
            const std::string pad(widths[c] - cell.size(), ' ');
            if (c > 0) text += "  ";
            text += columns_[c].align == Align::right ? pad + cell : cell + pad;
        }
        text.erase(text.find_last_not_of(' ') + 1);
        out += text;
        out += '\n';
    };
    line([&](std::size_t c) -> const std::string& { return columns_[c].name; });
    for (const auto& row : rows_) line([&](std::size_t c) -> const std::string& { return row[c]; });
    return out;
}

std::string TextTable::render_markdown() const {
    std::string out = "|";
    for (const auto& column : columns_) out += " " + markdown_cell(column.name) + " |";
    out += "\n|";
    for (const auto& column : columns_) out += column.align == Align::right ? " ---: |" : " --- |";
    out += '\n';
    for (const auto& row : rows_) {
        out += '|';
        for (const auto& cell : row) out += " " + markdown_cell(cell) + " |";
        out += '\n';
    }
    return out;
}

std::string TextTable::render_csv() const {
    std::string out;
    for (std::size_t c = 0; c < columns_.size(); ++c) {
        if (c > 0) out += ',';
        out += csv_cell(columns_[c].name);
    }
    out += '\n';
    for (const auto& row : rows_) {
        for (std::size_t c = 0; c < row.size(); ++c) {
            if (c > 0) out += ',';
            out += csv_cell(row[c]);
        }
        out += '\n';
    }
    return out;
}

}  // namespace tokenradar

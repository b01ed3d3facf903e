#pragma once
// A table of already formatted cells rendered three ways, so every report prints the same
// rows as aligned text for a terminal, a Markdown table, or CSV (RFC 4180 quoting).

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace tokenradar {

class TextTable {
  public:
    enum class Align { left, right };
    struct Column {
        std::string name;
        Align align = Align::right;
    };

    explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

    // A row with fewer cells than columns is padded with empty cells; extra cells are an
    // error of the caller (asserted).
    void add_row(std::vector<std::string> cells);

    [[nodiscard]] std::size_t rows() const noexcept { return rows_.size(); }

    // Columns padded to their widest cell, separated by two spaces; no trailing spaces.
    [[nodiscard]] std::string render_aligned() const;
    // "| a | b |", then "| --- | ---: |" (right-aligned columns get the colon), then rows.
    [[nodiscard]] std::string render_markdown() const;
    // Header line, then one line per row; cells with a comma, quote or newline are quoted.
    [[nodiscard]] std::string render_csv() const;

  private:
    std::vector<Column> columns_;
    std::vector<std::vector<std::string>> rows_;
};

}  // namespace tokenradar

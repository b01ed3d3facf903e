#include <tokenradar/core/prometheus_text.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <iterator>

namespace tokenradar {
namespace {

std::string_view type_name(MetricType type) {
    switch (type) {
        case MetricType::counter:
            return "counter";
        case MetricType::gauge:
            return "gauge";
        case MetricType::histogram:
            return "histogram";
    }
    return "untyped";
}

// HELP text escapes backslash and line feed only (a quote stays as it is).
void append_help(std::string& out, std::string_view text) {
    while (!text.empty()) {
        const std::size_t plain = std::min(text.find_first_of("\\\n"), text.size());
        out.append(text.substr(0, plain));
        if (plain == text.size()) return;
        out += text[plain] == '\n' ? "\\n" : "\\\\";
        text.remove_prefix(plain + 1);
    }
}

}  // namespace

void PrometheusText::append_label_value(std::string& out, std::string_view value) {
    while (!value.empty()) {
        const std::size_t plain = std::min(value.find_first_of("\\\"\n"), value.size());
        out.append(value.substr(0, plain));
        if (plain == value.size()) return;
        const char c = value[plain];
        out += c == '\n' ? "\\n" : c == '"' ? "\\\"" : "\\\\";
        value.remove_prefix(plain + 1);
    }
}

void PrometheusText::append_labels(std::string& out, MetricLabels labels) {
    bool first = true;
    for (const auto& [key, value] : labels) {
        if (!first) out += ',';
        first = false;
        out += key;
        out += "=\"";
        append_label_value(out, value);
        out += '"';
    }
}

void PrometheusText::family(std::string_view name, MetricType type, std::string_view help) {
    std::string& out = *out_;
    out += "# HELP ";
    out += name;
    out += ' ';
    append_help(out, help);
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type_name(type);
    out += '\n';
}

void PrometheusText::write_head(std::string_view name, std::string_view labels) {
    std::string& out = *out_;
    out += name;
    if (!labels.empty()) {
        out += '{';
        out += labels;
        out += '}';
    }
    out += ' ';
}

void PrometheusText::write_sample(std::string_view name, std::string_view labels,
                                  std::uint64_t value) {
    write_head(name, labels);
    fmt::format_to(std::back_inserter(*out_), "{}\n", value);
}

void PrometheusText::write_sample(std::string_view name, std::string_view labels,
                                  std::int64_t value) {
    write_head(name, labels);
    fmt::format_to(std::back_inserter(*out_), "{}\n", value);
}

void PrometheusText::write_sample(std::string_view name, std::string_view labels, double value) {
    write_head(name, labels);
    fmt::format_to(std::back_inserter(*out_), "{}\n", value);
}

void PrometheusText::histogram(std::string_view name, std::string_view labels,
                               std::span<const double> bounds,
                               std::span<const std::uint64_t> cumulative, double sum,
                               std::uint64_t count) {
    assert(cumulative.size() == bounds.size() + 1);
    auto out = std::back_inserter(*out_);
    const std::string_view sep = labels.empty() ? "" : ",";
    for (std::size_t i = 0; i < bounds.size(); ++i) {
        fmt::format_to(out, "{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep, bounds[i],
                       cumulative[i]);
    }
    fmt::format_to(out, "{}_bucket{{{}{}le=\"+Inf\"}} {}\n", name, labels, sep,
                   cumulative[bounds.size()]);
    fmt::format_to(out, "{}_sum{{{}}} {}\n{}_count{{{}}} {}\n", name, labels, sum, name, labels,
                   count);
}

}  // namespace tokenradar

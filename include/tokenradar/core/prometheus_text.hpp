#pragma once
// The one writer of Prometheus text (exposition format 0.0.4, what GET /metrics answers):
// `# HELP` and `# TYPE` once per family, then its samples, appended to a string. Label values
// are escaped as the format says (\\, \", \n), HELP text too (\\, \n); metric and label names
// are the callers' constants and are not checked.
//
// Not thread-safe (one writer per string); it only formats what it is given.

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace tokenradar {

enum class MetricType { counter, gauge, histogram };

// Label names and values, in the order they are written.
using MetricLabels = std::initializer_list<std::pair<std::string_view, std::string_view>>;

class PrometheusText {
  public:
    explicit PrometheusText(std::string& out) noexcept : out_(&out) {}

    // "# HELP name help" and "# TYPE name type".
    void family(std::string_view name, MetricType type, std::string_view help);

    // `name value`.
    template <class T>
    requires std::is_arithmetic_v<T>
    void sample(std::string_view name, T value) { series(name, std::string_view(), value); }
    // `name{a="x",b="y"} value`, the values escaped here.
    template <class T>
    requires std::is_arithmetic_v<T>
    void sample(std::string_view name, MetricLabels labels, T value) {
        scratch_.clear();
        append_labels(scratch_, labels);
        series(name, std::string_view(scratch_), value);
    }
    // `name{labels} value` (`name value` when `labels` is empty), where `labels` is label text
    // made by append_labels() (escaped, without braces): for series kept by their labels.
    template <class T>
    requires std::is_arithmetic_v<T>
    void series(std::string_view name, std::string_view labels, T value) {
        if constexpr (std::is_floating_point_v<T>) {
            write_sample(name, labels, static_cast<double>(value));
        } else if constexpr (std::is_signed_v<T>) {
            write_sample(name, labels, static_cast<std::int64_t>(value));
        } else {
            write_sample(name, labels, static_cast<std::uint64_t>(value));
        }
    }

    // One histogram series: `name_bucket{labels,le="B"}` per bound with `cumulative[i]`, then
    // `le="+Inf"` with `cumulative[bounds.size()]`, then `name_sum{labels}` and
    // `name_count{labels}` (with braces also when `labels` is empty, as /metrics has always
    // written them). `cumulative` holds bounds.size() + 1 counts.
    void histogram(std::string_view name, std::string_view labels, std::span<const double> bounds,
                   std::span<const std::uint64_t> cumulative, double sum, std::uint64_t count);

    // Appends `a="x",b="y"`: label text with the values escaped.
    static void append_labels(std::string& out, MetricLabels labels);
    // Appends a label value escaped (\\, \", \n); runs between escapes are appended whole.
    static void append_label_value(std::string& out, std::string_view value);

  private:
    void write_sample(std::string_view name, std::string_view labels, std::uint64_t value);
    void write_sample(std::string_view name, std::string_view labels, std::int64_t value);
    void write_sample(std::string_view name, std::string_view labels, double value);
    void write_head(std::string_view name, std::string_view labels);

    std::string* out_;
    std::string scratch_;
};

}  // namespace tokenradar

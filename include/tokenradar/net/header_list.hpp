#pragma once
// The header list of a server response (ResponseWriter::send / start_stream). A name is either
// an owned string (any std::string, string_view or C string converts to one, so
// `headers.emplace_back("etag", value)` works as with a pair of strings) or, through
// HeaderName::constant(), a view of storage that outlives every list holding it (a string
// literal). The gateway's own names (`x-tokenradar-overhead-us` and the like) are longer than
// std::string's 15-byte inline buffer: owned, they cost a malloc and a free each per response.
//
// Threads: plain values, no synchronisation.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenradar::net {

class HeaderName {
  public:
    HeaderName() = default;                                    // empty (vector::resize needs it)
    HeaderName(std::string name) : owned_(std::move(name)) {}  // NOLINT: implicit by design
    HeaderName(std::string_view name) : owned_(name) {}        // NOLINT
    HeaderName(const char* name) : owned_(name) {}             // NOLINT

    // A name that is not copied: `name` must outlive every HeaderName made from it (a string
    // literal or another object of static storage duration).
    static HeaderName constant(std::string_view name) noexcept {
        HeaderName h;
        h.constant_ = name;
        return h;
    }

    std::string_view view() const noexcept {
        return constant_.data() != nullptr ? constant_ : std::string_view(owned_);
    }
    operator std::string_view() const noexcept { return view(); }  // NOLINT: reads as a string
    std::size_t size() const noexcept { return view().size(); }

    friend bool operator==(const HeaderName& a, std::string_view b) noexcept {
        return a.view() == b;
    }

  private:
    std::string_view constant_;  // set by constant(); then owned_ stays empty
    std::string owned_;
};

using HeaderList = std::vector<std::pair<HeaderName, std::string>>;

}  // namespace tokenradar::net

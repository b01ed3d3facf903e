#pragma once
// The OpenAI stream decoder's fast path: most chunks of a stream carry only answer text (and,
// once, a finish reason) for choice 0, the first adds the role and the last the usage. Those
// are recognised with a reused SAX parser (no DOM, no allocation once its buffers have grown),
// everything else is left to the full decoder. Private to the dialect component.
//
// Exactness: scan() accepts a chunk only when the full decoder would decode it to exactly
// what the scan reports (a role, a non-empty text, a finish reason, a usage), so metering
// (metrics.md: first token, output bytes, finish reason, tokens) cannot tell the two paths
// apart. It declines (returns false) on invalid JSON, a non-object root, `error`, anything
// but exactly one choice with index 0 (or none), a delta with `reasoning_content`,
// `reasoning`, `tool_calls` or `refusal` set, non-string `content`, a repeated field
// it reads, and any field it reads having an unexpected type.

#include <tokenradar/dialect/chat.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace tokenradar::dialect {

class OpenAiChunkScanner {
  public:
    OpenAiChunkScanner();
    ~OpenAiChunkScanner();
    OpenAiChunkScanner(const OpenAiChunkScanner&) = delete;
    OpenAiChunkScanner& operator=(const OpenAiChunkScanner&) = delete;

    // True when `data` (one event's payload) is a chunk the scan reads whole; then role(),
    // id(), model(), text(), finish() and usage() say what it carries until the next call.
    // Never throws.
    bool scan(std::string_view data) noexcept;
    // choices[0].delta.content, unescaped; empty when the chunk carries no text (as the full
    // decoder, an empty string is no text).
    std::string_view text() const noexcept;
    // choices[0].finish_reason when it is a string.
    std::optional<std::string_view> finish() const noexcept;
    // choices[0].delta.role was a string: the full decoder's role delta, which carries the
    // chunk's id() and model() (empty when absent or null).
    bool role() const noexcept;
    std::string_view id() const noexcept;
    std::string_view model() const noexcept;
    // The chunk's usage object, when it has one (null reads as none).
    const Usage* usage() const noexcept;
    // The last scan() matched the previous parsed chunk's bytes around a plain ASCII text and
    // took it without parsing (the chunks of one stream differ only in their text).
    bool enveloped() const noexcept;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tokenradar::dialect

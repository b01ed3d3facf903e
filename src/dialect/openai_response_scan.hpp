#pragma once
// The fast path of metering a whole (non-streaming) OpenAI response: the usual body (one
// choice whose message carries text, a usage object) is read with a reused SAX parser, no
// DOM. Metering reads only the response id, the usage and the size of the answer (for the
// estimate when usage is missing); the body itself goes to the client unchanged. Private to
// the dialect component.
//
// Exactness: scan() accepts a body only when parse_openai_response would succeed on it and
// give the same id, usage and answer and reasoning text sizes, so record_response cannot tell
// the two paths apart. It declines (returns false, and the caller parses the DOM) on invalid
// JSON (the same parse options as the full parser), a non-object root, `choices` missing,
// null or not an array, more than one choice, a choice that is not an object or has no
// `message` object, non-null `tool_calls`, a field it reads repeated, and a field it reads
// having a type the full parser refuses or a number it does not take (a fraction or
// exponent, or an integer beyond int64).

#include <tokenradar/dialect/chat.hpp>

#include <cstddef>
#include <memory>
#include <string_view>

namespace tokenradar::dialect {

class OpenAiResponseScanner {
  public:
    OpenAiResponseScanner();
    ~OpenAiResponseScanner();
    OpenAiResponseScanner(const OpenAiResponseScanner&) = delete;
    OpenAiResponseScanner& operator=(const OpenAiResponseScanner&) = delete;

    // True when `body` is a response of the usual shape; then the accessors say what it
    // carries until the next call. Never throws.
    bool scan(std::string_view body) noexcept;
    // The response `id` (empty when absent or null).
    std::string_view id() const noexcept;
    // `usage`, as read_usage reads it (empty when absent or null).
    const Usage& usage() const noexcept;
    // Unescaped bytes of choices[0].message.content, and of its reasoning text
    // (`reasoning_content`, else `reasoning`), as parse_openai_response keeps them.
    std::size_t text_bytes() const noexcept;
    std::size_t reasoning_bytes() const noexcept;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tokenradar::dialect

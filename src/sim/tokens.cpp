#include <tokenradar/sim/tokens.hpp>

#include "rng.hpp"

#include <array>

namespace tokenradar::sim {
namespace {

// Plausible English so that simulated answers look like text in logs and demos. The sizes
// are arbitrary; changing either list changes every seeded output, so treat them as frozen.
constexpr std::array<std::string_view, 16> kOpeners = {
    "The",  "In",     "This", "A",     "When",      "Latency", "Most", "For",
    "Each", "Tokens", "Our",  "Every", "Streaming", "Models",  "Some", "Here",
};

constexpr std::array<std::string_view, 96> kWords = {
    " the",     " a",       " of",       " to",      " and",      " in",       " is",
    " that",    " for",     " it",       " with",    " as",       " on",       " by",
    " model",   " token",   " tokens",   " latency", " request",  " response", " stream",
    " first",   " time",    " second",   " server",  " client",   " cache",    " prompt",
    " prefix",  " queue",   " load",     " peak",    " hour",     " speed",    " rate",
    " median",  " tail",    " provider", " network", " decode",   " prefill",  " batch",
    " memory",  " context", " window",   " answer",  " question", " user",     " system",
    " fast",    " slow",    " steady",   " under",   " over",     " between",  " after",
    " before",  " while",   " which",    " each",    " every",    " many",     " few",
    " more",    " less",    " than",     " can",     " will",     " may",      " should",
    " measure", " compare", " route",    " retry",   " wait",     " send",     " read",
    " write",   " return",  " keep",     " reuse",   " grow",     " drop",     " hold",
    " simple",  " careful", " clear",    " small",   " large",    " long",     " short",
    " quick",   " useful",  " exact",    " random",  " stable",
};

}  // namespace

std::vector<std::string_view> generate_output_tokens(std::uint64_t seed, std::int64_t count) {
    std::vector<std::string_view> out;
    if (count <= 0) return out;
    out.reserve(static_cast<std::size_t>(count));
    Rng rng(seed);
    out.push_back(kOpeners[rng.next() % kOpeners.size()]);
    // Sentences of 6..17 words: a "," sometimes, a "." at the end, then a capitalised opener
    // (with a leading space, so a sentence boundary is ". The").
    std::int64_t until_period = rng.uniform_int(6, 17);
    bool new_sentence = false;
    for (std::int64_t i = 1; i < count; ++i) {
        const std::uint64_t r = rng.next();
        if (new_sentence) {
            static constexpr std::array<std::string_view, 8> kSpacedOpeners = {
                " The", " In", " This", " A", " When", " Most", " Each", " Here"};
            out.push_back(kSpacedOpeners[r % kSpacedOpeners.size()]);
            new_sentence = false;
        } else if (--until_period <= 0) {
            out.push_back(".");
            until_period = rng.uniform_int(6, 17);
            new_sentence = true;
        } else if (r % 11 == 0) {
            out.push_back(",");
        } else {
            out.push_back(kWords[(r >> 8) % kWords.size()]);
        }
    }
    return out;
}

std::string join_tokens(const std::vector<std::string_view>& tokens, std::size_t first,
                        std::size_t count) {
    std::string out;
    const std::size_t end =
        count >= tokens.size() - std::min(first, tokens.size()) ? tokens.size() : first + count;
    for (std::size_t i = first; i < end; ++i) out.append(tokens[i]);
    return out;
}

}  // namespace tokenradar::sim

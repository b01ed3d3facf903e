#include <tokenradar/cache/embedder.hpp>

#include <xxhash.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <string>

#include "text_words.hpp"

namespace tokenradar::cache {
namespace {

// One seed per feature kind, so the gram "abc" and the word "abc" land in different buckets.
constexpr std::uint64_t kGramSeed = 0x9e3779b97f4a7c15ULL;
constexpr std::uint64_t kWordSeed = 0xc2b2ae3d27d4eb4fULL;
constexpr std::uint64_t kBigramSeed = 0x165667b19e3779f9ULL;

constexpr float kCommonWordWeight = 0.25F;
constexpr float kWordFeatureWeight = 1.0F;  // the whole word, beside its grams
constexpr float kBigramWeight = 0.8F;       // neighbouring words: order
constexpr std::size_t kMinGram = 3;
constexpr std::size_t kMaxGram = 5;

void add_feature(std::span<float> out, std::string_view feature, std::uint64_t seed, float weight) {
    const XXH64_hash_t h = XXH3_64bits_withSeed(feature.data(), feature.size(), seed);
    const std::size_t bucket = static_cast<std::size_t>(h % out.size());
    out[bucket] += (h >> 63) != 0 ? -weight : weight;
}

void add_word(std::span<float> out, const std::string& word, float weight) {
    // "<word>" so grams at the edges differ from grams inside ("<ab" is not "ab" in "cab").
    std::string padded;
    padded.reserve(word.size() + 2);
    padded.push_back('<');
    padded += word;
    padded.push_back('>');
    const std::string_view view{padded};
    std::size_t grams = 0;
    for (std::size_t n = kMinGram; n <= kMaxGram; ++n) {
        if (view.size() >= n) grams += view.size() - n + 1;
    }
    if (grams == 0) {
        add_feature(out, view, kGramSeed, weight);  // "<a>" is shorter than a 3-gram
    } else {
        // Each word's grams together weigh one word, however long it is.
        const float gram_weight = weight / std::sqrt(static_cast<float>(grams));
        for (std::size_t n = kMinGram; n <= kMaxGram; ++n) {
            for (std::size_t i = 0; i + n <= view.size(); ++i) {
                add_feature(out, view.substr(i, n), kGramSeed, gram_weight);
            }
        }
    }
    add_feature(out, word, kWordSeed, weight * kWordFeatureWeight);
}

}  // namespace

BuiltinEmbedder::BuiltinEmbedder(std::size_t dimension) : dimension_(dimension) {
    assert(dimension >= 16);
}

std::vector<float> BuiltinEmbedder::embed(std::string_view text) const {
    std::vector<float> out(dimension_);
    embed_into(text, out);
    return out;
}

void BuiltinEmbedder::embed_into(std::string_view text, std::span<float> out) const {
    assert(out.size() == dimension_);
    std::fill(out.begin(), out.end(), 0.0F);
    const auto words = detail::split_words(text);
    std::vector<float> weights(words.size());
    for (std::size_t i = 0; i < words.size(); ++i) {
        weights[i] = detail::is_common_word(words[i].text) ? kCommonWordWeight : 1.0F;
        add_word(out, words[i].text, weights[i]);
    }
    std::string bigram;
    for (std::size_t i = 0; i + 1 < words.size(); ++i) {
        bigram.assign(words[i].text);
        bigram.push_back(' ');
        bigram += words[i + 1].text;
        const float weight = kBigramWeight * (weights[i] + weights[i + 1]) / 2;
        add_feature(out, bigram, kBigramSeed, weight);
    }
    double norm2 = 0;
    for (const float v : out) norm2 += static_cast<double>(v) * v;
    if (norm2 <= 0) return;  // no words: the zero vector, similar to nothing
    const auto scale = static_cast<float>(1.0 / std::sqrt(norm2));
    for (float& v : out) v *= scale;
}

float cosine(std::span<const float> a, std::span<const float> b) {
    assert(a.size() == b.size());
    double dot = 0;
    double na = 0;
    double nb = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        dot += static_cast<double>(a[i]) * b[i];
        na += static_cast<double>(a[i]) * a[i];
        nb += static_cast<double>(b[i]) * b[i];
    }
    if (na <= 0 || nb <= 0) return 0.0F;
    return static_cast<float>(dot / std::sqrt(na * nb));
}

}  // namespace tokenradar::cache

#pragma once
// The semantic cache's built-in embedder: text -> an L2-normalised float vector from hashed
// features, with no model file. It catches near-duplicates (typos, punctuation, casing,
// politeness, a reordered clause), not synonyms: an upstream /v1/embeddings model does that
// (the gateway calls it; its vectors have their own dimension, which the index takes at
// construction).
//
// Features, over the text lowercased (ASCII only; other bytes are kept as they are, so UTF-8
// survives), apostrophes dropped inside words ("don't" -> "dont") and every other ASCII
// punctuation mark taken as a word break:
// - character 3-, 4- and 5-grams of each word padded with '<' and '>' (a typo changes a few
//   of them, not the word), each word's grams scaled to a total weight of one word;
// - the word itself, and the bigram of each pair of neighbouring words, so word ORDER counts
//   ("from NY to LA" and "from LA to NY" share every word but not the bigrams "from ny",
//   "to la");
// - common words (the, please, could, ...) weigh a quarter of a content word, so "could you
//   please tell me X" stays close to "X".
// Each feature is hashed with XXH3 (seeded per feature kind) into one of `dimension` buckets
// with a sign from another bit of the hash (signed feature hashing: collisions cancel on
// average instead of adding up). XXH3 is defined byte for byte, so vectors are the same on
// every machine and run. Pure function of (text, dimension); thread-safe.

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

namespace tokenradar::cache {

class BuiltinEmbedder {
  public:
    static constexpr std::size_t kDefaultDimension = 256;
    // The lowest similarity worth a lexical check with this embedder, chosen on
    // bench/cache/paraphrases.tsv for 100% precision (bench/README.md, "The semantic cache").
    // An upstream embedding model has its own scale: calibrate its threshold separately.
    static constexpr float kDefaultThreshold = 0.85F;

    // dimension >= 16 (asserted); 256 keeps an index entry near 1.5 KB.
    explicit BuiltinEmbedder(std::size_t dimension = kDefaultDimension);

    std::size_t dimension() const { return dimension_; }

    // L2 norm 1, or all zeros for a text without a word (nothing to match on).
    std::vector<float> embed(std::string_view text) const;
    // The same into a caller's buffer of dimension() floats (no allocation for the vector).
    void embed_into(std::string_view text, std::span<float> out) const;

  private:
    std::size_t dimension_;
};

// Cosine similarity; for L2-normalised vectors this is the dot product. 0 when either vector
// is all zeros. The spans must have the same size (asserted).
float cosine(std::span<const float> a, std::span<const float> b);

}  // namespace tokenradar::cache

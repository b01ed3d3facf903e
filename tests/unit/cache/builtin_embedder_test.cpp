#include <tokenradar/cache/embedder.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace tokenradar::cache {
namespace {

// BuiltinEmbedder{}.embed("turn the light on"), each value times its index + 1, summed.
constexpr double kPinnedChecksum = 75.961534;

float similarity(const BuiltinEmbedder& e, std::string_view a, std::string_view b) {
    return cosine(e.embed(a), e.embed(b));
}

TEST(BuiltinEmbedder, GivesUnitVectorsOfItsDimension) {
    const BuiltinEmbedder e{384};
    const auto v = e.embed("How do I reverse a list in Python?");
    ASSERT_EQ(v.size(), 384U);
    double norm2 = 0;
    for (const float x : v) norm2 += static_cast<double>(x) * x;
    EXPECT_NEAR(norm2, 1.0, 1e-5);
    EXPECT_NEAR(cosine(v, v), 1.0F, 1e-5F);
}

TEST(BuiltinEmbedder, IsDeterministicAcrossInstancesAndRuns) {
    const auto a = BuiltinEmbedder{}.embed("What is the capital of France?");
    const auto b = BuiltinEmbedder{}.embed("What is the capital of France?");
    EXPECT_EQ(a, b);
    // Pinned values: XXH3 is defined byte for byte, so these hold on every machine. A change
    // of features or weights changes them (and every stored vector: bump it on purpose).
    const auto pinned = BuiltinEmbedder{}.embed("turn the light on");
    double checksum = 0;
    for (std::size_t i = 0; i < pinned.size(); ++i)
        checksum += pinned[i] * static_cast<double>(i + 1);
    EXPECT_NEAR(checksum, kPinnedChecksum, 1e-3);
}

TEST(BuiltinEmbedder, IgnoresCasePunctuationAndSpacing) {
    const BuiltinEmbedder e;
    EXPECT_NEAR(similarity(e, "What is the capital of France?", "what is the  capital of france"),
                1.0F, 1e-5F);
    EXPECT_NEAR(similarity(e, "don't stop", "dont stop!"), 1.0F, 1e-5F);
}

TEST(BuiltinEmbedder, ScoresNearDuplicatesAboveUnrelatedQuestions) {
    const BuiltinEmbedder e;
    const std::string q = "How do I reverse a list in Python?";
    const float typo = similarity(e, q, "How do I reverse a list in Pyhton?");
    const float polite =
        similarity(e, q, "Could you please tell me how to reverse a list in Python");
    const float unrelated = similarity(e, q, "What is the boiling point of water at sea level?");
    const float same_topic = similarity(e, q, "How do I sort a dictionary by value in Python?");
    EXPECT_GT(typo, 0.6F);
    EXPECT_GT(polite, 0.75F);
    EXPECT_LT(unrelated, 0.3F);
    EXPECT_GT(typo, same_topic);
    EXPECT_GT(polite, same_topic);
    EXPECT_GT(same_topic, unrelated);
}

TEST(BuiltinEmbedder, WordOrderCounts) {
    // The same bag of words: only the bigrams tell them apart (the guard does the rest).
    const BuiltinEmbedder e;
    EXPECT_LT(similarity(e, "flights from NY to LA", "flights from LA to NY"), 0.99F);
    EXPECT_LT(similarity(e, "is a cat bigger than a dog", "is a dog bigger than a cat"), 0.99F);
}

TEST(BuiltinEmbedder, GivesZeroForATextWithoutWords) {
    const BuiltinEmbedder e{64};
    const auto v = e.embed(" ?! ");
    EXPECT_EQ(v, std::vector<float>(64, 0.0F));
    EXPECT_EQ(cosine(v, e.embed("hello")), 0.0F);
}

TEST(BuiltinEmbedder, KeepsNonAsciiText) {
    const BuiltinEmbedder e;
    EXPECT_GT(similarity(e, "Wie spät ist es in München?", "wie spät ist es in münchen"), 0.99F);
    EXPECT_LT(similarity(e, "Wie spät ist es in München?", "Wie spät ist es in Köln?"), 0.9F);
}

}  // namespace
}  // namespace tokenradar::cache

#include <tokenradar/dialect/embeddings.hpp>

#include <gtest/gtest.h>

#include <string>

namespace tokenradar::dialect {
namespace {

constexpr std::string_view kAnswer =
    R"({"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,-0.25,1]}],)"
    R"("model":"text-embedding-3-small","usage":{"prompt_tokens":8,"total_tokens":8}})";

TEST(Embeddings, FirstVectorAndPromptTokensOfAnOpenAiAnswer) {
    const auto vector = first_embedding(kAnswer);
    ASSERT_TRUE(vector.has_value());
    EXPECT_EQ(*vector, (std::vector<float>{0.5F, -0.25F, 1.0F}));
    EXPECT_EQ(embeddings_prompt_tokens(kAnswer), 8);
}

TEST(Embeddings, UsageWithObjectsOfItsOwnAndSpacesIsRead) {
    EXPECT_EQ(embeddings_prompt_tokens(
                  R"({"data":[],"usage" :	{ "prompt_tokens_details":{"cached_tokens":2},)"
                  R"( "prompt_tokens" : 12 } })"),
              12);
}

// A string value "usage" after the usage key, then an object of the same shape: the scan
// must take the key, not the value followed by whatever object comes next.
TEST(Embeddings, AUsageStringValueIsNotTheUsageKey) {
    EXPECT_EQ(embeddings_prompt_tokens(R"({"usage":{"prompt_tokens":5},"note":"usage",)"
                                       R"("x":{"prompt_tokens":999999}})"),
              5);
    EXPECT_EQ(embeddings_prompt_tokens(R"({"note":"usage","x":{"prompt_tokens":7}})"),
              std::nullopt);
    // An escaped quote before "usage" makes it the tail of another key.
    EXPECT_EQ(embeddings_prompt_tokens(R"({"a\"usage":{"prompt_tokens":9}})"), std::nullopt);
}

TEST(Embeddings, NoCountWithoutANonNegativeIntegerOrPastTheWindow) {
    EXPECT_EQ(embeddings_prompt_tokens(R"({"data":[]})"), std::nullopt);
    EXPECT_EQ(embeddings_prompt_tokens(R"({"usage":{"prompt_tokens":-1}})"), std::nullopt);
    EXPECT_EQ(embeddings_prompt_tokens(R"({"usage":{"prompt_tokens":"8"}})"), std::nullopt);
    EXPECT_EQ(embeddings_prompt_tokens(R"({"usage":{"prompt_tokens":8)"), std::nullopt);
    // A usage object longer than the window is not read (and does not throw).
    const std::string padded = R"({"usage":{"pad":")" + std::string(kMaxEmbeddingsUsageBytes, 'x') +
                               R"(","prompt_tokens":8}})";
    EXPECT_EQ(embeddings_prompt_tokens(padded), std::nullopt);
}

TEST(Embeddings, NoVectorFromAnErrorOrAnEmptyOrNonNumericEmbedding) {
    EXPECT_EQ(first_embedding(R"({"error":{"message":"no"}})"), std::nullopt);
    EXPECT_EQ(first_embedding(R"({"data":[{"embedding":[]}]})"), std::nullopt);
    EXPECT_EQ(first_embedding(R"({"data":[{"embedding":[1,"2"]}]})"), std::nullopt);
    EXPECT_EQ(first_embedding("not json"), std::nullopt);
    std::string huge = R"({"data":[{"embedding":[)";
    for (std::size_t i = 0; i <= kMaxEmbeddingDimension; ++i) huge += i ? ",0" : "0";
    EXPECT_EQ(first_embedding(huge + "]}]}"), std::nullopt);
}

}  // namespace
}  // namespace tokenradar::dialect

#include <tokenradar/cache/lexical_guard.hpp>

#include <gtest/gtest.h>

namespace tokenradar::cache {
namespace {

GuardReason reason(std::string_view query, std::string_view cached, GuardOptions options = {}) {
    return check_lexical(lexical_profile(query), lexical_profile(cached), options).reason;
}

TEST(LexicalGuard, AcceptsRephrasingsThatKeepTheContentWords) {
    EXPECT_TRUE(lexically_compatible("How do I reverse a list in Python?",
                                     "could you please tell me how to reverse a list in python"));
    EXPECT_TRUE(
        lexically_compatible("What's the capital of France", "what is the capital of France?"));
    EXPECT_TRUE(
        lexically_compatible("how to sort lists in python", "How do I sort a list in Python"));
    EXPECT_TRUE(lexically_compatible("What's the best way to sort a list in Python?",
                                     "how can I sort a list in python"));
    EXPECT_TRUE(lexically_compatible("turn on the light", "please turn the light on"));
    EXPECT_TRUE(lexically_compatible("I don't like tea", "I do not like tea"));
}

TEST(LexicalGuard, RejectsAFlippedSwitch) {
    EXPECT_EQ(reason("turn the light on", "turn the light off"), GuardReason::polarity);
    EXPECT_EQ(reason("enable dark mode", "disable dark mode"), GuardReason::polarity);
    EXPECT_EQ(reason("sort ascending", "sort descending"), GuardReason::content_word);
}

TEST(LexicalGuard, RejectsSwappedEndpoints) {
    EXPECT_EQ(reason("flights from NY to LA", "flights from LA to NY"), GuardReason::relation);
    EXPECT_EQ(reason("convert celsius to fahrenheit", "convert fahrenheit to celsius"),
              GuardReason::relation);
    EXPECT_EQ(reason("is a cat bigger than a dog", "is a dog bigger than a cat"),
              GuardReason::relation);
    EXPECT_EQ(reason("what is the square root of the log", "what is the log of the square root"),
              GuardReason::relation);
    EXPECT_EQ(reason("sort a dictionary by value", "sort a value by dictionary"),
              GuardReason::relation);
    EXPECT_EQ(reason("is a kilo of feathers heavier than a kilo of steel",
                     "is a kilo of steel heavier than a kilo of feathers"),
              GuardReason::relation);
    // The same relations in another order are the same question.
    EXPECT_EQ(reason("flights from NY to LA", "flights to LA from NY"), GuardReason::none);
}

TEST(LexicalGuard, RejectsOtherNumbers) {
    EXPECT_EQ(reason("what is 3 times 7", "what is 4 times 7"), GuardReason::numbers);
    EXPECT_EQ(reason("what is 10 minus 3", "what is 3 minus 10"), GuardReason::numbers);
    EXPECT_EQ(reason("top 5 movies of 2023", "top 5 movies of 2024"), GuardReason::numbers);
    EXPECT_EQ(reason("what's new in python 3.12", "what's new in python 3.11"),
              GuardReason::numbers);
    EXPECT_EQ(reason("gpt-4 pricing", "gpt-3 pricing"), GuardReason::numbers);
    EXPECT_EQ(reason("a number with three digits", "a number with 3 digits"), GuardReason::none);
    EXPECT_EQ(reason("population 1,000", "population 1000"), GuardReason::none);
    EXPECT_EQ(reason("list 3 fruits", "list fruits"), GuardReason::numbers);
}

TEST(LexicalGuard, RejectsANegationFlip) {
    EXPECT_EQ(reason("why is the sky blue", "why is the sky not blue"), GuardReason::negation);
    EXPECT_EQ(reason("can I eat eggs", "can't I eat eggs"), GuardReason::negation);
    EXPECT_EQ(reason("coffee with sugar", "coffee without sugar"), GuardReason::negation);
    EXPECT_EQ(reason("I never smoke", "I do not smoke"), GuardReason::negation);
    EXPECT_EQ(reason("why doesn’t it work", "why does it not work"), GuardReason::none);
}

TEST(LexicalGuard, RejectsAnotherEntityOrAnExtraCondition) {
    EXPECT_EQ(reason("how to feed a cat", "how to feed a dog"), GuardReason::content_word);
    EXPECT_EQ(reason("hello world in C", "hello world in R"), GuardReason::content_word);
    EXPECT_EQ(reason("capital of France", "capital of Spain"), GuardReason::content_word);
    // An extra word on either side changes the question.
    EXPECT_EQ(reason("sort a list in python", "sort a list in python in place"),
              GuardReason::content_word);
    EXPECT_EQ(reason("sort a list in python in place", "sort a list in python"),
              GuardReason::content_word);
}

TEST(LexicalGuard, RejectsAnotherKindOfQuestion) {
    EXPECT_EQ(reason("why did the Roman Empire fall", "when did the Roman Empire fall"),
              GuardReason::question_word);
    EXPECT_EQ(reason("is coffee bad for your heart", "why is coffee bad for your heart"),
              GuardReason::question_word);
    EXPECT_EQ(reason("who wrote Hamlet", "whom was Hamlet written by"), GuardReason::content_word);
    // A request without a question word is not the question how to do it.
    EXPECT_EQ(reason("sort a list in python", "how do I sort a list in python"),
              GuardReason::question_word);
}

TEST(LexicalGuard, SaysWhichWordDiffers) {
    const auto v =
        check_lexical(lexical_profile("capital of France"), lexical_profile("capital of Spain"));
    EXPECT_FALSE(v.compatible());
    EXPECT_EQ(v.detail, "franc");  // the stem
    EXPECT_EQ(to_string(v.reason), "content_word");
}

TEST(LexicalGuard, AllowsTyposInLongWordsOnlyWhenAsked) {
    EXPECT_EQ(reason("reverse a list in pyhton", "reverse a list in python"),
              GuardReason::content_word);
    GuardOptions typos;
    typos.allow_typos = true;
    EXPECT_EQ(reason("reverse a list in pyhton", "reverse a list in python", typos),
              GuardReason::none);
    EXPECT_EQ(reason("explain recursoin", "explain recursion", typos), GuardReason::none);
    // Short words and a different first letter never count as typos.
    EXPECT_EQ(reason("feed a cat", "feed a car", typos), GuardReason::content_word);
    EXPECT_EQ(reason("affect of caffeine", "effect of caffeine", typos), GuardReason::content_word);
}

TEST(LexicalGuard, IsSymmetric) {
    const char* pairs[][2] = {{"turn the light on", "turn the light off"},
                              {"flights from NY to LA", "flights from LA to NY"},
                              {"sort a list", "sort a list descending"},
                              {"what is 3 + 4", "what is 4 + 3"},
                              {"how to reverse a list", "reverse a list"}};
    for (const auto& p : pairs) {
        EXPECT_EQ(lexically_compatible(p[0], p[1]), lexically_compatible(p[1], p[0]))
            << p[0] << " / " << p[1];
    }
}

}  // namespace
}  // namespace tokenradar::cache

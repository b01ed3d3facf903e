#include <tokenradar/bench/workload.hpp>

#include "../../support/temp_path.hpp"

#include <tokenradar/core/config.hpp>
#include <tokenradar/core/token_estimate.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <string_view>
#include <vector>

namespace tokenradar::bench {
namespace {

using ::testing::HasSubstr;

const std::filesystem::path kWorkloads = std::filesystem::path(TOKENRADAR_SOURCE_DIR) / "workloads";

TEST(Workload, EveryShippedWorkloadLoads) {
    for (const char* name : {"chat", "gen-500", "long-context", "code", "prefix-reuse", "faq"}) {
        auto w = load_workload(name, kWorkloads);
        EXPECT_EQ(w.name, name);
        EXPECT_EQ(w.task, name);
        EXPECT_FALSE(make_prompt(w, 1, 0).user.empty());
    }
    EXPECT_EQ(load_workload("gen-500", kWorkloads).max_tokens, 500);
}

TEST(Workload, PromptsAreUniqueAndDeterministic) {
    auto w = load_workload("gen-500", kWorkloads);
    std::set<std::string> seen;
    for (std::uint64_t i = 0; i < 200; ++i)
        EXPECT_TRUE(seen.insert(make_prompt(w, 7, i).user).second);
    EXPECT_EQ(make_prompt(w, 7, 3).user, make_prompt(w, 7, 3).user);
    EXPECT_NE(make_prompt(w, 7, 3).user, make_prompt(w, 8, 3).user);
}

TEST(Workload, SizesMatchTheirDescriptions) {
    auto long_context = load_workload("long-context", kWorkloads);
    auto p = make_prompt(long_context, 1, 0);
    EXPECT_NEAR(static_cast<double>(estimate_tokens(p.user)), 10000, 300);

    auto prefix = load_workload("prefix-reuse", kWorkloads);
    auto a = make_prompt(prefix, 1, 0);
    auto b = make_prompt(prefix, 1, 1);
    EXPECT_EQ(a.system, b.system);  // the shared prefix
    EXPECT_NE(a.user, b.user);      // the unique suffix
    EXPECT_NEAR(static_cast<double>(estimate_tokens(a.system)), 4000, 100);
}

TEST(Workload, ExtraBodyTableIsTheWorkloadsExtraFields) {
    const testing::TempPath file("extra_workload", ".toml");
    file.write(
        "max_tokens = 64\n[prompt]\nuser = \"x\"\n[extra_body]\nignore_eos = true\nmin_tokens = "
        "64\n"
        "[extra_body.stream_options]\ncontinuous_usage_stats = true\n");
    auto w = load_workload(file.path(), kWorkloads);
    EXPECT_EQ(w.extra_body.at("ignore_eos"), true);
    EXPECT_EQ(w.extra_body.at("min_tokens"), 64);
    EXPECT_EQ(w.extra_body.at("stream_options").at("continuous_usage_stats"), true);
    EXPECT_TRUE(load_workload("chat", kWorkloads).extra_body.empty());
}

TEST(Workload, SeveralSharedPrefixesAreDrawnPerRequestAndStableAcrossRequests) {
    const testing::TempPath file("apps_workload", ".toml");
    file.write("[prompt]\nshared_prefix_tokens = 200\nshared_prefixes = 4\nuser = \"q {nonce}\"\n");
    auto w = load_workload(file.path(), kWorkloads);
    EXPECT_EQ(w.shared_prefixes, 4);
    std::map<std::string, int> systems;
    for (std::uint64_t i = 0; i < 400; ++i) ++systems[make_prompt(w, 5, i).system];
    ASSERT_EQ(systems.size(), 4u);
    for (const auto& [system, n] : systems) {
        EXPECT_GT(n, 50) << "each prefix drawn about a quarter of the time";
        EXPECT_GT(system.size(), 600u);
    }
    EXPECT_EQ(make_prompt(w, 5, 17).system, make_prompt(w, 5, 17).system);
    // One prefix (the default) is what every earlier run had.
    auto one = load_workload("prefix-reuse", kWorkloads);
    EXPECT_EQ(make_prompt(one, 5, 1).system, make_prompt(one, 5, 2).system);
}

TEST(Workload, BadFilesNameFileLineAndKey) {
    const testing::TempPath file("bad_workload", ".toml");
    const std::string& path = file.path();
    const auto error_of = [&](std::string_view text) {
        file.write(text);
        try {
            load_workload(path, kWorkloads);
        } catch (const ConfigError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_THAT(error_of("max_tokens = \"many\"\n[prompt]\nuser = \"x\"\n"),
                HasSubstr(path + ":1: max_tokens: expected an integer"));
    EXPECT_THAT(error_of("[prompt]\nuser = \"about {topic}\"\n"), HasSubstr("prompt.topics"));
    EXPECT_THAT(error_of("max_tokens = 5\n"), HasSubstr("prompt"));
    EXPECT_THAT(error_of("[prompt]\nuser = \"x\"\nsystm = \"typo\"\n"),
                HasSubstr("unknown key 'prompt.systm'"));
    EXPECT_THAT(error_of("[prompt\n"), HasSubstr(path + ":1"));
    EXPECT_THAT(error_of("extra_body = \"{}\"\n[prompt]\nuser = \"x\"\n"),
                HasSubstr(path + ":1: extra_body: expected a table"));
    EXPECT_THAT(error_of("max_tokens = 5\nrepeat_exact = 1.5\n[prompt]\nuser = \"x\"\n"),
                HasSubstr(path + ":2: repeat_exact"));
    EXPECT_THAT(error_of("repeat_reworded = -0.1\n[prompt]\nuser = \"x\"\n"),
                HasSubstr(path + ":1: repeat_reworded"));
    EXPECT_THAT(error_of("repeat_exact = 0.7\nrepeat_reworded = 0.5\n[prompt]\nuser = \"x\"\n"),
                HasSubstr(path + ":2: repeat_reworded: expected a fraction from 0 to 0.3"));
    try {
        load_workload("no-such-workload", kWorkloads);
        FAIL();
    } catch (const ConfigError& e) {
        EXPECT_THAT(e.what(), HasSubstr("no-such-workload"));
    }
}

// Lower-case words of a text (runs of letters and digits).
std::vector<std::string> words_of(std::string_view text) {
    std::vector<std::string> words;
    std::string word;
    for (const char c : std::string(text) + " ") {
        if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
            word.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
        } else if (!word.empty()) {
            words.push_back(std::move(word));
            word.clear();
        }
    }
    return words;
}

// What a lexical guard compares: every word that carries meaning (3+ letters; "are" may
// contract), every number and every negation, in order.
void expect_same_meaning(std::string_view original, std::string_view reworded) {
    const auto before = words_of(original);
    const auto after = words_of(reworded);
    const std::set<std::string> kept(after.begin(), after.end());
    for (const std::string& w : before) {
        if (w.size() >= 3 && w != "are") {
            EXPECT_TRUE(kept.contains(w)) << w << " in " << reworded;
        }
    }
    const auto numbers = [](const std::vector<std::string>& words) {
        std::vector<std::string> out;
        for (const std::string& w : words) {
            if (std::isdigit(static_cast<unsigned char>(w[0])) != 0 || w == "not" || w == "no" ||
                w == "never" || w == "t") {
                out.push_back(w);
            }
        }
        std::sort(out.begin(), out.end());
        return out;
    };
    EXPECT_EQ(numbers(before), numbers(after)) << original << " -> " << reworded;
}

TEST(Workload, RepeatFractionsAreHonouredAndRepeatsAreEarlierQuestions) {
    const auto faq = load_workload("faq", kWorkloads);
    EXPECT_EQ(faq.task, "faq");
    EXPECT_EQ(faq.temperature, 0.0);
    EXPECT_DOUBLE_EQ(faq.repeat_exact, 0.3);
    EXPECT_DOUBLE_EQ(faq.repeat_reworded, 0.2);
    EXPECT_GE(faq.topics.size(), 200U);

    constexpr std::uint64_t kRequests = 20'000;
    std::map<Repeat, int> kinds;
    std::vector<std::string> users;
    for (std::uint64_t i = 0; i < kRequests; ++i) {
        const PromptOrigin origin = prompt_origin(faq, 11, i, 3);
        ++kinds[origin.repeat];
        users.push_back(make_prompt(faq, 11, i, 3).user);
        if (origin.repeat == Repeat::fresh) {
            EXPECT_EQ(origin.of, i);
            continue;
        }
        ASSERT_LT(origin.of, i);
        if (origin.repeat == Repeat::exact) {
            EXPECT_LE(i - origin.of, kRepeatWindow) << i;
            EXPECT_EQ(users[i], users[origin.of]) << i;
        } else {
            EXPECT_EQ(prompt_origin(faq, 11, origin.of, 3).repeat, Repeat::fresh) << i;
            EXPECT_NE(users[i], users[origin.of]) << i;
            expect_same_meaning(users[origin.of], users[i]);
        }
    }
    // Binomial standard deviations at n = 20,000 are ~0.003: 0.015 is five of them.
    const auto share = [&](Repeat r) { return static_cast<double>(kinds[r]) / kRequests; };
    EXPECT_NEAR(share(Repeat::exact), 0.3, 0.015);
    EXPECT_NEAR(share(Repeat::reworded), 0.2, 0.015);
    EXPECT_NEAR(share(Repeat::fresh), 0.5, 0.015);
    // Fresh questions do not collide: the topics are asked in turn.
    std::set<std::string> fresh;
    for (std::uint64_t i = 0; i < faq.topics.size(); ++i) {
        if (prompt_origin(faq, 11, i, 3).repeat == Repeat::fresh) {
            EXPECT_TRUE(fresh.insert(users[i]).second) << users[i];
        }
    }
}

TEST(Workload, RepeatsAreDeterministicPerSeedAndSequence) {
    const auto faq = load_workload("faq", kWorkloads);
    int differs_by_sequence = 0;
    int differs_by_seed = 0;
    for (std::uint64_t i = 0; i < 200; ++i) {
        EXPECT_EQ(make_prompt(faq, 5, i, 1).user, make_prompt(faq, 5, i, 1).user);
        EXPECT_EQ(prompt_origin(faq, 5, i, 1).of, prompt_origin(faq, 5, i, 1).of);
        differs_by_sequence += make_prompt(faq, 5, i, 1).user != make_prompt(faq, 5, i, 2).user;
        differs_by_seed += make_prompt(faq, 5, i, 1).user != make_prompt(faq, 6, i, 1).user;
    }
    EXPECT_GT(differs_by_sequence, 150);
    EXPECT_GT(differs_by_seed, 150);
    // Without repeat keys every request is fresh, as before.
    const auto chat = load_workload("chat", kWorkloads);
    for (std::uint64_t i = 0; i < 1'000; ++i)
        ASSERT_EQ(prompt_origin(chat, 5, i).repeat, Repeat::fresh);
}

TEST(Workload, RewordingsKeepEveryContentWordNumberAndNegation) {
    const std::vector<std::string_view> questions = {
        "What is the capital of France? Answer in one sentence.",
        "Why is the number 1 not a prime number? Answer in one sentence.",
        "How many seconds are in 2 hours?",
        "Where is the deepest point in the ocean, and why does it never freeze?",
        "I am curious: what's 17 multiplied by 23?",
        "Let us compare TCP and UDP. Which one does not retransmit lost packets?",
        "[0123456789abcdef] In about two hundred words, explain DNS."};
    for (const std::string_view q : questions) {
        std::set<std::string> variants;
        for (std::uint64_t v = 0; v < 300; ++v) {
            const std::string r = reword(q, v);
            EXPECT_NE(r, q);
            expect_same_meaning(q, r);
            variants.insert(r);
        }
        EXPECT_GE(variants.size(), 50U) << q;  // many ways to ask again, not one
    }
    // Each kind of change shows up somewhere.
    std::string all;
    for (std::uint64_t v = 0; v < 300; ++v)
        all += reword("What is the capital of France? Answer in one sentence.", v) + "\n";
    EXPECT_THAT(all, HasSubstr("What's the capital"));
    EXPECT_THAT(all, HasSubstr("Answer in one sentence. What"));
    EXPECT_THAT(all, HasSubstr("what is the capital of france?"));
    EXPECT_THAT(all, HasSubstr("Please, "));
    EXPECT_THAT(all, HasSubstr(" Thanks!"));
    EXPECT_THAT(all, HasSubstr("What  is"));
    // A contraction is spelled out, too, and never one with a negation.
    std::string spelled_out;
    for (std::uint64_t v = 0; v < 40; ++v) spelled_out += reword("It's late? No.", v) + "\n";
    EXPECT_THAT(spelled_out, HasSubstr("t is late"));
}

}  // namespace
}  // namespace tokenradar::bench

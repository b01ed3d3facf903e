#include <tokenradar/cache/semantic_index.hpp>

#include <tokenradar/cache/detail/semantic_index_access.hpp>
#include <tokenradar/cache/embedder.hpp>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace tokenradar::cache {
namespace {

constexpr std::int64_t kNow = 1'000'000'000;
constexpr std::int64_t kLater = kNow + 3'600'000'000;  // an hour of validity
constexpr float kThreshold = 0.85F;

class SemanticIndexTest : public ::testing::Test {
  protected:
    SemanticIndexOptions options(std::size_t max_entries = 1000, std::size_t flat_limit = 64) {
        SemanticIndexOptions o;
        o.dimension = embedder_.dimension();
        o.max_entries = max_entries;
        o.flat_limit = flat_limit;
        return o;
    }
    bool insert(SemanticIndex& index, std::string_view scope, std::string_view question,
                std::string_view payload, std::int64_t expires_at_us = kLater) {
        return index.insert(scope, embedder_.embed(question), question, payload, expires_at_us,
                            kNow);
    }
    SemanticLookup find(const SemanticIndex& index, std::string_view scope, std::string_view query,
                        std::int64_t now_us = kNow, float threshold = kThreshold) {
        return index.find(scope, embedder_.embed(query), query, threshold, now_us);
    }
    // Distinct questions no two of which pass the guard with each other (each has a word of
    // its own). Not "planet number i" for every i: hnswlib's graph leaves a few percent of
    // such near-identical vectors unreachable (a miss, never a wrong hit).
    static std::string question(std::size_t i) {
        return "what is the " + word_for(i * 7919 % 100'003) + " of the " + word_for(i) + " in " +
               std::to_string(i % 97);
    }
    static std::string word_for(std::size_t n) {
        static constexpr std::array syllables{"ka",  "lo",  "mi",  "tru", "sen",
                                              "bor", "vel", "qua", "dri", "pan"};
        std::string w;
        do {
            w += syllables[n % 10];
            n /= 10;
        } while (n != 0);
        return w;
    }

    BuiltinEmbedder embedder_;
};

TEST_F(SemanticIndexTest, FindsANearDuplicateInItsScope) {
    SemanticIndex index{options()};
    ASSERT_TRUE(insert(index, "t1/m", "How do I reverse a list in Python?", "key-1"));
    const auto r = find(index, "t1/m", "how do i reverse a list in python");
    ASSERT_TRUE(r.hit);
    EXPECT_EQ(r.hit->payload, "key-1");
    EXPECT_EQ(r.hit->question, "How do I reverse a list in Python?");
    EXPECT_GT(r.hit->similarity, 0.99F);
    EXPECT_FLOAT_EQ(r.best_similarity, r.hit->similarity);
}

TEST_F(SemanticIndexTest, NeverAnswersFromAnotherScope) {
    SemanticIndex index{options()};
    ASSERT_TRUE(insert(index, "tenant-a/m", "What is the capital of France?", "a"));
    const auto r = find(index, "tenant-b/m", "What is the capital of France?");
    EXPECT_FALSE(r.hit);
    EXPECT_EQ(r.best_similarity, -1.0F);
    ASSERT_TRUE(insert(index, "tenant-b/m", "What is the capital of Spain?", "b"));
    const auto b = find(index, "tenant-b/m", "What is the capital of France?");
    EXPECT_FALSE(b.hit);
    EXPECT_TRUE(find(index, "tenant-a/m", "What is the capital of France?").hit);
}

TEST_F(SemanticIndexTest, NeedsTheThreshold) {
    SemanticIndex index{options()};
    ASSERT_TRUE(insert(index, "s", "How do I reverse a list in Python?", "k"));
    const auto r = find(index, "s", "Could you please tell me how to reverse a list in Python");
    ASSERT_TRUE(r.hit);
    const float sim = r.hit->similarity;
    EXPECT_LT(sim, 0.999F);
    EXPECT_TRUE(find(index, "s", "Could you please tell me how to reverse a list in Python", kNow,
                     sim - 0.001F)
                    .hit);
    const auto above = find(index, "s", "Could you please tell me how to reverse a list in Python",
                            kNow, sim + 0.001F);
    EXPECT_FALSE(above.hit);
    EXPECT_FALSE(above.guard_rejected);
    EXPECT_NEAR(above.best_similarity, sim, 1e-6F);
}

TEST_F(SemanticIndexTest, AppliesTheLexicalGuard) {
    SemanticIndex index{options()};
    ASSERT_TRUE(insert(index, "s", "turn the light on", "on"));
    const auto r = find(index, "s", "turn the light off", kNow, 0.5F);
    EXPECT_FALSE(r.hit);
    EXPECT_TRUE(r.guard_rejected);
    EXPECT_EQ(r.guard_reason, GuardReason::polarity);
    EXPECT_GT(r.best_similarity, 0.5F);
    // With both cached, each query gets its own answer.
    ASSERT_TRUE(insert(index, "s", "turn the light off", "off"));
    EXPECT_EQ(find(index, "s", "turn the light off", kNow, 0.5F).hit->payload, "off");
    EXPECT_EQ(find(index, "s", "please turn the light on", kNow, 0.5F).hit->payload, "on");
}

TEST_F(SemanticIndexTest, SkipsExpiredEntriesAndRemovesThem) {
    SemanticIndex index{options()};
    ASSERT_TRUE(insert(index, "s", "what is the speed of light", "k", kNow + 10));
    EXPECT_TRUE(find(index, "s", "what is the speed of light", kNow + 9).hit);
    EXPECT_FALSE(find(index, "s", "what is the speed of light", kNow + 10).hit);
    EXPECT_FALSE(insert(index, "s", "what is the speed of sound", "x", kNow));  // already expired
    EXPECT_EQ(index.remove_expired(kNow + 9), 0U);
    EXPECT_EQ(index.remove_expired(kNow + 10), 1U);
    EXPECT_EQ(index.stats().entries, 0U);
    EXPECT_EQ(index.stats().scopes, 0U);
}

TEST_F(SemanticIndexTest, ErasesWithTheExactTwin) {
    SemanticIndex index{options()};
    ASSERT_TRUE(insert(index, "s", "what is the speed of light", "twin"));
    EXPECT_FALSE(index.erase("other", "twin"));
    EXPECT_FALSE(index.erase("s", "other"));
    EXPECT_TRUE(index.erase("s", "twin"));
    EXPECT_FALSE(find(index, "s", "what is the speed of light").hit);
    EXPECT_FALSE(index.erase("s", "twin"));
    EXPECT_EQ(index.stats().entries, 0U);
}

TEST_F(SemanticIndexTest, ReplacesAnEntryWithTheSamePayload) {
    SemanticIndex index{options()};
    ASSERT_TRUE(insert(index, "s", "what is the speed of light", "k"));
    ASSERT_TRUE(insert(index, "s", "what is the speed of sound", "k"));
    EXPECT_EQ(index.stats().entries, 1U);
    EXPECT_FALSE(find(index, "s", "what is the speed of light").hit);
    EXPECT_TRUE(find(index, "s", "what is the speed of sound").hit);
}

TEST_F(SemanticIndexTest, RefusesAVectorOfTheWrongSizeOrZero) {
    SemanticIndex index{options()};
    const std::vector<float> short_vector(10, 1.0F);
    EXPECT_FALSE(index.insert("s", short_vector, "q", "k", kLater, kNow));
    const std::vector<float> zero(index.dimension(), 0.0F);
    EXPECT_FALSE(index.insert("s", zero, "q", "k", kLater, kNow));
    EXPECT_FALSE(index.find("s", short_vector, "q", 0.0F, kNow).hit);
}

TEST_F(SemanticIndexTest, StaysWithinItsEntryBudgetEvictingTheOldest) {
    SemanticIndex index{options(50, 16)};
    for (std::size_t i = 0; i < 200; ++i) {
        ASSERT_TRUE(
            insert(index, "scope-" + std::to_string(i % 3), question(i), "k" + std::to_string(i)));
        ASSERT_LE(index.stats().entries, 50U);
    }
    const auto st = index.stats();
    EXPECT_EQ(st.entries, 50U);
    EXPECT_EQ(st.evictions, 150U);
    // The newest 50 are there, the older gone.
    for (std::size_t i = 150; i < 200; ++i) {
        const auto r = find(index, "scope-" + std::to_string(i % 3), question(i));
        ASSERT_TRUE(r.hit) << i;
        EXPECT_EQ(r.hit->payload, "k" + std::to_string(i));
    }
    for (std::size_t i = 0; i < 150; ++i) {
        EXPECT_FALSE(find(index, "scope-" + std::to_string(i % 3), question(i)).hit) << i;
    }
}

TEST_F(SemanticIndexTest, GrowsAGraphAndRebuildsItAfterManyDeletes) {
    SemanticIndex index{options(10'000, 256)};
    constexpr std::size_t n = 600;
    for (std::size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(insert(index, "s", question(i), "k" + std::to_string(i)));
    }
    EXPECT_EQ(index.stats().graph_scopes, 1U);
    for (std::size_t i = 0; i < n; ++i) {
        const auto r = find(index, "s", question(i));
        ASSERT_TRUE(r.hit) << i;
        EXPECT_EQ(r.hit->payload, "k" + std::to_string(i));
    }
    // Erase 3 of 4: the deleted outnumber the live, the graph is rebuilt from the live ones.
    for (std::size_t i = 0; i < n; ++i) {
        if (i % 4 != 0) {
            ASSERT_TRUE(index.erase("s", "k" + std::to_string(i)));
        }
    }
    EXPECT_GE(index.stats().rebuilds, 1U);
    EXPECT_EQ(index.stats().graph_scopes, 1U);  // 150 live: above flat_limit / 2
    for (std::size_t i = 0; i < n; ++i) {
        const auto r = find(index, "s", question(i));
        if (i % 4 == 0) {
            ASSERT_TRUE(r.hit) << i;
            EXPECT_EQ(r.hit->payload, "k" + std::to_string(i));
        } else {
            EXPECT_FALSE(r.hit) << i;
        }
    }
    // Inserts after the rebuild reuse the freed labels and are found too.
    for (std::size_t i = n; i < n + 100; ++i) {
        ASSERT_TRUE(insert(index, "s", question(i), "k" + std::to_string(i)));
    }
    for (std::size_t i = n; i < n + 100; ++i) EXPECT_TRUE(find(index, "s", question(i)).hit) << i;
    // Down to 50 (at most flat_limit / 2 live at the next rebuild): back to a flat scan.
    const std::size_t rebuilds = index.stats().rebuilds;
    for (std::size_t i = 0; i < n + 50; ++i) {
        if (i >= n || i % 4 == 0) {
            ASSERT_TRUE(index.erase("s", "k" + std::to_string(i)));
        }
    }
    EXPECT_GT(index.stats().rebuilds, rebuilds);
    EXPECT_EQ(index.stats().graph_scopes, 0U);
    EXPECT_EQ(index.stats().entries, 50U);
    for (std::size_t i = 0; i < n + 100; ++i) {
        const auto r = find(index, "s", question(i));
        if (i >= n + 50) {
            ASSERT_TRUE(r.hit) << i;
            EXPECT_EQ(r.hit->payload, "k" + std::to_string(i));
        } else {
            EXPECT_FALSE(r.hit) << i;
        }
    }
}

TEST_F(SemanticIndexTest, TakesConcurrentInsertsLookupsAndErases) {
    constexpr std::size_t threads = 4;
    constexpr std::size_t per_thread = 300;
    SemanticIndex index{options(200, 32)};
    // Vectors first: the embedder is thread-safe, but this keeps the threads on the index.
    std::vector<std::vector<float>> vectors;
    for (std::size_t i = 0; i < threads * per_thread; ++i) {
        vectors.push_back(embedder_.embed(question(i)));
    }
    std::atomic<std::size_t> wrong{0};
    std::vector<std::thread> workers;
    for (std::size_t t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            for (std::size_t n = 0; n < per_thread; ++n) {
                const std::size_t i = t * per_thread + n;
                const std::string scope = "scope-" + std::to_string(i % 3);
                index.insert(scope, vectors[i], question(i), "k" + std::to_string(i), kLater, kNow);
                const auto r = index.find(scope, vectors[i], question(i), kThreshold, kNow);
                if (r.hit && r.hit->payload != "k" + std::to_string(i)) ++wrong;
                if (n % 5 == 0) index.erase(scope, "k" + std::to_string(i));
            }
        });
    }
    for (auto& w : workers) w.join();
    EXPECT_EQ(wrong.load(), 0U);
    EXPECT_LE(index.stats().entries, 200U + threads);
    EXPECT_GT(index.stats().entries, 100U);
}

TEST_F(SemanticIndexTest, FindIsBusyInsteadOfWaitingForAWriter) {
    SemanticIndex index{options()};
    ASSERT_TRUE(insert(index, "s", "what is the speed of light", "k"));
    ASSERT_TRUE(insert(index, "other", "what is the speed of light", "o"));
    const auto vector = embedder_.embed("what is the speed of light");
    auto held = detail::SemanticIndexAccess::hold_exclusive(index, "s");
    ASSERT_TRUE(held);
    // Another thread, as the gateway's I/O thread: a find that waited would never finish
    // while `held` lives (released below before anything waits on it, so a failure ends).
    auto busy = std::async(std::launch::async, [&] {
        return index.find("s", vector, "what is the speed of light", kThreshold, kNow);
    });
    auto other = std::async(std::launch::async, [&] {
        return index.find("other", vector, "what is the speed of light", kThreshold, kNow);
    });
    const bool busy_returned = busy.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
    const bool other_returned =
        other.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
    held.reset();
    EXPECT_TRUE(busy_returned) << "find() waited for the scope's exclusive lock";
    EXPECT_TRUE(other_returned);
    const SemanticLookup r = busy.get();
    EXPECT_TRUE(r.busy);
    EXPECT_FALSE(r.hit);
    EXPECT_EQ(r.best_similarity, -1.0F);
    const SemanticLookup o = other.get();  // another scope's lock is its own
    EXPECT_FALSE(o.busy);
    EXPECT_TRUE(o.hit);
    const auto after = find(index, "s", "what is the speed of light");
    EXPECT_FALSE(after.busy);
    ASSERT_TRUE(after.hit);
    EXPECT_EQ(after.hit->payload, "k");
}

// Inserts, erases and a replacement made while a rebuild builds its graph (from the hook, on
// the rebuilding thread, with no lock held) all show in the graph it swaps in.
TEST_F(SemanticIndexTest, RebuildTakesInTheChangesMadeWhileItBuilt) {
    SemanticIndex index{options(10'000, 64)};
    constexpr std::size_t n = 391;  // + 9 below: 400
    for (std::size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(insert(index, "s", question(i), "k" + std::to_string(i)));
    }
    // k = 8 near-copies of a question, erased during the rebuild: unless the new graph marks
    // them deleted they fill every candidate slot and hide the live paraphrase.
    static constexpr std::array copies{
        "How do I reverse a list in Python?", "how do i reverse a list in python",
        "How do I reverse a list in Python",  "HOW DO I REVERSE A LIST IN PYTHON?",
        "how do I reverse a list in Python!", "How do I reverse a list in Python??",
        "how do i reverse a list in python.", "How do I reverse a list, in Python?"};
    static_assert(copies.size() == 8);  // SemanticIndexOptions::neighbours
    for (std::size_t i = 0; i < copies.size(); ++i) {
        ASSERT_TRUE(insert(index, "s", copies[i], "copy" + std::to_string(i)));
    }
    const std::string paraphrase = "Could you please tell me how to reverse a list in Python";
    ASSERT_TRUE(insert(index, "s", paraphrase, "paraphrase"));
    int hook_runs = 0;
    detail::SemanticIndexAccess::on_rebuild_built(index, [&] {
        if (hook_runs++ != 0) return;
        // Lookups meanwhile use the old graph, which skips the entries erased before.
        const auto live = find(index, "s", question(350));
        ASSERT_TRUE(live.hit);
        EXPECT_EQ(live.hit->payload, "k350");
        EXPECT_FALSE(find(index, "s", question(5)).hit);
        for (std::size_t i = 1000; i < 1040; ++i) {  // more than one round under the lock
            ASSERT_TRUE(insert(index, "s", question(i), "k" + std::to_string(i)));
        }
        for (std::size_t i = 300; i < 310; ++i) {  // in the snapshot
            ASSERT_TRUE(index.erase("s", "k" + std::to_string(i)));
        }
        for (std::size_t i = 0; i < copies.size(); ++i) {
            ASSERT_TRUE(index.erase("s", "copy" + std::to_string(i)));
        }
        ASSERT_TRUE(index.erase("s", "k1000"));                   // inserted meanwhile
        ASSERT_TRUE(insert(index, "s", question(2000), "k310"));  // replaces k310
    });
    // The 201st erase makes the deleted outnumber the live: that erase runs the rebuild.
    for (std::size_t i = 0; i <= 200; ++i) {
        ASSERT_TRUE(index.erase("s", "k" + std::to_string(i)));
    }
    ASSERT_EQ(hook_runs, 1);
    const auto st = index.stats();
    EXPECT_EQ(st.rebuilds, 1U);
    EXPECT_EQ(st.graph_scopes, 1U);
    EXPECT_LE(st.rebuild_max_locked_adds, 16U);
    EXPECT_EQ(st.entries, (n - 201 - 10) + 1 + 39);
    const auto expect_hit = [&](std::size_t q, const std::string& payload) {
        const auto r = find(index, "s", question(q));
        ASSERT_TRUE(r.hit) << q;
        EXPECT_EQ(r.hit->payload, payload) << q;
    };
    for (std::size_t i = 0; i < n; ++i) {
        if (i <= 200 || (i >= 300 && i <= 310)) {
            EXPECT_FALSE(find(index, "s", question(i)).hit) << i;
        } else {
            expect_hit(i, "k" + std::to_string(i));
        }
    }
    EXPECT_FALSE(find(index, "s", question(1000)).hit);
    for (std::size_t i = 1001; i < 1040; ++i) expect_hit(i, "k" + std::to_string(i));
    expect_hit(2000, "k310");
    const auto reversed = find(index, "s", "how do i reverse a list in python");
    ASSERT_TRUE(reversed.hit);
    EXPECT_EQ(reversed.hit->payload, "paraphrase");
    // The labels freed by the swap are reused, and a second rebuild works from there.
    for (std::size_t i = 3000; i < 3100; ++i) {
        ASSERT_TRUE(insert(index, "s", question(i), "k" + std::to_string(i)));
    }
    for (std::size_t i = 3000; i < 3100; ++i) expect_hit(i, "k" + std::to_string(i));
    for (std::size_t i = 201; i < n; ++i) index.erase("s", "k" + std::to_string(i));
    for (std::size_t i = 1001; i < 1040; ++i) index.erase("s", "k" + std::to_string(i));
    EXPECT_EQ(index.stats().rebuilds, 2U);
    for (std::size_t i = 3000; i < 3100; ++i) expect_hit(i, "k" + std::to_string(i));
    EXPECT_FALSE(find(index, "s", question(2000)).hit);
}

// The same with real threads: a rebuild (held open until the inserter has inserted into the
// old graph) while another thread inserts and a third looks up.
TEST_F(SemanticIndexTest, RebuildsWhileOtherThreadsInsertAndLookUp) {
    constexpr std::size_t n = 600;
    constexpr std::size_t extra = 300;
    SemanticIndex index{options(10'000, 64)};
    std::vector<std::vector<float>> vectors;
    for (std::size_t i = 0; i < n + extra; ++i) vectors.push_back(embedder_.embed(question(i)));
    for (std::size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(
            index.insert("s", vectors[i], question(i), "k" + std::to_string(i), kLater, kNow));
    }
    std::atomic<std::size_t> inserted{0};
    std::atomic<bool> erasing_done{false};
    std::array<std::atomic<bool>, n + extra> erased{};
    detail::SemanticIndexAccess::on_rebuild_built(index, [&] {
        const std::size_t from = inserted.load();
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (inserted.load() < std::min(from + 20, extra) &&
               std::chrono::steady_clock::now() < deadline) {
            std::this_thread::yield();
        }
    });
    std::thread inserter([&] {
        for (std::size_t i = n; i < n + extra; ++i) {
            index.insert("s", vectors[i], question(i), "k" + std::to_string(i), kLater, kNow);
            inserted.fetch_add(1);
        }
    });
    std::atomic<std::size_t> wrong{0};
    std::atomic<std::size_t> lookups{0};
    std::thread finder([&] {
        for (std::size_t q = 0; !erasing_done.load(); q = (q + 7) % (n + extra)) {
            const bool was_erased = erased[q].load();
            const auto r = index.find("s", vectors[q], question(q), kThreshold, kNow);
            ++lookups;
            if (r.hit && (r.hit->payload != "k" + std::to_string(q) || was_erased)) ++wrong;
        }
    });
    // Erase 3 of 4 of the first n (and every 10th inserted one): rebuilds on this thread.
    for (std::size_t i = 0; i < n + extra; ++i) {
        if (i < n ? i % 4 != 0 : i % 10 == 0) {
            while (i >= n && inserted.load() <= i - n) std::this_thread::yield();
            ASSERT_TRUE(index.erase("s", "k" + std::to_string(i))) << i;
            erased[i].store(true);
        }
    }
    inserter.join();
    erasing_done.store(true);
    finder.join();
    EXPECT_EQ(wrong.load(), 0U);
    EXPECT_GT(lookups.load(), 0U);
    EXPECT_GE(index.stats().rebuilds, 1U);
    for (std::size_t i = 0; i < n + extra; ++i) {
        const auto r = index.find("s", vectors[i], question(i), kThreshold, kNow);
        if (erased[i].load()) {
            EXPECT_FALSE(r.hit) << i;
        } else {
            ASSERT_TRUE(r.hit) << i;
            EXPECT_EQ(r.hit->payload, "k" + std::to_string(i));
        }
    }
}

}  // namespace
}  // namespace tokenradar::cache

// cache_bench's two modes. `guard` scores every pair of a paraphrase TSV with the built-in
// embedder and the lexical guard, pair by pair and through a SemanticIndex holding every
// cached question (where a query may also hit another row's question). `lookup` fills a
// SemanticIndex with synthetic questions and times embed + find.

#include "bench_modes.hpp"
#include <malloc.h>
#include <time.h>

#include <tokenradar/cache/embedder.hpp>
#include <tokenradar/cache/lexical_guard.hpp>
#include <tokenradar/cache/semantic_index.hpp>
#include <tokenradar/stats/percentiles.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tokenradar::bench_cache {
namespace {

using Clock = std::chrono::steady_clock;
using cache::BuiltinEmbedder;

struct Row {
    std::string cached;
    std::string query;
    bool expected = false;
    std::string kind;
};

std::vector<Row> read_rows(const std::string& path) {
    std::ifstream in{path};
    if (!in) throw std::runtime_error("cannot read " + path);
    std::vector<Row> rows;
    std::string line;
    std::size_t line_no = 0;
    while (std::getline(in, line)) {
        ++line_no;
        if (line.empty() || line.front() == '#') continue;
        std::vector<std::string> fields;
        std::size_t start = 0;
        for (;;) {
            const auto tab = line.find('\t', start);
            fields.push_back(line.substr(start, tab - start));
            if (tab == std::string::npos) break;
            start = tab + 1;
        }
        if (fields.size() < 3 || (fields[2] != "yes" && fields[2] != "no")) {
            throw std::runtime_error(
                fmt::format("{}:{}: expected cached<TAB>query<TAB>yes|no", path, line_no));
        }
        rows.push_back({fields[0], fields[1], fields[2] == "yes",
                        fields.size() > 3 ? fields[3] : std::string{}});
    }
    return rows;
}

struct Counts {
    std::size_t right = 0;  // hits on a yes row (with the right entry, through the index)
    std::size_t wrong = 0;  // hits on a no row, or on another row's question
};

std::string precision(const Counts& c) {
    if (c.right + c.wrong == 0) return "-";
    return fmt::format(
        "{:.1f}%", 100.0 * static_cast<double>(c.right) / static_cast<double>(c.right + c.wrong));
}
std::string hit_rate(const Counts& c, std::size_t yes_rows) {
    return fmt::format("{:.1f}%",
                       100.0 * static_cast<double>(c.right) / static_cast<double>(yes_rows));
}

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

std::string percentiles_us(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return fmt::format("p50 {:.1f}  p90 {:.1f}  p99 {:.1f}  p99.9 {:.1f}  max {:.1f}",
                       stats::percentile_sorted(v, 0.50), stats::percentile_sorted(v, 0.90),
                       stats::percentile_sorted(v, 0.99), stats::percentile_sorted(v, 0.999),
                       v.back());
}

std::size_t heap_in_use() {
    const struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

}  // namespace

double thread_cpu_us() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

int run_guard(const GuardBenchOptions& options) {
    const std::vector<Row> rows = read_rows(options.tsv);
    const BuiltinEmbedder embedder{options.dimension};
    const float detail = options.detail_threshold > 0 ? options.detail_threshold
                                                      : BuiltinEmbedder::kDefaultThreshold;
    cache::GuardOptions typos;
    typos.allow_typos = true;

    std::size_t yes_rows = 0;
    std::vector<float> sims;
    std::vector<bool> guard_ok;
    std::vector<bool> typo_ok;
    std::vector<cache::GuardVerdict> verdicts;
    for (const Row& r : rows) {
        yes_rows += r.expected ? 1 : 0;
        sims.push_back(cache::cosine(embedder.embed(r.cached), embedder.embed(r.query)));
        const auto q = cache::lexical_profile(r.query);
        const auto c = cache::lexical_profile(r.cached);
        verdicts.push_back(cache::check_lexical(q, c));
        guard_ok.push_back(verdicts.back().compatible());
        typo_ok.push_back(cache::check_lexical(q, c, typos).compatible());
    }
    fmt::print("{}: {} pairs ({} paraphrases, {} hard negatives), dimension {}\n\n", options.tsv,
               rows.size(), yes_rows, rows.size() - yes_rows, options.dimension);

    fmt::print("pair by pair: precision (wrong hits) and hit rate of the paraphrases\n");
    fmt::print("{:>9} | {:>16} {:>8} | {:>16} {:>8} | {:>16} {:>8}\n", "threshold",
               "similarity only", "hits", "+ guard", "hits", "+ guard, typos", "hits");
    std::vector<float> thresholds;
    for (int t = 60; t <= 98; t += 2) thresholds.push_back(static_cast<float>(t) / 100.0F);
    thresholds.push_back(detail);  // the default's own row
    std::sort(thresholds.begin(), thresholds.end());
    thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());
    for (const float threshold : thresholds) {
        Counts plain;
        Counts guarded;
        Counts typo;
        for (std::size_t i = 0; i < rows.size(); ++i) {
            if (sims[i] < threshold) continue;
            auto& slot = rows[i].expected ? plain.right : plain.wrong;
            ++slot;
            if (guard_ok[i]) ++(rows[i].expected ? guarded.right : guarded.wrong);
            if (typo_ok[i]) ++(rows[i].expected ? typo.right : typo.wrong);
        }
        fmt::print("{:>9.2f} | {:>9} ({:>4}) {:>8} | {:>9} ({:>4}) {:>8} | {:>9} ({:>4}) {:>8}\n",
                   threshold, precision(plain), plain.wrong, hit_rate(plain, yes_rows),
                   precision(guarded), guarded.wrong, hit_rate(guarded, yes_rows), precision(typo),
                   typo.wrong, hit_rate(typo, yes_rows));
    }

    // Through an index of every cached question: a query may hit another row's question.
    cache::SemanticIndexOptions io;
    io.dimension = options.dimension;
    cache::SemanticIndex index{io};
    constexpr std::int64_t now = 1;
    std::set<std::string> cached_questions;
    for (const Row& r : rows) cached_questions.insert(r.cached);
    for (const auto& q : cached_questions) {
        index.insert("scope", embedder.embed(q), q, q, now + 1'000'000, now);
    }
    fmt::print("\nthrough one index of the {} cached questions (k = {}):\n",
               cached_questions.size(), io.neighbours);
    fmt::print("{:>9} | {:>10} {:>6} {:>8}\n", "threshold", "precision", "wrong", "hits");
    for (int t = 70; t <= 98; t += 2) {
        const float threshold = static_cast<float>(t) / 100.0F;
        Counts c;
        for (const Row& r : rows) {
            const auto found =
                index.find("scope", embedder.embed(r.query), r.query, threshold, now);
            if (!found.hit) continue;
            ++(r.expected && found.hit->payload == r.cached ? c.right : c.wrong);
        }
        fmt::print("{:>9.2f} | {:>10} {:>6} {:>8}\n", threshold, precision(c), c.wrong,
                   hit_rate(c, yes_rows));
    }

    fmt::print(
        "\nby kind at threshold {:.2f} (pair by pair): rows, hits without / with the guard\n",
        detail);
    std::map<std::string, std::array<std::size_t, 3>> by_kind;
    std::map<std::string, std::size_t> reasons;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        auto& k = by_kind[(rows[i].expected ? "yes " : "no  ") + rows[i].kind];
        ++k[0];
        if (sims[i] >= detail) {
            ++k[1];
            if (guard_ok[i]) ++k[2];
            if (!guard_ok[i]) ++reasons[std::string{to_string(verdicts[i].reason)}];
        }
    }
    for (const auto& [kind, k] : by_kind) {
        fmt::print("  {:<22} {:>4} {:>5} {:>5}\n", kind, k[0], k[1], k[2]);
    }
    fmt::print("guard rejections over the threshold by rule:");
    for (const auto& [reason, n] : reasons) fmt::print(" {} {}", reason, n);
    fmt::print("\n");

    if (options.show_errors) {
        fmt::print("\nwrong hits and missed paraphrases at {:.2f} (with the guard):\n", detail);
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const bool hit = sims[i] >= detail && guard_ok[i];
            if (hit == rows[i].expected) continue;
            fmt::print("  {} {:.3f} [{}: {}] {} | {}\n", hit ? "WRONG" : "miss ", sims[i],
                       to_string(verdicts[i].reason), verdicts[i].detail, rows[i].cached,
                       rows[i].query);
        }
    }
    return 0;
}

namespace {

// Synthetic questions: templates over a vocabulary of pseudo-words, numbers and entity
// names, so that most questions differ in content words as real traffic does.
class QuestionGenerator {
  public:
    explicit QuestionGenerator(std::uint64_t seed) : rng_(seed) {
        static constexpr std::array syllables{"ka",  "lo",  "mi",  "tru", "sen", "bor", "vel",
                                              "qua", "dri", "pan", "zo",  "rek", "ful", "mo",
                                              "sti", "ger", "nal", "pri", "cos", "tem"};
        std::uniform_int_distribution<std::size_t> syl(0, syllables.size() - 1);
        std::uniform_int_distribution<int> len(2, 3);
        for (int i = 0; i < 4000; ++i) {
            std::string w;
            for (int n = len(rng_); n > 0; --n) w += syllables[syl(rng_)];
            words_.push_back(std::move(w));
        }
    }

    std::string next() {
        static constexpr std::array templates{"How do I {} a {} in {}?",
                                              "What is the {} of {}?",
                                              "Why does the {} {} when {}?",
                                              "Can you explain {} to a {} year old {}?",
                                              "Write a {} about {} and {}",
                                              "What's the difference between {} and {}?",
                                              "Is it safe to {} {} with {}?",
                                              "Give me {} ideas for a {} {}",
                                              "How many {} are in a {} of {}?",
                                              "Convert {} {} to {}",
                                              "Summarize the {} of {} in {} words",
                                              "Which {} is better for {}, {} or {}?"};
        std::uniform_int_distribution<std::size_t> pick_template(0, templates.size() - 1);
        std::string_view t = templates[pick_template(rng_)];
        std::string out;
        for (std::size_t pos = 0;;) {
            const auto slot = t.find("{}", pos);
            out += t.substr(pos, slot - pos);
            if (slot == std::string_view::npos) break;
            out += filler();
            pos = slot + 2;
        }
        return out;
    }

    // The same question as a user might retype it: filler and casing, no content change.
    std::string rephrase(const std::string& q) {
        static constexpr std::array prefixes{"Please tell me: ", "Hey, ",
                                             "Quick question: ", "Could you tell me ", ""};
        std::uniform_int_distribution<std::size_t> pick(0, prefixes.size() - 1);
        std::string out = prefixes[pick(rng_)];
        for (const char c : q) {
            out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
        }
        return out;
    }

    std::mt19937_64& rng() { return rng_; }

  private:
    std::string filler() {
        std::uniform_int_distribution<int> kind(0, 9);
        if (kind(rng_) == 0)
            return std::to_string(std::uniform_int_distribution<int>(1, 999)(rng_));
        std::uniform_int_distribution<std::size_t> word(0, words_.size() - 1);
        return words_[word(rng_)];
    }

    std::mt19937_64 rng_;
    std::vector<std::string> words_;
};

void lookup_run(const LookupBenchOptions& o, std::size_t scopes) {
    QuestionGenerator gen{o.seed};
    std::vector<std::string> questions(o.entries);
    for (auto& q : questions) q = gen.next();
    const auto scope_of = [&](std::size_t i) {
        return fmt::format("tenant-{:04}/model-a/ctx-9f2c41d07e8b3a65", i % scopes);
    };
    std::vector<std::string> scope_names(std::min(scopes, o.entries));
    for (std::size_t i = 0; i < scope_names.size(); ++i) scope_names[i] = scope_of(i);

    const BuiltinEmbedder embedder{o.dimension};
    cache::SemanticIndexOptions io;
    io.dimension = o.dimension;
    io.max_entries = o.entries;
    io.neighbours = o.neighbours;
    io.hnsw_ef_search = o.ef_search;
    io.hnsw_m = o.m;
    io.hnsw_ef_construction = o.ef_construction;
    constexpr std::int64_t now = 1'000'000;
    const std::size_t heap_before = heap_in_use();
    auto index = std::make_unique<cache::SemanticIndex>(io);
    std::vector<float> v(o.dimension);
    const auto fill_start = Clock::now();
    for (std::size_t i = 0; i < o.entries; ++i) {
        embedder.embed_into(questions[i], v);
        index->insert(scope_names[i % scope_names.size()], v, questions[i],
                      fmt::format("{:032x}", i), now + 3'600'000'000, now);
    }
    const double fill_s = std::chrono::duration<double>(Clock::now() - fill_start).count();
    const std::size_t heap_after = heap_in_use();
    const auto st = index->stats();

    std::vector<double> embed_us;
    std::vector<double> find_us;
    std::vector<double> total_us;
    std::vector<double> total_cpu_us;
    std::size_t hits = 0;
    std::size_t right = 0;
    std::size_t wanted = 0;
    std::uniform_int_distribution<std::size_t> pick(0, o.entries - 1);
    for (std::size_t n = 0; n < o.queries; ++n) {
        std::size_t target = o.entries;
        std::string query;
        if (n % 2 == 0) {
            target = pick(gen.rng());
            query = gen.rephrase(questions[target]);
            ++wanted;
        } else {
            query = gen.next();
        }
        const std::string& scope =
            scope_names[(target < o.entries ? target : n) % scope_names.size()];
        const double cpu0 = thread_cpu_us();
        const auto t0 = Clock::now();
        embedder.embed_into(query, v);
        const auto t1 = Clock::now();
        const auto found =
            index->find(scope, v, query, BuiltinEmbedder::kDefaultThreshold, now + 1);
        const auto t2 = Clock::now();
        total_cpu_us.push_back(thread_cpu_us() - cpu0);
        embed_us.push_back(micros(t1 - t0));
        find_us.push_back(micros(t2 - t1));
        total_us.push_back(micros(t2 - t0));
        if (found.hit) {
            ++hits;
            // Right: the asked (or rephrased) question's entry, or one with the very same
            // question (the generator repeats a few questions under other keys).
            const std::string& asked = target < o.entries ? questions[target] : query;
            if (found.hit->question == asked) {
                ++right;
            } else if (hits - right <= 5) {
                fmt::print("  hit with another question: \"{}\" -> \"{}\"\n", query,
                           found.hit->question);
            }
        }
    }
    fmt::print(
        "{} entries in {} scope(s) ({} with an HNSW graph), dimension {}, k {}, M {}, "
        "ef_construction {}, ef {}\n",
        st.entries, st.scopes, st.graph_scopes, o.dimension, o.neighbours, o.m, o.ef_construction,
        o.ef_search);
    fmt::print(
        "  fill: {:.1f} s ({:.1f} us per insert incl. embedding); heap {:.1f} MB, {:.0f} "
        "bytes per entry\n",
        fill_s, fill_s * 1e6 / static_cast<double>(o.entries),
        static_cast<double>(heap_after - heap_before) / 1e6,
        static_cast<double>(heap_after - heap_before) / static_cast<double>(o.entries));
    fmt::print(
        "  {} lookups ({} of stored questions rephrased): {} hits ({:.1f}% of the "
        "rephrased), {} of them with another question\n",
        o.queries, wanted, hits, 100.0 * static_cast<double>(hits) / static_cast<double>(wanted),
        hits - right);
    fmt::print("  embed       us: {}\n", percentiles_us(embed_us));
    fmt::print("  find        us: {}\n", percentiles_us(find_us));
    fmt::print("  embed+find  us: {}\n", percentiles_us(total_us));
    fmt::print("  (CPU time)  us: {}\n\n", percentiles_us(total_cpu_us));
}

}  // namespace

int run_lookup(const LookupBenchOptions& options) {
    const std::vector<std::size_t> scopes =
        options.scopes.empty() ? std::vector<std::size_t>{1, 10, 1000} : options.scopes;
    for (const std::size_t s : scopes) lookup_run(options, std::max<std::size_t>(s, 1));
    return 0;
}

int run_rebuild(const RebuildBenchOptions& o) {
    QuestionGenerator gen{o.seed};
    const std::size_t extra = o.entries / 10;  // at most, inserted while erasing and rebuilding
    std::vector<std::string> questions(o.entries + extra);
    for (auto& q : questions) q = gen.next();
    std::vector<std::string> rephrased(o.entries);
    for (std::size_t i = 0; i < o.entries; ++i) rephrased[i] = gen.rephrase(questions[i]);
    const BuiltinEmbedder embedder{o.dimension};
    cache::SemanticIndexOptions io;
    io.dimension = o.dimension;
    io.max_entries = o.entries + extra;
    const std::string scope = "tenant-0001/model-a/ctx-9f2c41d07e8b3a65";
    constexpr std::int64_t now = 1'000'000;
    constexpr std::int64_t expires = now + 3'600'000'000;
    const auto payload = [](std::size_t i) { return fmt::format("{:032x}", i); };
    cache::SemanticIndex index{io};
    std::vector<float> v(o.dimension);
    const auto fill_start = Clock::now();
    for (std::size_t i = 0; i < o.entries; ++i) {
        embedder.embed_into(questions[i], v);
        index.insert(scope, v, questions[i], payload(i), expires, now);
    }
    fmt::print("{} entries in one scope, dimension {}: filled in {:.1f} s\n", o.entries,
               o.dimension, std::chrono::duration<double>(Clock::now() - fill_start).count());

    // Erased in order 0, 1, 2...: the lookup thread asks for stored questions, any of them.
    std::atomic<std::size_t> erased_below{0};
    std::atomic<bool> done{false};
    struct Probe {
        double start_us = 0;  // since `base`
        double end_us = 0;
        bool busy = false;
    };
    std::vector<Probe> probes;
    std::size_t wrong = 0;  // hits on an entry erased before the lookup began
    const auto base = Clock::now();
    std::thread looker([&] {
        std::vector<float> q(o.dimension);
        std::mt19937_64 rng{o.seed + 1};
        std::uniform_int_distribution<std::size_t> pick(0, o.entries - 1);
        while (!done.load()) {
            const std::size_t target = pick(rng);
            embedder.embed_into(rephrased[target], q);
            const std::size_t erased_before = erased_below.load();
            const auto t0 = Clock::now();
            const auto found = index.find(scope, q, rephrased[target],
                                          BuiltinEmbedder::kDefaultThreshold, now + 1);
            probes.push_back({micros(t0 - base), micros(Clock::now() - base), found.busy});
            if (found.hit) {
                const std::size_t i = std::stoull(found.hit->payload, nullptr, 16);
                if (i < erased_before) ++wrong;
            }
            // Paced like requests arriving, so that the busy share is the chance that a
            // lookup at a random moment finds the lock held (busy lookups return in ~1 us).
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    });
    std::atomic<std::size_t> inserted{0};
    std::thread inserter([&] {
        std::vector<float> w(o.dimension);
        for (std::size_t i = o.entries;
             o.insert_interval_us != 0 && i < o.entries + extra && !done.load(); ++i) {
            embedder.embed_into(questions[i], w);
            index.insert(scope, w, questions[i], payload(i), expires, now);
            inserted.fetch_add(1);
            // Paced (a busy gateway's background inserter): back to back, inserts would hold
            // the lock nearly all the time and a run of busy lookups would span many holds.
            std::this_thread::sleep_for(std::chrono::microseconds(o.insert_interval_us));
        }
    });
    const auto erase_start = Clock::now();
    double rebuild_from_us = 0;  // the longest erase: the one that ran the rebuild
    double rebuild_to_us = 0;
    std::size_t erases = 0;
    for (std::size_t i = 0; i < o.entries && index.stats().rebuilds == 0; ++i) {
        const auto t0 = Clock::now();
        index.erase(scope, payload(i));
        const auto t1 = Clock::now();
        if (micros(t1 - t0) > rebuild_to_us - rebuild_from_us) {
            rebuild_from_us = micros(t0 - base);
            rebuild_to_us = micros(t1 - base);
        }
        erased_below.store(i + 1);
        ++erases;
    }
    done.store(true);
    inserter.join();
    looker.join();
    const auto st = index.stats();
    fmt::print(
        "  erased {} (the last ran the rebuild: {:.1f} s) in {:.1f} s; {} inserted meanwhile "
        "by another thread (one per {} us + the insert); rebuilds {}, entries {}\n",
        erases, (rebuild_to_us - rebuild_from_us) / 1e6,
        std::chrono::duration<double>(Clock::now() - erase_start).count(), inserted.load(),
        o.insert_interval_us, st.rebuilds, st.entries);
    fmt::print(
        "  most entries a rebuild added under the exclusive lock: {}; hits on erased "
        "entries: {}\n",
        st.rebuild_max_locked_adds, wrong);
    // A run of busy lookups: from the first one's start to the next free one's end, an upper
    // bound of how long one writer held the lock as the looker saw it (preemption included).
    const auto report = [&](const char* what, double from_us, double to_us) {
        std::size_t n = 0;
        std::size_t busy = 0;
        std::size_t run = 0;
        std::size_t longest_run = 0;
        double run_from = 0;
        double longest_run_us = 0;
        std::vector<double> find_us;
        for (const Probe& p : probes) {
            if (p.start_us < from_us || p.start_us > to_us) continue;
            ++n;
            find_us.push_back(p.end_us - p.start_us);
            if (p.busy) {
                ++busy;
                if (run++ == 0) run_from = p.start_us;
            } else if (run != 0) {
                longest_run = std::max(longest_run, run);
                longest_run_us = std::max(longest_run_us, p.end_us - run_from);
                run = 0;
            }
        }
        if (n == 0) return;
        fmt::print(
            "  {}: {} lookups, {} busy ({:.1f}%); longest busy run {} lookups, {:.0f} us\n"
            "    find us (wall): {}\n",
            what, n, busy, 100.0 * static_cast<double>(busy) / static_cast<double>(n), longest_run,
            longest_run_us, percentiles_us(find_us));
    };
    report("during the rebuild", rebuild_from_us, rebuild_to_us);
    report("whole run (erases back to back, then the rebuild)", 0, 1e18);
    std::size_t found = 0;  // afterwards: every surviving original and every inserted one
    std::size_t live = 0;
    for (std::size_t i = erases; i < o.entries + inserted.load(); i += 7) {
        ++live;
        embedder.embed_into(i < o.entries ? rephrased[i] : questions[i], v);
        const auto r = index.find(scope, v, i < o.entries ? rephrased[i] : questions[i],
                                  BuiltinEmbedder::kDefaultThreshold, now + 1);
        if (r.hit && r.hit->question == questions[i]) ++found;
    }
    fmt::print("  afterwards: {} of {} live entries sampled (every 7th) found ({:.1f}%)\n", found,
               live, 100.0 * static_cast<double>(found) / static_cast<double>(live));
    return 0;
}

}  // namespace tokenradar::bench_cache

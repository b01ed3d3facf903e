#include <tokenradar/bench/workload.hpp>

#include <tokenradar/core/config.hpp>
#include <tokenradar/core/ids.hpp>

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <random>

namespace tokenradar::bench {
namespace {

// Ordinary English words for filler text: the token estimate of 4 bytes per token holds
// roughly for them, and they tokenize like real prose on real providers.
constexpr std::array<std::string_view, 64> kWords = {
    "the",      "system",   "latency", "model",   "request", "answer",  "network", "token",
    "stream",   "provider", "region",  "measure", "careful", "quickly", "because", "between",
    "result",   "history",  "river",   "garden",  "market",  "window",  "silver",  "orange",
    "mountain", "evening",  "library", "kitchen", "teacher", "science", "journey", "picture",
    "morning",  "village",  "weather", "ancient", "machine", "thought", "balance", "process",
    "number",   "surface",  "pattern", "storage", "reading", "writing", "example", "problem",
    "simple",   "general",  "special", "certain", "natural", "average", "popular", "private",
    "public",   "central",  "western", "eastern", "digital", "written", "spoken",  "careful"};

std::string filler(std::uint64_t seed, std::int64_t tokens) {
    std::mt19937_64 rng(seed);
    std::string text;
    const auto target_bytes = static_cast<std::size_t>(tokens) * 4;
    text.reserve(target_bytes + 16);
    std::size_t words = 0;
    while (text.size() < target_bytes) {
        if (!text.empty()) text.push_back(' ');
        text.append(kWords[rng() % kWords.size()]);
        if (++words % 14 == 0) text.push_back('.');
    }
    return text;
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
    for (std::size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
    return text;
}

std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// Hashes of one request: everything a prompt draws comes from these, so it is reproducible.
std::uint64_t request_hash(std::string_view what, std::uint64_t seed, std::uint64_t sequence,
                           std::uint64_t index) {
    // FNV's high bits barely move between neighbouring indexes: mix them before taking a
    // fraction (the shares of repeats were 2.5 points off over 20,000 requests).
    return splitmix64(fnv1a64(fmt::format("{}:{}:{}:{}", what, seed, sequence, index)));
}

double unit_interval(std::uint64_t h) { return static_cast<double>(h >> 11) * 0x1p-53; }

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// Contractions people use or spell out when they ask again: both forms keep every word that
// carries meaning ("is", "am", "are", "us" are not content words) and no negation ("don't"
// would turn "not" into "n't", which a lexical guard may count differently).
struct Contraction {
    std::string_view full;
    std::string_view short_form;
};
constexpr std::array<Contraction, 12> kContractions = {{{"what is", "what's"},
                                                        {"who is", "who's"},
                                                        {"where is", "where's"},
                                                        {"how is", "how's"},
                                                        {"that is", "that's"},
                                                        {"there is", "there's"},
                                                        {"it is", "it's"},
                                                        {"i am", "i'm"},
                                                        {"you are", "you're"},
                                                        {"we are", "we're"},
                                                        {"they are", "they're"},
                                                        {"let us", "let's"}}};

std::string lowered(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// The first whole-word occurrence of `phrase` in `lower` (already lower case), or npos.
std::size_t find_phrase(const std::string& lower, std::string_view phrase) {
    for (std::size_t at = lower.find(phrase); at != std::string::npos;
         at = lower.find(phrase, at + 1)) {
        const std::size_t end = at + phrase.size();
        const bool starts = at == 0 || !is_word_char(lower[at - 1]);
        const bool ends = end == lower.size() || (!is_word_char(lower[end]) && lower[end] != '\'');
        if (starts && ends) return at;
    }
    return std::string::npos;
}

// Contracts the first phrase that can be contracted, or spells out the first contraction.
std::string swap_contraction(std::string text) {
    const std::string lower = lowered(text);
    std::size_t best = std::string::npos;
    std::string_view from;
    std::string_view to;
    for (const Contraction& c : kContractions) {
        for (const auto& [a, b] :
             {std::pair{c.full, c.short_form}, std::pair{c.short_form, c.full}}) {
            const std::size_t at = find_phrase(lower, a);
            if (at < best) {
                best = at;
                from = a;
                to = b;
            }
        }
    }
    if (best == std::string::npos) return text;
    std::string replacement(to);
    const bool upper = std::isupper(static_cast<unsigned char>(text[best])) != 0;
    if (upper || replacement.starts_with("i'") || replacement.starts_with("i ")) {
        replacement[0] =
            static_cast<char>(std::toupper(static_cast<unsigned char>(replacement[0])));
    }
    text.replace(best, from.size(), replacement);
    return text;
}

// "A? B." -> "B. A?": the sentences of a question in another order keep its meaning.
std::string rotate_sentences(const std::string& text) {
    for (std::size_t i = 0; i + 1 < text.size(); ++i) {
        const char c = text[i];
        if ((c == '.' || c == '?' || c == '!') && text[i + 1] == ' ') {
            std::string rest = text.substr(i + 2);
            while (!rest.empty() && rest.front() == ' ') rest.erase(0, 1);
            if (rest.empty()) return text;
            return fmt::format("{} {}", rest, text.substr(0, i + 1));
        }
    }
    return text;
}

constexpr std::array<std::string_view, 4> kPrefixes = {
    "Please, ", "Could you tell me: ", "Quick question: ", "Hi! "};
constexpr std::array<std::string_view, 4> kSuffixes = {" Thanks!", " Thank you.", " Please.",
                                                       " Thanks in advance."};

}  // namespace

Workload load_workload(std::string_view name_or_path, const std::filesystem::path& workloads_dir) {
    std::filesystem::path path(name_or_path);
    if (path.extension() != ".toml") path = workloads_dir / fmt::format("{}.toml", name_or_path);
    if (!std::filesystem::exists(path)) {
        throw ConfigError(fmt::format(
            "workload '{}': no file {} (give a workload name from {} or a path to a .toml file)",
            name_or_path, path.string(), workloads_dir.string()));
    }
    auto cfg = ConfigTable::load_file(path);
    cfg.reject_unknown_keys({"name", "task", "description", "max_tokens", "stream", "temperature",
                             "repeat_exact", "repeat_reworded", "prompt", "extra_body"});
    Workload w;
    w.name = cfg.get_string("name", path.stem().string());
    w.task = cfg.get_string("task", w.name);
    w.description = cfg.get_string("description", "");
    w.max_tokens = cfg.get_integer("max_tokens", 300, 1, 1'000'000);
    w.stream = cfg.get_bool("stream", true);
    w.temperature = cfg.optional_number("temperature");
    if (w.temperature && (*w.temperature < 0 || *w.temperature > 2)) {
        cfg.fail("temperature", "a number from 0 to 2");
    }
    w.repeat_exact = cfg.get_number("repeat_exact", 0, 0, 1);
    w.repeat_reworded = cfg.get_number("repeat_reworded", 0, 0, 1);
    if (w.repeat_exact + w.repeat_reworded > 1) {
        cfg.fail("repeat_reworded",
                 fmt::format("a fraction from 0 to {:g} (repeat_exact + repeat_reworded <= 1)",
                             1 - w.repeat_exact));
    }
    if (auto extra = cfg.json_object("extra_body")) w.extra_body = std::move(*extra);
    auto prompt = cfg.table("prompt");
    if (!prompt) cfg.fail("prompt", "a [prompt] table with at least `user`");
    prompt->reject_unknown_keys({"system", "shared_prefix_tokens", "shared_prefixes",
                                 "filler_tokens", "user", "topics", "unique"});
    w.system = prompt->get_string("system", "");
    w.shared_prefix_tokens = prompt->get_integer("shared_prefix_tokens", 0, 0, 1'000'000);
    w.shared_prefixes = prompt->get_integer("shared_prefixes", 1, 1, 1'000'000);
    if (w.shared_prefixes > 1 && w.shared_prefix_tokens == 0) {
        prompt->fail("shared_prefixes", "shared_prefix_tokens above 0 first");
    }
    w.filler_tokens = prompt->get_integer("filler_tokens", 0, 0, 2'000'000);
    w.user_template = prompt->require_string("user");
    w.topics = prompt->get_strings("topics");
    w.unique = prompt->get_bool("unique", true);
    if (w.user_template.find("{topic}") != std::string::npos && w.topics.empty()) {
        prompt->fail("topics", "a non-empty array of strings (prompt.user uses {topic})");
    }
    return w;
}

namespace {

// The question of a fresh request (its nonce and topic), without filler.
std::string fresh_question(const Workload& w, std::uint64_t seed, std::uint64_t index,
                           std::uint64_t sequence, std::uint64_t request_seed) {
    std::string user = w.user_template;
    if (!w.topics.empty()) {
        // Without a nonce the topics are asked in turn, so fresh questions repeat only after
        // every topic was asked (a repeat is what repeat_exact says, not a collision).
        const std::uint64_t turn =
            w.unique ? request_seed : index + fnv1a64(fmt::format("{}:{}", seed, sequence));
        user = replace_all(std::move(user), "{topic}", w.topics[turn % w.topics.size()]);
    }
    const std::string nonce = w.unique ? fmt::format("{:016x}", request_seed) : std::string("0");
    if (user.find("{nonce}") != std::string::npos) {
        user = replace_all(std::move(user), "{nonce}", nonce);
    } else if (w.unique) {
        user = fmt::format("[{}] {}", nonce, user);
    }
    return user;
}

}  // namespace

PromptOrigin prompt_origin(const Workload& w, std::uint64_t seed, std::uint64_t index,
                           std::uint64_t sequence) {
    const double repeats = w.repeat_exact + w.repeat_reworded;
    if (index == 0 || repeats <= 0) return {Repeat::fresh, index};
    const std::uint64_t h = request_hash("repeat", seed, sequence, index);
    const double u = unit_interval(h);
    if (u >= repeats) return {Repeat::fresh, index};
    const std::uint64_t of =
        index - 1 - splitmix64(h ^ 0x5851f42d4c957f2dULL) % std::min(index, kRepeatWindow);
    if (u < w.repeat_exact) return {Repeat::exact, of};
    // A rewording of a rewording drifts: reword the fresh question it all started from.
    PromptOrigin root = prompt_origin(w, seed, of, sequence);
    while (root.repeat == Repeat::exact) root = prompt_origin(w, seed, root.of, sequence);
    return {Repeat::reworded, root.of};
}

PromptSpec make_prompt(const Workload& w, std::uint64_t seed, std::uint64_t index,
                       std::uint64_t sequence) {
    PromptSpec p;
    p.max_tokens = w.max_tokens;
    p.stream = w.stream;
    p.temperature = w.temperature;
    // The shared prefix depends on the seed only, so every request of a run shares it (or,
    // with several, every request that drew the same one).
    if (w.shared_prefix_tokens > 0) {
        const std::string which =
            w.shared_prefixes > 1
                ? fmt::format(":{}", request_hash("prefix", seed, sequence, index) %
                                         static_cast<std::uint64_t>(w.shared_prefixes))
                : std::string();
        p.system =
            filler(fnv1a64(fmt::format("{}:{}{}", w.name, seed, which)), w.shared_prefix_tokens);
        if (!w.system.empty()) p.system = fmt::format("{}\n\n{}", w.system, p.system);
    } else {
        p.system = w.system;
    }
    PromptOrigin origin = prompt_origin(w, seed, index, sequence);
    std::uint64_t reworded_by = index;  // the request whose rewording this is, if any
    while (origin.repeat == Repeat::exact) {
        reworded_by = origin.of;
        origin = prompt_origin(w, seed, origin.of, sequence);
    }
    const std::uint64_t asked = origin.of;  // a fresh request
    const std::uint64_t request_seed = fnv1a64(fmt::format("{}:{}:{}", seed, sequence, asked));
    std::string user = fresh_question(w, seed, asked, sequence, request_seed);
    if (origin.repeat == Repeat::reworded) {
        user = reword(user, request_hash("reword", seed, sequence, reworded_by));
    }
    if (w.filler_tokens > 0) {
        user = fmt::format("{}\n\n{}", filler(request_seed, w.filler_tokens), user);
    }
    p.user = std::move(user);
    return p;
}

std::string reword(std::string_view original, std::uint64_t variant) {
    std::string text(original);
    std::uint64_t bits = splitmix64(variant);
    const auto take = [&bits](std::uint64_t n) {
        const std::uint64_t v = bits % n;
        bits /= n;
        return v;
    };
    if (take(2) == 0) text = rotate_sentences(text);
    if (take(2) == 0) text = swap_contraction(std::move(text));
    switch (take(3)) {
        case 0:
            text = lowered(text);
            break;
        case 1:
            if (text.size() > 1 && std::isupper(static_cast<unsigned char>(text[0])) &&
                std::islower(static_cast<unsigned char>(text[1]))) {
                text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
            }
            break;
        default:
            break;
    }
    switch (take(4)) {
        case 0:  // drop the final mark
            if (!text.empty() && (text.back() == '?' || text.back() == '.')) text.pop_back();
            break;
        case 1:
            if (!text.empty() && text.back() == '?') text.append("?");
            break;
        case 2:
            if (!text.empty() && text.back() == '?') text.insert(text.size() - 1, " ");
            break;
        default:
            break;
    }
    if (const std::uint64_t prefix = take(kPrefixes.size() + 2); prefix < kPrefixes.size()) {
        if (text.size() > 1 && std::isupper(static_cast<unsigned char>(text[0])) &&
            std::islower(static_cast<unsigned char>(text[1]))) {
            text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
        }
        text.insert(0, kPrefixes[prefix]);
    }
    if (const std::uint64_t suffix = take(kSuffixes.size() + 2); suffix < kSuffixes.size()) {
        text.append(kSuffixes[suffix]);
    }
    switch (take(4)) {
        case 0:
            if (const auto space = text.find(' '); space != std::string::npos)
                text.insert(space, " ");
            break;
        case 1:
            text.append(" ");
            break;
        case 2:
            text.insert(0, " ");
            break;
        default:
            break;
    }
    if (text == original) text.append(kSuffixes[0]);
    return text;
}

}  // namespace tokenradar::bench

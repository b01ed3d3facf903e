#include <tokenradar/cache/lexical_guard.hpp>

#include <algorithm>
#include <array>
#include <unordered_map>
#include <unordered_set>

#include "text_words.hpp"

namespace tokenradar::cache {
namespace {

using detail::Word;

bool has_digit(std::string_view w) {
    return std::any_of(w.begin(), w.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A number word's value, or empty. Compound numbers ("twenty one") stay two numbers on one
// side and one ("21") on the other: a miss, never a wrong hit.
std::string_view number_word(std::string_view w) {
    static const std::unordered_map<std::string_view, std::string_view> number_words{
        {"zero", "0"},      {"one", "1"},         {"two", "2"},       {"three", "3"},
        {"four", "4"},      {"five", "5"},        {"six", "6"},       {"seven", "7"},
        {"eight", "8"},     {"nine", "9"},        {"ten", "10"},      {"eleven", "11"},
        {"twelve", "12"},   {"thirteen", "13"},   {"fourteen", "14"}, {"fifteen", "15"},
        {"sixteen", "16"},  {"seventeen", "17"},  {"eighteen", "18"}, {"nineteen", "19"},
        {"twenty", "20"},   {"thirty", "30"},     {"forty", "40"},    {"fifty", "50"},
        {"sixty", "60"},    {"seventy", "70"},    {"eighty", "80"},   {"ninety", "90"},
        {"hundred", "100"}, {"thousand", "1000"}, {"million", "1e6"}, {"billion", "1e9"},
        {"dozen", "12"},    {"half", "0.5"},      {"twice", "2x"},    {"double", "2x"},
        {"triple", "3x"},   {"once", "1x"},       {"thrice", "3x"},   {"quarter", "0.25"}};
    const auto it = number_words.find(w);
    return it == number_words.end() ? std::string_view{} : it->second;
}

// The canonical negator, or empty.
std::string_view negator(std::string_view w) {
    static const std::unordered_set<std::string_view> not_forms{
        "not",    "dont",   "doesnt",  "didnt",    "isnt",    "arent", "wasnt",  "werent", "wont",
        "cant",   "cannot", "couldnt", "shouldnt", "wouldnt", "hasnt", "havent", "hadnt",  "mustnt",
        "neednt", "aint",   "mightnt", "shant",    "doesn",   "don",   "isn",    "aren",   "wasn",
        "weren",  "couldn", "shouldn", "wouldn",   "hasn",    "haven", "hadn",   "didn"};
    static const std::unordered_set<std::string_view> own_negators{
        "no", "never", "none", "nothing", "nobody", "nowhere", "neither", "nor", "without", "nope"};
    if (not_forms.contains(w)) return "not";
    if (own_negators.contains(w)) return w;
    return {};
}

bool is_polarity_stem(const std::string& s) {
    static const std::unordered_set<std::string> polarity_stems = [] {
        static constexpr std::array kPolarityWords{
            "on",    "off",     "up",    "down",   "yes",    "max",     "maximum",
            "min",   "minimum", "top",   "bottom", "old",    "new",     "more",
            "less",  "most",    "least", "first",  "last",   "before",  "after",
            "over",  "under",   "above", "below",  "left",   "right",   "high",
            "low",   "higher",  "lower", "open",   "close",  "start",   "stop",
            "begin", "end",     "add",   "remove", "enable", "disable", "true",
            "false", "plus",    "minus", "early",  "late",   "asc",     "desc"};
        std::unordered_set<std::string> stems;
        for (const std::string_view w : kPolarityWords) stems.insert(detail::stem(w));
        return stems;
    }();
    return polarity_stems.contains(s);
}

// The class of a question word, or empty: what and how ask for the same kind of answer in
// rephrasings ("what is the best way to", "how do I"); who, when, where and why do not.
std::string_view question_class(std::string_view w) {
    static const std::unordered_map<std::string_view, std::string_view> classes{
        {"what", "what"},    {"whats", "what"}, {"which", "what"}, {"how", "what"},
        {"hows", "what"},    {"who", "who"},    {"whos", "who"},   {"whom", "who"},
        {"whose", "who"},    {"when", "when"},  {"whens", "when"}, {"where", "where"},
        {"wheres", "where"}, {"why", "why"},    {"whys", "why"}};
    const auto it = classes.find(w);
    return it == classes.end() ? std::string_view{} : it->second;
}

bool is_relation_marker(std::string_view w) {
    static const std::unordered_set<std::string_view> markers{
        "from",  "to",   "into",  "onto",  "than",  "vs",  "versus", "before",
        "after", "over", "under", "above", "below", "per", "of",     "for",
        "by",    "in",   "at",    "with",  "about", "on",  "as"};
    return markers.contains(w);
}

bool is_article(std::string_view w) {
    static const std::unordered_set<std::string_view> articles{
        "a",   "an",    "the",  "my",   "your",  "his",   "her",  "its",
        "our", "their", "this", "that", "these", "those", "some", "any"};
    return articles.contains(w);
}

template <class T>
void sort_unique(std::vector<T>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
}

// Damerau-Levenshtein distance <= 1 (one insertion, deletion, substitution or swap).
bool within_one_edit(std::string_view a, std::string_view b) {
    if (a.size() > b.size()) std::swap(a, b);
    if (b.size() - a.size() > 1) return false;
    std::size_t i = 0;
    while (i < a.size() && a[i] == b[i]) ++i;
    if (i == a.size()) return true;  // equal, or b has one more letter at the end
    if (a.size() == b.size()) {
        if (a.substr(i + 1) == b.substr(i + 1)) return true;  // substitution
        return i + 1 < a.size() && a[i] == b[i + 1] && a[i + 1] == b[i] &&
               a.substr(i + 2) == b.substr(i + 2);  // swap
    }
    return a.substr(i) == b.substr(i + 1);  // b has one letter more at i
}

bool typo_match(const std::string& word, const std::vector<std::string>& others) {
    if (word.size() < 6 || has_digit(word)) return false;
    return std::any_of(others.begin(), others.end(), [&](const std::string& o) {
        return o.size() >= 6 && o.front() == word.front() && !has_digit(o) &&
               within_one_edit(word, o);
    });
}

// The first word of `a` that `b` lacks (both sorted, unique), with the typo allowance.
const std::string* missing_word(const std::vector<std::string>& a,
                                const std::vector<std::string>& b, bool allow_typos) {
    for (const auto& w : a) {
        if (std::binary_search(b.begin(), b.end(), w)) continue;
        if (allow_typos && typo_match(w, b)) continue;
        return &w;
    }
    return nullptr;
}

// Equal lists, or with typos allowed equal but for typos in long words.
bool same_words(const std::vector<std::string>& a, const std::vector<std::string>& b,
                bool allow_typos) {
    if (a == b) return true;
    if (!allow_typos || a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i] != b[i] && !typo_match(a[i], {b[i]})) return false;
    }
    return true;
}

// "to fahrenheit | to celsius" (marker first) or "from ny | to ny" (object last).
std::string differ(const std::string& word, const std::vector<std::string>& query,
                   const std::vector<std::string>& cached, bool word_first) {
    std::string out;
    for (const auto* side : {&query, &cached}) {
        if (!out.empty()) out += " | ";
        if (word_first) out += word + ' ';
        for (std::size_t i = 0; i < side->size(); ++i) {
            if (i != 0) out += ' ';
            out += (*side)[i];
        }
        if (!word_first) out += ' ' + word;
    }
    return out;
}

std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) {
        if (!out.empty()) out.push_back(' ');
        out += s;
    }
    return out;
}

}  // namespace

std::string_view to_string(GuardReason reason) {
    switch (reason) {
        case GuardReason::none:
            return "none";
        case GuardReason::numbers:
            return "numbers";
        case GuardReason::negation:
            return "negation";
        case GuardReason::polarity:
            return "polarity";
        case GuardReason::content_word:
            return "content_word";
        case GuardReason::relation:
            return "relation";
        case GuardReason::question_word:
            return "question_word";
    }
    return "unknown";
}

LexicalProfile lexical_profile(std::string_view text) {
    LexicalProfile p;
    const std::vector<Word> words = detail::split_words(text);
    for (std::size_t i = 0; i < words.size(); ++i) {
        const std::string& w = words[i].text;
        // Digit runs of a word are its numbers ("gpt4" -> 4, "3.5" -> 3.5).
        if (has_digit(w)) {
            std::string run;
            for (const char c : w) {
                if ((c >= '0' && c <= '9') || (c == '.' && !run.empty())) {
                    run.push_back(c);
                } else if (!run.empty()) {
                    p.numbers.push_back(std::move(run));
                    run.clear();
                }
            }
            if (!run.empty()) p.numbers.push_back(std::move(run));
        } else if (const auto value = number_word(w); !value.empty()) {
            p.numbers.emplace_back(value);
            continue;
        }
        if (const auto neg = negator(w); !neg.empty()) {
            p.negations.emplace_back(neg);
            continue;
        }
        if (const auto cls = question_class(w); !cls.empty()) p.question_words.emplace_back(cls);
        std::string s = detail::stem(w);
        if (is_polarity_stem(s)) p.polarity.push_back(s);
        if (is_relation_marker(w)) {
            for (std::size_t j = i + 1; j < words.size(); ++j) {
                const std::string& object = words[j].text;
                if (is_article(object)) continue;
                const auto value = number_word(object);  // "to five" is "to 5"
                p.relations.emplace_back(w,
                                         value.empty() ? detail::stem(object) : std::string{value});
                break;
            }
        }
        const bool plain_number = std::all_of(
            w.begin(), w.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
        if (!plain_number && !detail::is_common_word(w)) p.content.push_back(std::move(s));
    }
    std::sort(p.negations.begin(), p.negations.end());
    sort_unique(p.question_words);
    sort_unique(p.polarity);
    sort_unique(p.content);
    return p;
}

GuardVerdict check_lexical(const LexicalProfile& query, const LexicalProfile& cached,
                           const GuardOptions& options) {
    if (query.numbers != cached.numbers) {
        return {GuardReason::numbers, join(query.numbers) + " | " + join(cached.numbers)};
    }
    if (query.negations != cached.negations) {
        return {GuardReason::negation, join(query.negations) + " | " + join(cached.negations)};
    }
    if (query.question_words != cached.question_words) {
        return {GuardReason::question_word,
                join(query.question_words) + " | " + join(cached.question_words)};
    }
    if (query.polarity != cached.polarity) {
        return {GuardReason::polarity, join(query.polarity) + " | " + join(cached.polarity)};
    }
    if (const auto* w = missing_word(query.content, cached.content, options.allow_typos)) {
        return {GuardReason::content_word, *w};
    }
    if (const auto* w = missing_word(cached.content, query.content, options.allow_typos)) {
        return {GuardReason::content_word, *w};
    }
    // Rule 5: a marker in both has the same objects in the same order ("a kilo of feathers
    // heavier than a kilo of steel" is not the other way round); an object in both has the
    // same markers.
    const auto objects_of = [](const LexicalProfile& p, const std::string& marker) {
        std::vector<std::string> out;
        for (const auto& [m, o] : p.relations) {
            if (m == marker) out.push_back(o);
        }
        return out;
    };
    const auto markers_of = [](const LexicalProfile& p, const std::string& object) {
        std::vector<std::string> out;
        for (const auto& [m, o] : p.relations) {
            if (o == object) out.push_back(m);
        }
        sort_unique(out);
        return out;
    };
    for (const auto* a : {&query, &cached}) {
        for (const auto& [marker, object] : a->relations) {
            const auto q_objects = objects_of(query, marker);
            const auto c_objects = objects_of(cached, marker);
            if (!q_objects.empty() && !c_objects.empty() &&
                !same_words(q_objects, c_objects, options.allow_typos)) {
                return {GuardReason::relation, differ(marker, q_objects, c_objects, true)};
            }
            const auto q_markers = markers_of(query, object);
            const auto c_markers = markers_of(cached, object);
            if (!q_markers.empty() && !c_markers.empty() && q_markers != c_markers) {
                return {GuardReason::relation, differ(object, q_markers, c_markers, false)};
            }
        }
    }
    return {};
}

bool lexically_compatible(std::string_view query, std::string_view cached_question,
                          const GuardOptions& options) {
    return check_lexical(lexical_profile(query), lexical_profile(cached_question), options)
        .compatible();
}

}  // namespace tokenradar::cache

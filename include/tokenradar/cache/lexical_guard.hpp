#pragma once
// The semantic cache's lexical guard: a similar embedding is not enough for a hit, the two
// questions must also agree on the words that flip an answer. Embeddings put "turn the light
// on" next to "turn the light off" and "flights from NY to LA" next to "from LA to NY"; the
// guard rejects such pairs. A rejection costs one upstream call, a wrong hit a wrong answer,
// so every rule errs towards rejecting (bench/README.md, "The semantic cache", has the
// precision and hit rate it gives on bench/cache/paraphrases.tsv).
//
// Both texts are split into words the way BuiltinEmbedder does (ASCII lowercase, apostrophes
// dropped inside words, other punctuation a break; a '.' between digits kept, a ',' between
// digits dropped: "1,000.5" is one number). Words are compared by a crude stem (plural and
// -ing/-ed/-e endings cut: "sorting", "sorted", "sorts" -> "sort") applied to both sides.
// The rules, each symmetric (swapping query and cached question gives the same verdict):
//
// 1. numbers: the sequences of numbers are equal, in order. Digit runs count ("gpt-4" has 4,
//    "python3" has 3) and so do number words zero..twenty, the tens, hundred, thousand,
//    million, billion ("three" is 3). In order because "10 - 3" is not "3 - 10".
// 2. negation: the same multiset of negators. not, n't forms (dont, isnt, cant, cannot, ...)
//    count as "not"; no, never, none, nothing, nobody, nowhere, neither, nor, without are
//    each their own. So "don't" matches "do not", but "never" does not match "not".
// 3. polarity: the same set of polarity words: on/off, up/down, yes, max/min, top, old/new,
//    more/less, most/least, first/last, before/after, over/under, above/below, left/right,
//    high/low, open/close, start/stop, begin/end, add/remove, enable/disable, true/false,
//    plus/minus, early/late, asc/desc. Most are common words rule 4 ignores.
// 4. content words: the same set of content words, every word that is not a common word
//    (a built-in list of ~250 function words, wh-words, auxiliaries, pronouns and filler such
//    as "please", "explain", "tell"), not a negator and not a plain number. Short words
//    count ("cat" vs "dog", "C" vs "R", "js" vs "ts"), and so does an extra word in the
//    cached question: "sort a list descending" must not answer "sort a list". With
//    GuardOptions::allow_typos, a content word of 6+ letters also matches one with the same
//    first letter at Damerau distance 1 ("pyhton" -> "python"; off by default: it also lets
//    "dessert" match "desert").
// 5. relations: for the markers from, to, into, onto, than, vs, versus, before, after, over,
//    under, above, below, per, of, for, by, in, at, with, about, on, as, the object is the
//    next word that is not an article or possessive. A marker found in both texts has the
//    same objects in the same order, and a word that is an object in both texts is so of the
//    same markers. "from NY to LA" vs "to LA from NY" passes; "from LA to NY", "convert
//    celsius to fahrenheit" vs "fahrenheit to celsius", "the root of the log" vs "the log of
//    the root" and "a kilo of feathers heavier than a kilo of steel" vs the other way round
//    do not. A number word as object is its number ("to five" is "to 5").
// 6. question words: the same set of question classes: who (who, whom, whose), when, where,
//    why, and what (what, which, how: "what is the best way to" rephrases "how do I"). So
//    "why did Rome fall" never answers "when did Rome fall", nor "why is coffee bad" "is
//    coffee bad". Checked after rule 2 (the order only decides the reason reported).
//
// Pure functions; thread-safe.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenradar::cache {

enum class GuardReason {
    none,           // compatible
    numbers,        // rule 1
    negation,       // rule 2
    polarity,       // rule 3
    content_word,   // rule 4
    relation,       // rule 5
    question_word,  // rule 6
};
std::string_view to_string(GuardReason reason);

struct GuardOptions {
    bool allow_typos = false;  // rule 4's Damerau-1 match of long words
};

// What the guard compares, computed once per text (the index profiles the query once and
// each candidate's question as it meets it).
struct LexicalProfile {
    std::vector<std::string> numbers;                            // in text order
    std::vector<std::string> negations;                          // canonical, sorted (a multiset)
    std::vector<std::string> question_words;                     // classes, sorted, unique
    std::vector<std::string> polarity;                           // stems, sorted, unique
    std::vector<std::string> content;                            // stems, sorted, unique
    std::vector<std::pair<std::string, std::string>> relations;  // (marker, object), text order
};
LexicalProfile lexical_profile(std::string_view text);

struct GuardVerdict {
    GuardReason reason = GuardReason::none;
    std::string detail;  // the word or number that differs, for tests and debug logs
    bool compatible() const { return reason == GuardReason::none; }
};
GuardVerdict check_lexical(const LexicalProfile& query, const LexicalProfile& cached,
                           const GuardOptions& options = {});

// check_lexical(lexical_profile(query), lexical_profile(cached_question), options).
bool lexically_compatible(std::string_view query, std::string_view cached_question,
                          const GuardOptions& options = {});

}  // namespace tokenradar::cache

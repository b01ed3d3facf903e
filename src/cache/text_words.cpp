#include "text_words.hpp"

#include <unordered_set>

namespace tokenradar::cache::detail {
namespace {

bool is_ascii_alnum(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

// UTF-8 of U+2000..U+206F (general punctuation: quotes, dashes, ellipsis) starts E2 80 or
// E2 81; U+2019 (right single quotation mark) is an apostrophe.
bool is_general_punctuation(std::string_view text, std::size_t i) {
    return i + 2 < text.size() && static_cast<unsigned char>(text[i]) == 0xE2 &&
           (static_cast<unsigned char>(text[i + 1]) == 0x80 ||
            static_cast<unsigned char>(text[i + 1]) == 0x81);
}
bool is_typographic_apostrophe(std::string_view text, std::size_t i) {
    return is_general_punctuation(text, i) && static_cast<unsigned char>(text[i + 1]) == 0x80 &&
           static_cast<unsigned char>(text[i + 2]) == 0x99;
}

bool is_word_byte(unsigned char c) { return is_ascii_alnum(c) || c >= 0x80; }

}  // namespace

std::vector<Word> split_words(std::string_view text) {
    std::vector<Word> words;
    Word current;
    const auto flush = [&] {
        if (!current.text.empty()) words.push_back(std::move(current));
        current = Word{};
    };
    const std::size_t n = text.size();
    for (std::size_t i = 0; i < n; ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        const bool in_word = !current.text.empty();
        const bool next_is_word =
            i + 1 < n && is_word_byte(static_cast<unsigned char>(text[i + 1]));
        if (c == '\'' && in_word && next_is_word) continue;  // don't -> dont
        if (is_typographic_apostrophe(text, i) && in_word && i + 3 < n &&
            is_word_byte(static_cast<unsigned char>(text[i + 3]))) {
            i += 2;
            continue;
        }
        if (is_general_punctuation(text, i)) {
            flush();
            i += 2;
            continue;
        }
        if ((c == '.' || c == ',') && in_word &&
            is_digit(static_cast<unsigned char>(current.text.back())) && i + 1 < n &&
            is_digit(static_cast<unsigned char>(text[i + 1]))) {
            if (c == '.') current.text.push_back('.');  // 3.5 stays; 1,000 -> 1000
            continue;
        }
        if (!is_word_byte(c)) {
            flush();
            continue;
        }
        if (c >= 'A' && c <= 'Z') {
            if (!in_word) current.capitalised = true;
            current.text.push_back(static_cast<char>(c - 'A' + 'a'));
        } else {
            current.text.push_back(static_cast<char>(c));
        }
    }
    flush();
    return words;
}

bool is_common_word(std::string_view lower) {
    static const std::unordered_set<std::string_view> common_words{
        // articles, determiners, pronouns
        "a", "an", "the", "this", "that", "these", "those", "some", "any", "each", "every", "all",
        "both", "either", "other", "another", "such", "i", "me", "my", "mine", "myself", "we", "us",
        "our", "ours", "you", "your", "yours", "yourself", "he", "him", "his", "she", "her", "hers",
        "it", "its", "itself", "they", "them", "their", "theirs", "someone", "something",
        "anything", "everything", "somebody", "anyone", "everyone",
        // wh-words
        "what", "whats", "which", "who", "whos", "whom", "whose", "when", "where", "wheres", "why",
        "how", "hows", "whether", "whatever",
        // auxiliaries and modals (negated forms are negators, not common words)
        "is", "am", "are", "was", "were", "be", "been", "being", "do", "does", "did", "doing",
        "done", "have", "has", "had", "having", "can", "could", "will", "would", "shall", "should",
        "may", "might", "must", "im", "ive", "id", "ill", "youre", "youve", "its", "thats",
        "theres", "lets", "let", "get", "gets", "got", "getting",
        // prepositions and conjunctions (the relation markers are checked by rule 5)
        "of", "in", "at", "by", "for", "with", "about", "as", "into", "onto", "from", "to", "than",
        "then", "via", "per", "within", "through", "across", "during", "between", "among", "vs",
        "versus", "and", "or", "but", "if", "so", "because", "while", "also", "there", "here",
        "over", "under", "above", "below", "before", "after", "on", "off", "up", "down", "out",
        "again", "too", "very", "much", "many", "more", "most", "less", "least", "same", "own",
        "just", "only", "even", "still", "yet", "ever",
        // politeness and filler of questions
        "please", "pls", "plz", "kindly", "thanks", "thank", "thx", "hi", "hello", "hey", "tell",
        "explain", "describe", "know", "want", "wanna", "need", "wonder", "wondering", "help",
        "like", "really", "actually", "exactly", "basically", "simply", "simple", "quick",
        "quickly", "briefly", "way", "ways", "best", "good", "question", "answer", "possible",
        "able", "someone", "anybody", "guys", "sir", "ok", "okay", "well", "now", "currently",
        "today", "go", "make", "use", "using", "used", "find", "show", "give", "say", "said",
        "mean", "means", "meaning", "try", "trying", "work", "works", "step", "steps", "correct",
        "correctly", "proper", "properly", "right", "thing", "things", "kind", "example", "e", "g",
        "eg", "ie", "etc", "yes", "no", "not"};
    return common_words.contains(lower);
}

std::string stem(std::string_view lower) {
    std::string s{lower};
    for (const char c : s) {
        if (is_digit(static_cast<unsigned char>(c))) return s;
    }
    const auto ends = [&](std::string_view suffix) {
        return s.size() >= suffix.size() &&
               s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    const auto is_vowel = [](char c) {
        return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' || c == 'y';
    };
    if (s.size() > 4 && ends("ies")) {
        s.replace(s.size() - 3, 3, "y");
    } else if (s.size() > 4 &&
               (ends("sses") || ends("ches") || ends("shes") || ends("xes") || ends("zes"))) {
        s.resize(s.size() - 2);
    } else if (s.size() > 3 && ends("s") && !ends("ss") && !ends("us") && !ends("is")) {
        s.resize(s.size() - 1);
    }
    bool cut = false;
    if (s.size() >= 5 && ends("ing")) {
        s.resize(s.size() - 3);
        cut = true;
    } else if (s.size() > 4 && ends("ed")) {
        s.resize(s.size() - 2);
        cut = true;
    }
    if (cut && s.size() >= 3 && s[s.size() - 1] == s[s.size() - 2] && !is_vowel(s.back()) &&
        s.back() != 'l' && s.back() != 's' && s.back() != 'z') {
        s.pop_back();  // running -> run
    }
    if (s.size() > 3 && ends("e")) s.pop_back();  // use, used, using -> us
    return s;
}

}  // namespace tokenradar::cache::detail

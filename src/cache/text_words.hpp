#pragma once
// The word splitting BuiltinEmbedder and the lexical guard share (lexical_guard.hpp has the
// rules), so both see the same words.

#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::cache::detail {

struct Word {
    std::string text;  // lowercased (ASCII), apostrophes dropped, "1,000" -> "1000"
    bool capitalised = false;
};

std::vector<Word> split_words(std::string_view text);

// Function words, wh-words, auxiliaries, pronouns, fillers: words a rephrasing may change.
bool is_common_word(std::string_view lower);

// Plural and -ing/-ed/-e endings cut; a word with a digit is returned as is.
std::string stem(std::string_view lower);

}  // namespace tokenradar::cache::detail

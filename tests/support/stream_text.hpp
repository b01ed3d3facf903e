#pragma once
// Byte-level helpers shared by the stream tests: read a fixture, rewrite its line ends,
// split it at random points as a socket might.

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::testing {

inline std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Every CR, LF or CRLF in `s` becomes `eol`.
inline std::string with_line_endings(const std::string& s, std::string_view eol) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\r') {
            if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
            out.append(eol);
        } else if (s[i] == '\n') {
            out.append(eol);
        } else {
            out.push_back(s[i]);
        }
    }
    return out;
}

// Pieces of 1..max bytes.
inline std::vector<std::string> random_split(const std::string& s, std::mt19937& rng,
                                             std::size_t max) {
    std::vector<std::string> chunks;
    std::size_t i = 0;
    while (i < s.size()) {
        const std::size_t n = std::uniform_int_distribution<std::size_t>(1, max)(rng);
        chunks.push_back(s.substr(i, n));
        i += n;
    }
    return chunks;
}

}  // namespace tokenradar::testing

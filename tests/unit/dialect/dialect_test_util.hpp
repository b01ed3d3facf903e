#pragma once
// Helpers shared by the dialect tests: fixtures, SSE decoding, random re-chunking.

#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/dialect/stream_delta.hpp>
#include <tokenradar/sse/sse_parser.hpp>

#include "../../support/stream_text.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace tokenradar::dialect {

inline void PrintTo(const StreamDelta& d, std::ostream* os) {
    *os << to_string(d.kind) << "{text=" << d.text << " index=" << d.index << " id=" << d.id
        << " name=" << d.name << " args=" << d.arguments << " finish=" << to_string(d.finish_reason)
        << " type=" << d.error_type << " prompt=" << d.usage.prompt_tokens.value_or(-1)
        << " out=" << d.usage.output_tokens.value_or(-1) << "}";
}

namespace testing_util {

inline std::filesystem::path fixture_dir() {
    return std::filesystem::path(TOKENRADAR_SOURCE_DIR) / "tests/fixtures";
}

inline std::string read_fixture(const std::string& rel) {
    EXPECT_TRUE(std::filesystem::is_regular_file(fixture_dir() / rel)) << rel;
    return tokenradar::testing::read_file(fixture_dir() / rel);
}

inline std::vector<std::string> stream_fixtures(const std::string& dialect) {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(fixture_dir() / dialect)) {
        if (e.path().extension() == ".sse")
            out.push_back(dialect + "/" + e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

struct Decoded {
    std::vector<std::vector<StreamDelta>> events;  // deltas per SSE event
    bool ok = true;
    std::string error;

    std::vector<StreamDelta> flat() const {
        std::vector<StreamDelta> all;
        for (const auto& e : events) all.insert(all.end(), e.begin(), e.end());
        return all;
    }
    std::vector<StreamDelta> of(StreamDelta::Kind k) const {
        std::vector<StreamDelta> all;
        for (const auto& d : flat()) {
            if (d.kind == k) all.push_back(d);
        }
        return all;
    }
    std::string text(StreamDelta::Kind k = StreamDelta::Kind::text) const {
        std::string s;
        for (const auto& d : of(k)) s += d.text;
        return s;
    }
};

// "index:id:name:arguments;" per tool call, arguments concatenated across deltas.
inline std::string tool_summary(const Decoded& d) {
    std::map<int, std::string> ids, args;
    for (const auto& t : d.of(StreamDelta::Kind::tool_call)) {
        if (!t.id.empty() || !t.name.empty()) ids[t.index] = t.id + ":" + t.name;
        args[t.index] += t.arguments;
    }
    std::string s;
    for (const auto& [i, a] : args) s += std::to_string(i) + ":" + ids[i] + ":" + a + ";";
    return s;
}

inline Decoded decode_chunks(std::unique_ptr<StreamDecoder> decoder,
                             const std::vector<std::string>& chunks) {
    Decoded out;
    sse::SseParser parser;
    for (const auto& c : chunks) {
        auto r = parser.feed(c, [&](const sse::SseEvent& e) {
            std::vector<StreamDelta> deltas;
            auto d = decoder->decode(e.event, e.data, deltas);
            if (!d) {
                out.ok = false;
                out.error = d.error().message;
            }
            out.events.push_back(std::move(deltas));
        });
        if (!r) {
            out.ok = false;
            out.error = r.error().message;
        }
    }
    parser.finish();
    return out;
}

inline Decoded decode_chunks(Api api, const std::vector<std::string>& chunks) {
    return decode_chunks(make_stream_decoder(api), chunks);
}

inline Decoded decode_stream(Api api, const std::string& bytes) {
    return decode_chunks(api, {bytes});
}

inline std::vector<std::string> random_split(const std::string& s, unsigned seed) {
    std::mt19937 rng(seed);
    const std::size_t max = seed % 3 == 0 ? 1 : (seed % 3 == 1 ? 16 : 4096);
    return tokenradar::testing::random_split(s, rng, max);
}

// Encodes deltas with a dialect's encoder (one call per delta, then finish()).
inline std::string encode_all(Api api, const std::vector<StreamDelta>& deltas,
                              StreamMeta meta = {}) {
    if (meta.id.empty()) meta.id = "id-1";
    if (meta.model.empty()) meta.model = "model-x";
    auto enc = make_stream_encoder(api, meta);
    std::string out;
    for (const auto& d : deltas) enc->encode(d, out);
    enc->finish(out);
    return out;
}

}  // namespace testing_util
}  // namespace tokenradar::dialect

// Throughput of the SSE parser (and the OpenAI decoder on top of it) over realistic
// OpenAI-style stream bytes fed in 4 KiB chunks, as a socket read loop would.

#include <tokenradar/dialect/openai.hpp>
#include <tokenradar/sse/sse_parser.hpp>

#include <benchmark/benchmark.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace {

// About `bytes` of chat.completion.chunk events, one to a few tokens each, plus the usage
// chunk and [DONE], shaped like OpenAI's wire output.
std::string openai_stream(std::size_t bytes) {
    static const char* kTokens[] = {"The",  " quick",    " brown",    " fox",     " jumps", " over",
                                    " the", " lazy",     " dog",      ".",        "\\n",    " It",
                                    " was", " a bright", " cold day", " in April"};
    std::string s;
    std::size_t i = 0;
    s +=
        R"(data: {"id":"chatcmpl-9bY2vLxQ3","object":"chat.completion.chunk","created":1718345013,"model":"gpt-4o-2024-05-13","system_fingerprint":"fp_f4e629d0a5","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null})"
        "\n\n";
    while (s.size() < bytes) {
        s +=
            R"(data: {"id":"chatcmpl-9bY2vLxQ3","object":"chat.completion.chunk","created":1718345013,"model":"gpt-4o-2024-05-13","system_fingerprint":"fp_f4e629d0a5","choices":[{"index":0,"delta":{"content":")";
        s += kTokens[i++ % std::size(kTokens)];
        s += R"("},"logprobs":null,"finish_reason":null}],"usage":null})"
             "\n\n";
    }
    s +=
        R"(data: {"id":"chatcmpl-9bY2vLxQ3","object":"chat.completion.chunk","created":1718345013,"model":"gpt-4o-2024-05-13","choices":[],"usage":{"prompt_tokens":1220,"completion_tokens":512,"total_tokens":1732}})"
        "\n\ndata: [DONE]\n\n";
    return s;
}

std::vector<std::string_view> chunks_of(const std::string& s, std::size_t n) {
    std::vector<std::string_view> out;
    for (std::size_t i = 0; i < s.size(); i += n) out.push_back(std::string_view(s).substr(i, n));
    return out;
}

void BM_SseParser_OpenAiStream_4KiB(benchmark::State& state) {
    const std::string bytes = openai_stream(1 << 20);
    const auto chunks = chunks_of(bytes, 4096);
    std::size_t events = 0;
    for (auto _ : state) {
        tokenradar::sse::SseParser parser;
        for (auto c : chunks) {
            auto r = parser.feed(c, [&](const tokenradar::sse::SseEvent& e) {
                benchmark::DoNotOptimize(e.data.data());
                ++events;
            });
            benchmark::DoNotOptimize(r);
        }
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
    state.counters["events/s"] =
        benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SseParser_OpenAiStream_4KiB);

void BM_SseParser_OpenAiStream_Crlf_4KiB(benchmark::State& state) {
    std::string lf = openai_stream(1 << 20);
    std::string bytes;
    for (char c : lf) {
        if (c == '\n')
            bytes += "\r\n";
        else
            bytes += c;
    }
    const auto chunks = chunks_of(bytes, 4096);
    for (auto _ : state) {
        tokenradar::sse::SseParser parser;
        for (auto c : chunks) {
            auto r = parser.feed(c, [&](const tokenradar::sse::SseEvent& e) {
                benchmark::DoNotOptimize(e.data.data());
            });
            benchmark::DoNotOptimize(r);
        }
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_SseParser_OpenAiStream_Crlf_4KiB);

void BM_SseParserPlusOpenAiDecoder_4KiB(benchmark::State& state) {
    const std::string bytes = openai_stream(1 << 20);
    const auto chunks = chunks_of(bytes, 4096);
    std::vector<tokenradar::dialect::StreamDelta> deltas;
    std::size_t events = 0;
    for (auto _ : state) {
        tokenradar::sse::SseParser parser;
        tokenradar::dialect::OpenAiStreamDecoder decoder(state.range(0) != 0);
        for (auto c : chunks) {
            auto r = parser.feed(c, [&](const tokenradar::sse::SseEvent& e) {
                deltas.clear();
                benchmark::DoNotOptimize(decoder.decode(e.event, e.data, deltas));
                ++events;
            });
            benchmark::DoNotOptimize(r);
        }
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
    state.counters["events/s"] =
        benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
// Arg: 1 = the decoder's text-chunk fast path on (as the gateway runs), 0 = a DOM per event.
BENCHMARK(BM_SseParserPlusOpenAiDecoder_4KiB)->Arg(1)->Arg(0);

}  // namespace

BENCHMARK_MAIN();

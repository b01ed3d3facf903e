// libFuzzer target: the translation layer (translate.hpp). The first input byte is a selector,
// the rest the body.
//
// Even selector, request mode: the body as an OpenAI request; make_upstream_call to every
// upstream dialect must either fail with a message (unsupported or bad_request) or produce a
// body the upstream dialect's own parser accepts (for OpenAI: with the upstream model); for
// Anthropic, automatic prompt-cache breakpoints change nothing but the marks.
//
// Odd selector, stream mode: bits 1-2 pick the upstream dialect, bit 3 whether the client wants
// usage, bits 4-7 the chunk size. The body goes through SseParser, the dialect's decoder and a
// StreamTranslator (decode error -> fail(), end -> finish()), as the gateway relay does. What
// the client would get must parse as SSE whose every data payload is JSON or [DONE], ending
// with [DONE] and nothing after it. translate_response / translate_error see the body too.
#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/dialect/translate.hpp>
#include <tokenradar/sse/sse_parser.hpp>

#include <boost/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace tokenradar;
using namespace tokenradar::dialect;

bool is_json(std::string_view text) {
    boost::system::error_code ec;
    boost::json::parse_options opts;
    opts.max_depth = 1024;
    (void)boost::json::parse(text, ec, {}, opts);
    return !ec;
}

void check(bool ok) {
    if (!ok) std::abort();
}

void clear_cache_control(ChatRequest& req) {
    for (Message& m : req.messages) {
        for (ContentPart& c : m.content) c.cache_control.clear();
    }
    for (ToolDefinition& t : req.tools) t.cache_control.clear();
}

// prompt_cache = "auto" for an Anthropic upstream: a request that translates without it
// translates with it, and the marks are all that changed; a client's own marks are kept as
// they were (nothing added).
void check_prompt_cache(const ChatRequest& req, std::string_view body, ChatRequest plain) {
    auto marked = make_upstream_call(req, Api::anthropic, "/v1", "up-model", Secret("k"), body,
                                     PromptCache::automatic);
    check(marked.has_value());
    auto back = parse_request(Api::anthropic, marked->body, "up-model", req.stream);
    check(back.has_value());
    if (has_cache_control(req)) {
        check(*back == plain);
        return;
    }
    clear_cache_control(*back);
    clear_cache_control(plain);
    check(*back == plain);
}

void fuzz_request(std::string_view body) {
    auto req = parse_request(Api::openai, body);
    if (!req) return;
    for (Api to : {Api::openai, Api::anthropic, Api::gemini}) {
        auto call = make_upstream_call(*req, to, "/v1", "up-model", Secret("k"), body);
        if (!call) {
            const Errc code = static_cast<Errc>(call.error().code.value());
            check(!call.error().message.empty());
            check(code == Errc::unsupported || code == Errc::bad_request);
            continue;
        }
        auto back = parse_request(to, call->body, "up-model", req->stream);
        check(back.has_value());
        check(back->model == "up-model");
        check(!call->target.empty());
        if (to == Api::anthropic) check_prompt_cache(*req, body, *back);
        if (to == Api::openai) {
            // The client's text with its members spliced must mean what the modified DOM
            // means: the scan of the text found the members the parser found.
            boost::json::value expected = req->original;
            boost::json::object& o = expected.as_object();
            o["model"] = "up-model";
            if (req->stream) {
                boost::json::value& options = o["stream_options"];
                if (!options.is_object()) options = boost::json::object();
                options.get_object()["include_usage"] = true;
            }
            boost::system::error_code ec;
            check(boost::json::parse(call->body, ec) == expected && !ec);
        }
    }
}

void fuzz_stream(std::uint8_t selector, std::string_view body) {
    const Api api = static_cast<Api>(((selector >> 1) & 3) % 3);
    const bool usage = (selector & 0x08) != 0;
    const std::size_t chunk = 1 + (selector >> 4) * 7;
    sse::SseParser parser(sse::SseParser::Options{.max_buffered_bytes = 64 * 1024});
    auto decoder = make_stream_decoder(api);
    StreamTranslator translator(api, usage, StreamMeta{"", "", 1, true});
    std::string out;
    std::vector<StreamDelta> deltas;
    auto sink = [&](const sse::SseEvent& e) {
        deltas.clear();
        if (auto d = decoder->decode(e.event, e.data, deltas); !d)
            translator.fail(Errc::protocol_error, d.error().message, out);
        else
            translator.on_event(e, deltas, out);
    };
    std::string_view rest = body;
    bool ok = true;
    while (ok && !rest.empty()) {
        const std::size_t n = chunk < rest.size() ? chunk : rest.size();
        if (!parser.feed(rest.substr(0, n), sink)) {
            translator.fail(Errc::protocol_error, "malformed SSE", out);
            ok = false;
        }
        rest.remove_prefix(n);
    }
    translator.finish(out);
    check(translator.terminated());

    // What the client gets: whole events, JSON or [DONE], [DONE] last.
    sse::SseParser client;
    bool done = false;
    auto fed = client.feed(out, [&](const sse::SseEvent& e) {
        check(!done);
        if (e.data == "[DONE]") {
            done = true;
            return;
        }
        check(is_json(e.data));
    });
    check(fed.has_value());
    check(!client.finish());
    check(done);

    auto resp = translate_response(api, std::string(body), 1);
    if (resp && api != Api::openai) check(is_json(*resp));
    // The gateway's one-parse path fails where the dialect's parse fails (an OpenAI body
    // passes translate_response unread), else gives translate_response's body.
    Measurement m;
    auto relayed = relay_response(api, std::string(body), 1, m);
    check(relayed.has_value() == parse_response(api, body).has_value());
    if (relayed) check(resp && *relayed == *resp);
    ClientError err = translate_error(api, 400 + selector % 200, body);
    check(err.http_status >= 400 && err.http_status <= 599);
    check(is_json(err.body));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::uint8_t selector = data[0];
    std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
    if (selector & 1)
        fuzz_stream(selector, body);
    else
        fuzz_request(body);
    return 0;
}

// libFuzzer target: the gateway's doors for clients of other dialects (egress.hpp). The first
// input byte is a selector, the rest the body. Bits 1-2 pick the door: Gemini when bit 2 is
// set, else OpenAI Responses when bit 1 is set, else Anthropic.
//
// Selector bit 0 set, stream mode: bits 4-7 pick the chunk size. The body goes through the
// door's Egress as the relay's OpenAI stream (comments included), then end(). What the
// client gets must parse as SSE, ending with the dialect's last event and nothing after it:
// Anthropic, events whose JSON "type" names the event, the last message_stop or error;
// Gemini, JSON objects with candidates or an error, the last one with a finishReason or the
// error (comments may follow: clients skip them); Responses, events whose JSON "type" names the
// event and whose sequence_number counts from 0, the last response.completed,
// response.incomplete or response.failed (comments anywhere: the openai SDK skips them).
// Bit 0 clear: the body as a whole answer (status 200 or an error status from bits 1-7) must
// come out as JSON with a valid status; and as the door's request (Gemini: streamed when bit
// 3 is set), parse_client_request must either fail with a message or give an `original` that
// the OpenAI parser accepts.
#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/dialect/egress.hpp>
#include <tokenradar/sse/sse_parser.hpp>

#include <boost/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

using namespace tokenradar;
using namespace tokenradar::dialect;

void check(bool ok) {
    if (!ok) std::abort();
}

boost::json::value parse_json(std::string_view text, bool& ok) {
    boost::system::error_code ec;
    boost::json::parse_options opts;
    opts.max_depth = 1024;
    auto v = boost::json::parse(text, ec, {}, opts);
    ok = !ec;
    return v;
}

ClientApi door_of(std::uint8_t selector) {
    if (selector & 4) return ClientApi::gemini;
    return selector & 2 ? ClientApi::openai_responses : ClientApi::anthropic;
}

// Whether an Anthropic event is well formed; `over` when it is the last one.
bool anthropic_event(const sse::SseEvent& e, const boost::json::object& o, bool& over) {
    const auto* type = o.if_contains("type");
    over = e.event == "message_stop" || e.event == "error";
    return type != nullptr && type->is_string() && type->get_string() == e.event;
}

// Whether a Gemini chunk is well formed; `over` when it is the last one.
bool gemini_chunk(const boost::json::object& o, bool& over) {
    if (const auto* error = o.if_contains("error")) {
        over = true;
        return error->is_object() && error->get_object().contains("status");
    }
    const auto* candidates = o.if_contains("candidates");
    if (candidates == nullptr || !candidates->is_array() || candidates->get_array().empty())
        return false;
    const auto& first = candidates->get_array()[0];
    over = first.is_object() && first.get_object().contains("finishReason");
    return first.is_object() && first.get_object().contains("content");
}

// Whether a Responses event is well formed and in sequence; `over` when it is the last one.
bool responses_event(const sse::SseEvent& e, const boost::json::object& o, std::int64_t& next,
                     bool& over) {
    const auto* type = o.if_contains("type");
    const auto* sequence = o.if_contains("sequence_number");
    over = e.event == "response.completed" || e.event == "response.incomplete" ||
           e.event == "response.failed";
    return type != nullptr && type->is_string() && type->get_string() == e.event &&
           sequence != nullptr && sequence->is_int64() && sequence->get_int64() == next++;
}

void fuzz_stream(std::uint8_t selector, std::string_view body) {
    const std::size_t chunk = 1 + (selector >> 4) * 7;
    const ClientApi api = door_of(selector);
    Egress egress(api);
    std::string out;
    for (std::string_view rest = body; !rest.empty();) {
        const std::size_t n = chunk < rest.size() ? chunk : rest.size();
        egress.stream(rest.substr(0, n), out);
        rest.remove_prefix(n);
    }
    egress.end(out);

    sse::SseParser::Options options;
    options.expose_comments = true;
    sse::SseParser client(options);
    bool over = false;
    std::int64_t sequence = 0;
    auto fed = client.feed(out, [&](const sse::SseEvent& e) {
        if (e.is_comment) {
            check(api != ClientApi::anthropic);
            return;
        }
        check(!over);
        bool ok = false;
        const auto v = parse_json(e.data, ok);
        check(ok && v.is_object());
        const boost::json::object& o = v.as_object();
        switch (api) {
            case ClientApi::gemini:
                check(gemini_chunk(o, over));
                break;
            case ClientApi::openai_responses:
                check(responses_event(e, o, sequence, over));
                break;
            default:
                check(anthropic_event(e, o, over));
                break;
        }
    });
    check(fed.has_value());
    check(!client.finish());
    check(over);
}

void fuzz_whole(std::uint8_t selector, std::string_view body) {
    const ClientApi api = door_of(selector);
    const Egress egress(api);
    int status = selector < 64 ? 200 : 400 + selector % 200;
    std::string content_type = "application/json";
    std::string out(body);
    egress.whole(status, content_type, out);
    check(status >= 200 && status <= 599);
    if (!out.empty()) {
        bool ok = false;
        (void)parse_json(out, ok);
        check(ok);
    }
    auto request = parse_client_request(api, body, "m", (selector & 8) != 0);
    if (!request) {
        check(!request.error().message.empty());
        return;
    }
    check(parse_request(Api::openai, boost::json::serialize(request->original)).has_value());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::uint8_t selector = data[0];
    std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
    if (selector & 1)
        fuzz_stream(selector, body);
    else
        fuzz_whole(selector, body);
    return 0;
}

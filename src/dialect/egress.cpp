#include <tokenradar/dialect/egress.hpp>

#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/sse/sse_writer.hpp>

#include "json_util.hpp"

#include <fmt/format.h>

namespace tokenradar::dialect {

Result<ChatRequest> parse_client_request(Api client_api, std::string_view body) {
    auto chat = parse_request(client_api, body);
    if (!chat || client_api == Api::openai) return chat;
    chat->original = json::object();
    auto openai = emit_openai_request(*chat);
    if (!openai) return openai.error();
    auto original = parse_object(*openai, Errc::internal);
    if (!original) return original.error();
    chat->original = std::move(*original);
    chat->include_usage = true;
    return chat;
}

Egress::Egress(Api client_api)
    : api_(client_api),
      parser_([] {
          sse::SseParser::Options options;
          options.expose_comments = true;
          return options;
      }()),
      encoder_(make_stream_encoder(client_api, StreamMeta{})) {}

Egress::~Egress() = default;

void Egress::whole(int& status, std::string& content_type, std::string& body) const {
    if (content_type != "application/json" || body.empty()) return;
    if (status >= 200 && status < 300) {
        if (auto response = parse_openai_response(body)) {
            body = emit_response(api_, *response);
            return;
        } else {
            const Errc code = Errc::protocol_error;
            body = emit_error_body(
                api_, code,
                fmt::format("the answer could not be translated: {}", response.error().message));
            status = error_http_status(api_, code);
            return;
        }
    }
    if (status < 400) return;
    const ErrorBody error = parse_error_body(Api::openai, status, body);
    body = emit_error_body(api_, error.code, error.message);
    status = error_http_status(api_, error.code);
}

void Egress::stream(std::string_view bytes, std::string& out) {
    if (terminated_ || bytes.empty()) return;
    auto fed = parser_.feed(bytes, [&](const sse::SseEvent& event) { on_event(event, out); });
    if (!fed) fail(Errc::protocol_error, fed.error().message, out);
}

void Egress::end(std::string& out) {
    if (terminated_) return;
    if (parser_.finish()) {
        fail(Errc::protocol_error, "the stream ended inside an event", out);
        return;
    }
    encoder_->finish(out);
    terminated_ = true;
}

void Egress::on_event(const sse::SseEvent& event, std::string& out) {
    if (terminated_) return;
    if (event.is_comment) {
        if (api_ == Api::anthropic) sse::SseWriter::event(out, "ping", R"({"type":"ping"})");
        return;
    }
    deltas_.clear();
    if (auto decoded = decoder_.decode(event.event, event.data, deltas_); !decoded) {
        fail(Errc::protocol_error, decoded.error().message, out);
        return;
    }
    for (const StreamDelta& d : deltas_) {
        encoder_->encode(d, out);
        if (d.kind == StreamDelta::Kind::done || d.kind == StreamDelta::Kind::error) {
            terminated_ = true;
            return;
        }
    }
}

void Egress::fail(Errc code, std::string_view message, std::string& out) {
    StreamDelta error = StreamDelta::make(StreamDelta::Kind::error);
    error.error_code = code;
    error.text = fmt::format("the stream could not be translated: {}", message);
    encoder_->encode(error, out);
    terminated_ = true;
}

}  // namespace tokenradar::dialect

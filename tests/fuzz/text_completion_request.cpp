// libFuzzer target: a client's legacy /v1/completions body. A body that parses is passed
// through as the gateway sends it (with_model): still one JSON object, its `model` the
// upstream's, and for a stream stream_options.include_usage set.
#include <tokenradar/dialect/text_completion.hpp>
#include <tokenradar/dialect/translate.hpp>

#include <boost/json/parse.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace json = boost::json;
    using namespace tokenradar::dialect;
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    auto req = parse_text_completion_request(body);
    if (!req) return 0;
    if (req->messages.empty()) std::abort();  // a prompt is required
    const std::string sent = with_model(req->original, body, "up/model", req->stream);
    boost::system::error_code ec;
    const json::value v = json::parse(sent, ec);
    if (ec || !v.is_object()) std::abort();
    const auto* model = v.as_object().if_contains("model");
    if (model == nullptr || !model->is_string() || model->get_string() != "up/model") std::abort();
    if (req->stream) {
        const auto* options = v.as_object().if_contains("stream_options");
        const auto* usage = options != nullptr && options->is_object()
                                ? options->as_object().if_contains("include_usage")
                                : nullptr;
        if (usage == nullptr || !usage->is_bool() || !usage->get_bool()) std::abort();
    }
    return 0;
}

#pragma once
// Extra request body fields (`--extra-body`, a workload's `[extra_body]`): engine-specific
// fields bench has no option for (`ignore_eos`, `min_tokens`, vLLM's `stream_options.
// continuous_usage_stats`, Gemini's `generationConfig.thinkingConfig`...), merged into the
// body the target's dialect writes.
//
// Layers, lowest first: the workload's `[extra_body]`, then the target's (`--extra-body
// JSON` for every target, then `--extra-body NAME=JSON` for one). A higher layer wins per
// field; objects merge key by key. The result never overrides what bench itself writes
// (model, messages, stream, max_tokens, temperature...): a field the body already has is an
// error naming its path, because an override would silently change what is measured (a
// `stream: false` under a streaming workload, a fixed prompt defeating the unique nonce).
// Objects the body has are merged into (`stream_options`, `generationConfig`), so extra
// keys can go inside them. Pure functions, no I/O.

#include <tokenradar/core/error.hpp>

#include <boost/json/object.hpp>

#include <string>
#include <string_view>

namespace tokenradar::bench {

// `text` as a JSON object; Errc::bad_request with the parser's reason, or when it is valid
// JSON of another kind.
Result<boost::json::object> parse_extra_body(std::string_view text);

// Puts `layer` over `into`: objects key by key (recursively), any other value replaced.
void overlay_extra_body(boost::json::object& into, const boost::json::object& layer);

// The fields a request to a target carries: the workload's with the target's over them.
boost::json::object effective_extra_body(const boost::json::object& workload,
                                         const boost::json::object& target);

// `body` (a JSON object, as a dialect wrote it) with `extra` merged in. New top-level fields
// are appended to the dialect's bytes as they are; merging into one of the body's objects
// re-serialises the body. Errc::bad_request naming the path (`stream`,
// `stream_options.include_usage`) when `extra` sets a value the body already has.
Result<std::string> merge_extra_body(std::string body, const boost::json::object& extra);

}  // namespace tokenradar::bench

#pragma once
// A benchmark target: `NAME=API:BASE_URL#MODEL`, e.g.
// `gpt4o=openai:https://api.openai.com/v1#gpt-4o`. Any OpenAI-compatible server (vLLM,
// llama.cpp, Ollama, a gateway) is an `openai` target; `openai-responses` asks the same base URL's
// `/responses` (OpenAI's Responses API, a TokenRadar gateway's or sim's `/v1/responses`). The key
// comes from `--key-env NAME=VAR` (NAME `*`: every target), else from the API's usual variable
// (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY) but only for the API's own host or a loopback
// host. It is held as a Secret and never printed.

#include <tokenradar/core/error.hpp>
#include <tokenradar/core/secret.hpp>
#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/net/url.hpp>

#include <boost/json/object.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace tokenradar::bench {

struct Target {
    std::string name;
    dialect::Api api = dialect::Api::openai;
    net::Url base;  // base.target is the base path ("/v1")
    std::string model;
    Secret key;
    std::string
        key_env;  // where the key came from (for messages; never the key itself); may be empty
    // `--extra-body`: fields merged into every request body to this target, over the
    // workload's (extra_body.hpp).
    boost::json::object extra_body;
};

// Looks a variable up (std::getenv in the program, a map in tests).
using EnvLookup = std::function<std::optional<std::string>(std::string_view)>;

// Errc::bad_request with a one-line message naming what is wrong and the expected shape.
// `key_env` maps target names to the variable holding their key. A missing key is not an
// error here (local servers need none); the caller warns.
Result<Target> parse_target(std::string_view spec,
                            const std::map<std::string, std::string>& key_env,
                            const EnvLookup& env);

}  // namespace tokenradar::bench

#include <tokenradar/cache/request_key.hpp>

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <vector>

namespace tokenradar::cache {
namespace {

namespace json = boost::json;

constexpr std::array<std::string_view, 8> kIgnoredFields = {
    "model",    "stream", "stream_options",  "user", "safety_identifier",
    "metadata", "store",  "prompt_cache_key"};

bool ignored(std::string_view key) {
    return std::find(kIgnoredFields.begin(), kIgnoredFields.end(), key) != kIgnoredFields.end();
}

void canonical(const json::value& v, std::string& out);

void canonical_object(const json::object& o, std::string& out, bool top_level) {
    std::vector<const json::key_value_pair*> members;
    members.reserve(o.size());
    for (const auto& kv : o) {
        if (top_level && ignored(kv.key())) continue;
        members.push_back(&kv);
    }
    std::sort(members.begin(), members.end(),
              [](const auto* a, const auto* b) { return a->key() < b->key(); });
    out += '{';
    for (std::size_t i = 0; i < members.size(); ++i) {
        if (i > 0) out += ',';
        out += json::serialize(json::string_view(members[i]->key()));
        out += ':';
        canonical(members[i]->value(), out);
    }
    out += '}';
}

void canonical(const json::value& v, std::string& out) {
    if (const auto* o = v.if_object()) {
        canonical_object(*o, out, false);
    } else if (const auto* a = v.if_array()) {
        out += '[';
        for (std::size_t i = 0; i < a->size(); ++i) {
            if (i > 0) out += ',';
            canonical((*a)[i], out);
        }
        out += ']';
    } else {
        out += json::serialize(v);
    }
}

void length_prefixed(std::string_view s, std::string& out) {
    out += std::to_string(s.size());
    out += ':';
    out.append(s);
}

std::string sha256(std::string_view bytes) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int size = 0;
    EVP_Digest(bytes.data(), bytes.size(), digest.data(), &size, EVP_sha256(), nullptr);
    return std::string(reinterpret_cast<const char*>(digest.data()), size);
}

std::string scoped(std::string_view tenant, std::string_view virtual_model) {
    std::string out;
    length_prefixed(tenant, out);
    length_prefixed(virtual_model, out);
    return out;
}

// The text of a user message whose content is a string or text parts only.
std::optional<std::string> user_text(const json::value& message) {
    const auto* m = message.if_object();
    if (m == nullptr) return std::nullopt;
    const auto* role = m->if_contains("role");
    if (role == nullptr || !role->is_string() || role->get_string() != "user") return std::nullopt;
    const auto* content = m->if_contains("content");
    if (content == nullptr) return std::nullopt;
    if (const auto* s = content->if_string()) return std::string(*s);
    const auto* parts = content->if_array();
    if (parts == nullptr) return std::nullopt;
    std::string text;
    for (const auto& part : *parts) {
        const auto* p = part.if_object();
        const auto* type = p != nullptr ? p->if_contains("type") : nullptr;
        const auto* t = p != nullptr ? p->if_contains("text") : nullptr;
        if (type == nullptr || !type->is_string() || type->get_string() != "text" || t == nullptr ||
            !t->is_string()) {
            return std::nullopt;
        }
        if (!text.empty()) text += '\n';
        text.append(t->get_string());
    }
    return text;
}

}  // namespace

std::string exact_key(std::string_view tenant, std::string_view virtual_model,
                      const json::object& request) {
    std::string text = scoped(tenant, virtual_model);
    canonical_object(request, text, true);
    return sha256(text);
}

std::string hex(std::string_view digest) {
    constexpr std::string_view kDigits = "0123456789abcdef";
    std::string out;
    out.reserve(digest.size() * 2);
    for (const char c : digest) {
        const auto b = static_cast<unsigned char>(c);
        out += kDigits[b >> 4];
        out += kDigits[b & 0xf];
    }
    return out;
}

std::optional<std::string_view> not_cacheable(const json::object& request, bool sampling_ok) {
    if (const auto* n = request.if_contains("n")) {
        if (!(n->is_int64() && n->get_int64() == 1) && !(n->is_uint64() && n->get_uint64() == 1))
            return "n is not 1";
    }
    if (const auto* lp = request.if_contains("logprobs"); lp != nullptr && !lp->is_null()) {
        if (!(lp->is_bool() && !lp->get_bool())) return "logprobs are asked for";
    }
    if (const auto* modalities = request.if_contains("modalities")) {
        if (const auto* a = modalities->if_array()) {
            for (const auto& m : *a) {
                if (m.is_string() && m.get_string() == "audio") return "audio output";
            }
        }
    }
    if (sampling_ok) return std::nullopt;
    const auto* seed = request.if_contains("seed");
    if (seed != nullptr && !seed->is_null()) return std::nullopt;
    const auto* t = request.if_contains("temperature");
    const bool greedy = t != nullptr && t->is_number() && t->to_number<double>() == 0.0;
    if (!greedy) return "sampling (temperature over 0) without a seed";
    return std::nullopt;
}

std::optional<SemanticQuery> semantic_query(std::string_view tenant, std::string_view virtual_model,
                                            const json::object& request, std::size_t max_turns,
                                            std::size_t max_question_bytes) {
    const auto* messages_value = request.if_contains("messages");
    const auto* messages = messages_value != nullptr ? messages_value->if_array() : nullptr;
    if (messages == nullptr || messages->empty()) return std::nullopt;
    std::size_t user_turns = 0;
    for (const auto& m : *messages) {
        const auto* o = m.if_object();
        const auto* role = o != nullptr ? o->if_contains("role") : nullptr;
        if (role != nullptr && role->is_string() && role->get_string() == "user") ++user_turns;
    }
    if (user_turns > max_turns) return std::nullopt;
    auto question = user_text(messages->back());
    if (!question || question->empty() || question->size() > max_question_bytes)
        return std::nullopt;
    json::object context = request;
    context["messages"].as_array().pop_back();
    std::string text = scoped(tenant, virtual_model);
    canonical_object(context, text, true);
    return SemanticQuery{sha256(text), std::move(*question)};
}

}  // namespace tokenradar::cache

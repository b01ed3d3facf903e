#include <tokenradar/dialect/prompt_cache.hpp>

#include <tokenradar/core/token_estimate.hpp>

#include <algorithm>
#include <cstddef>

namespace tokenradar::dialect {

namespace {

std::size_t part_bytes(const ContentPart& p) noexcept {
    return p.kind == ContentPart::Kind::text ? p.text.size() : 0;
}

std::size_t message_bytes(const Message& m) noexcept {
    std::size_t bytes = 0;
    for (const ContentPart& p : m.content) bytes += part_bytes(p);
    for (const ToolCall& c : m.tool_calls) bytes += c.name.size() + c.arguments.size();
    return bytes;
}

// A block the Anthropic emitter sends (it leaves out empty text beside other blocks).
bool sent(const ContentPart& p) noexcept {
    return p.kind != ContentPart::Kind::text || !p.text.empty();
}

ContentPart* last_sent_part(Message& m) noexcept {
    for (auto it = m.content.rbegin(); it != m.content.rend(); ++it) {
        if (sent(*it)) return &*it;
    }
    return nullptr;
}

}  // namespace

std::string_view to_string(PromptCache mode) noexcept {
    return mode == PromptCache::automatic ? "auto" : "off";
}

std::optional<PromptCache> parse_prompt_cache(std::string_view text) noexcept {
    if (text == "off") return PromptCache::off;
    if (text == "auto") return PromptCache::automatic;
    return std::nullopt;
}

bool has_cache_control(const ChatRequest& req) noexcept {
    const auto marked = [](const ContentPart& p) { return !p.cache_control.empty(); };
    return std::any_of(req.tools.begin(), req.tools.end(),
                       [](const ToolDefinition& t) { return !t.cache_control.empty(); }) ||
           std::any_of(req.messages.begin(), req.messages.end(), [&](const Message& m) {
               return std::any_of(m.content.begin(), m.content.end(), marked);
           });
}

int add_prompt_cache_breakpoints(ChatRequest& req, std::int64_t min_tokens) {
    if (has_cache_control(req)) return 0;
    const auto long_enough = [&](std::size_t bytes) {
        return estimate_tokens_from_bytes(bytes) >= min_tokens;
    };
    int added = 0;
    std::size_t prefix = 0;
    for (const ToolDefinition& t : req.tools)
        prefix += t.name.size() + t.description.size() + t.parameters.size();
    if (!req.tools.empty() && long_enough(prefix)) {
        req.tools.back().cache_control = kEphemeralCacheControl;
        ++added;
    }

    ContentPart* last_system = nullptr;
    for (Message& m : req.messages) {
        if (m.role != Role::system) continue;
        prefix += message_bytes(m);
        if (ContentPart* p = last_sent_part(m)) last_system = p;
    }
    if (last_system != nullptr && long_enough(prefix)) {
        last_system->cache_control = kEphemeralCacheControl;
        ++added;
    }

    // The final user turn: the trailing user and tool messages (system ones are hoisted).
    std::size_t turn = req.messages.size();
    while (turn > 0 && req.messages[turn - 1].role != Role::assistant) --turn;
    if (turn == 0) return added;  // one turn: nothing before it but tools and system
    // The last block sent before it; an assistant turn of tool calls only has none.
    std::size_t target = turn;
    ContentPart* block = nullptr;
    while (target > 0 && block == nullptr) {
        --target;
        if (req.messages[target].role != Role::system) block = last_sent_part(req.messages[target]);
    }
    if (block == nullptr) return added;
    for (std::size_t i = 0; i <= target; ++i) {
        if (req.messages[i].role != Role::system) prefix += message_bytes(req.messages[i]);
    }
    if (long_enough(prefix)) {
        block->cache_control = kEphemeralCacheControl;
        ++added;
    }
    return added;
}

}  // namespace tokenradar::dialect

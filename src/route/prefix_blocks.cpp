#include <tokenradar/route/prefix_blocks.hpp>

#include <xxhash.h>

#include <string>
#include <string_view>

namespace tokenradar::route {
namespace {

constexpr std::uint64_t kSeed = 0x7472'6166'6669'6e31;  // "traffin1": the same on every node
constexpr char kSeparator = '\x1f';

// The prompt as a KV cache sees it: what precedes the model's answer, in order. Parameters
// (temperature, max_tokens...) are not part of it.
void append_canonical(const dialect::ChatRequest& chat, std::string& out, std::size_t limit) {
    auto add = [&](std::string_view piece) {
        if (out.size() >= limit) return;
        out.append(piece.substr(0, limit - out.size()));
        out.push_back(kSeparator);
    };
    for (const auto& tool : chat.tools) {
        add(tool.name);
        add(tool.description);
        add(tool.parameters);
    }
    for (const auto& message : chat.messages) {
        add(dialect::to_string(message.role));
        for (const auto& part : message.content) {
            add(part.text);
            add(part.url);
            add(part.data);
        }
        for (const auto& call : message.tool_calls) {
            add(call.name);
            add(call.arguments);
        }
        add(message.tool_call_id);
        if (out.size() >= limit) return;
    }
}

}  // namespace

std::vector<std::uint64_t> prefix_blocks(const dialect::ChatRequest& chat, std::size_t block_bytes,
                                         std::size_t max_blocks) {
    std::vector<std::uint64_t> hashes;
    if (block_bytes == 0 || max_blocks == 0) return hashes;
    std::string text;
    append_canonical(chat, text, block_bytes * max_blocks);
    const std::size_t blocks = std::min(text.size() / block_bytes, max_blocks);
    hashes.reserve(blocks);
    std::uint64_t chain = kSeed;
    for (std::size_t i = 0; i < blocks; ++i) {
        chain = XXH3_64bits_withSeed(text.data() + i * block_bytes, block_bytes, chain);
        hashes.push_back(chain);
    }
    return hashes;
}

AffinityTable::AffinityTable(std::size_t capacity) : capacity_(std::max<std::size_t>(capacity, 1)) {
    order_.reserve(capacity_);
}

std::optional<AffinityMatch> AffinityTable::longest(std::span<const std::uint64_t> blocks) const {
    const std::lock_guard lock(mutex_);
    for (std::size_t i = blocks.size(); i > 0; --i) {
        if (auto it = upstream_of_.find(blocks[i - 1]); it != upstream_of_.end()) {
            return AffinityMatch{it->second, i};
        }
    }
    return std::nullopt;
}

void AffinityTable::remember(std::span<const std::uint64_t> blocks, std::size_t upstream) {
    const std::lock_guard lock(mutex_);
    for (const std::uint64_t block : blocks) {
        auto [it, inserted] = upstream_of_.try_emplace(block, static_cast<std::uint32_t>(upstream));
        if (!inserted) {
            it->second = static_cast<std::uint32_t>(upstream);  // the latest server holds it
            continue;
        }
        if (order_.size() < capacity_) {
            order_.push_back(block);
            continue;
        }
        upstream_of_.erase(order_[next_]);
        order_[next_] = block;
        next_ = (next_ + 1) % capacity_;
    }
}

std::size_t AffinityTable::size() const {
    const std::lock_guard lock(mutex_);
    return upstream_of_.size();
}

}  // namespace tokenradar::route

#include <tokenradar/net/api_keys.hpp>

#include <tokenradar/core/labels.hpp>

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace tokenradar::net {

std::string hash_api_key(std::string_view key) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(key.data(), key.size(), digest, &len, EVP_sha256(), nullptr);
    std::string hex;
    hex.reserve(len * 2);
    for (unsigned i = 0; i < len; ++i) hex += fmt::format("{:02x}", digest[i]);
    return hex;
}

std::optional<std::size_t> find_bearer_key(std::string_view authorization,
                                           std::span<const ApiKey> keys) {
    constexpr std::string_view kBearer = "Bearer ";
    if (authorization.size() <= kBearer.size() ||
        authorization.substr(0, kBearer.size()) != kBearer) {
        return std::nullopt;
    }
    return find_api_key(authorization.substr(kBearer.size()), keys);
}

std::optional<std::size_t> find_api_key(std::string_view key, std::span<const ApiKey> keys) {
    if (key.empty()) return std::nullopt;
    const std::string digest = hash_api_key(key);
    std::optional<std::size_t> found;
    // Every key is compared, so the time says nothing about which one matched.
    for (std::size_t i = 0; i < keys.size(); ++i) {
        if (CRYPTO_memcmp(digest.data(), keys[i].sha256.data(), digest.size()) == 0) found = i;
    }
    return found;
}

std::vector<ApiKey> load_api_keys(const std::vector<ConfigTable>& tables) {
    std::vector<ApiKey> keys;
    std::set<std::string> names;
    for (const ConfigTable& k : tables) {
        k.reject_unknown_keys({"name", "sha256"});
        ApiKey key{k.require_string("name"), k.require_string("sha256")};
        if (!is_simple_name(key.name)) k.fail("name", kSimpleNameRule);
        std::transform(key.sha256.begin(), key.sha256.end(), key.sha256.begin(),
                       [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        if (key.sha256.size() != 64 ||
            key.sha256.find_first_not_of("0123456789abcdef") != std::string::npos) {
            k.fail("sha256", "64 hex digits (tokenradar serve --hash-key prints them)");
        }
        if (!names.insert(key.name).second) k.fail("name", "a name not used by another key");
        keys.push_back(std::move(key));
    }
    return keys;
}

}  // namespace tokenradar::net

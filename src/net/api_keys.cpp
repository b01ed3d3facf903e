#include <tokenradar/net/api_keys.hpp>

#include <tokenradar/core/labels.hpp>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace tokenradar::net {

namespace {

// SHA-256 fetched once: OpenSSL 3 looks an algorithm up (a lock and a property query, ~2,200
// instructions) on every EVP_Digest given EVP_sha256(). Never freed: it lives as long as
// the process.
const EVP_MD* sha256_md() {
    static const EVP_MD* const md = [] {
        const EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
        return fetched != nullptr ? fetched : EVP_sha256();
    }();
    return md;
}

}  // namespace

std::string hash_api_key(std::string_view key) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(key.data(), key.size(), digest, &len, sha256_md(), nullptr);
    // By hand: a fmt::format per byte was ~19,000 instructions per authenticated request.
    constexpr std::string_view kHex = "0123456789abcdef";
    std::string hex(std::size_t{len} * 2, '\0');
    for (unsigned i = 0; i < len; ++i) {
        hex[2 * i] = kHex[digest[i] >> 4];
        hex[2 * i + 1] = kHex[digest[i] & 0x0f];
    }
    return hex;
}

std::optional<std::string> bearer_digest(std::string_view authorization) {
    constexpr std::string_view kBearer = "Bearer ";
    if (authorization.size() <= kBearer.size() ||
        authorization.substr(0, kBearer.size()) != kBearer) {
        return std::nullopt;
    }
    return hash_api_key(authorization.substr(kBearer.size()));
}

std::optional<std::size_t> find_bearer_key(std::string_view authorization,
                                           std::span<const ApiKey> keys) {
    const auto digest = bearer_digest(authorization);
    if (!digest) return std::nullopt;
    return find_digest(*digest, keys);
}

std::optional<std::size_t> find_digest(std::string_view digest, std::span<const ApiKey> keys) {
    std::optional<std::size_t> found;
    if (digest.size() != 64) return found;
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

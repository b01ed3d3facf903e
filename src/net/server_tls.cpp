#include <tokenradar/net/server_tls.hpp>

#include <boost/asio/ssl/error.hpp>
#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <utility>

namespace tokenradar::net {
namespace {

namespace ssl = boost::asio::ssl;

// OpenSSL's reason for the last failure (the error queue's latest entry), else `fallback`.
std::string openssl_reason(const boost::system::error_code& fallback) {
    std::string reason;
    while (const unsigned long e = ERR_get_error()) {
        char text[256];
        ERR_error_string_n(e, text, sizeof text);
        reason = text;
    }
    return reason.empty() ? fallback.message() : reason;
}

Result<std::shared_ptr<ssl::context>> make_context(const std::string& cert_file,
                                                   const std::string& key_file) {
    auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
    ERR_clear_error();
    boost::system::error_code ec;
    context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                             ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                             ssl::context::no_tlsv1_1 | ssl::context::single_dh_use,
                         ec);
    context->use_certificate_chain_file(cert_file, ec);
    if (ec) {
        return Error(Errc::tls_failed,
                     fmt::format("tls_cert '{}': expected a PEM certificate chain: {}", cert_file,
                                 openssl_reason(ec)));
    }
    context->use_private_key_file(key_file, ssl::context::pem, ec);
    // OpenSSL checks the key against the certificate as it loads it (Asio's code carries
    // OpenSSL's packed error).
    const bool mismatch =
        ec && ec.category() == boost::asio::error::get_ssl_category() &&
        ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH;
    if (ec && !mismatch) {
        return Error(Errc::tls_failed, fmt::format("tls_key '{}': expected a PEM private key: {}",
                                                   key_file, openssl_reason(ec)));
    }
    if (mismatch || SSL_CTX_check_private_key(context->native_handle()) != 1) {
        return Error(Errc::tls_failed,
                     fmt::format("tls_key '{}': expected the private key of tls_cert '{}': {}",
                                 key_file, cert_file, openssl_reason(ec)));
    }
    return context;
}

}  // namespace

ServerTls::ServerTls(std::string cert_file, std::string key_file)
    : cert_file_(std::move(cert_file)), key_file_(std::move(key_file)) {}

Result<std::shared_ptr<ServerTls>> ServerTls::load(std::string cert_file, std::string key_file) {
    std::shared_ptr<ServerTls> tls(new ServerTls(std::move(cert_file), std::move(key_file)));
    if (auto loaded = tls->reload(); !loaded) return loaded.error();
    return tls;
}

Result<void> ServerTls::reload() {
    auto context = make_context(cert_file_, key_file_);
    if (!context) return context.error();
    const std::lock_guard lock(mutex_);
    context_ = std::move(*context);
    return {};
}

std::shared_ptr<ssl::context> ServerTls::context() const {
    const std::lock_guard lock(mutex_);
    return context_;
}

}  // namespace tokenradar::net

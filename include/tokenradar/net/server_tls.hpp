#pragma once
// TLS for HttpServer's listener ([listener] tls_cert / tls_key): a certificate chain and its
// private key, PEM files, loaded into an OpenSSL context that new connections take.
//
//     auto tls = ServerTls::load("/etc/tokenradar/cert.pem", "/etc/tokenradar/key.pem");
//     server.set_tls(*tls);          // before start()
//     (*tls)->reload();              // SIGHUP: new connections get the files' new contents
//
// TLS 1.2 and 1.3 only. A reload that fails (a file missing, a key that does not match the
// certificate) keeps the context in use and says why; connections already open keep the
// context they began with.
//
// Threads: context() and reload() from any threads (one mutex around a shared_ptr swap).

#include <tokenradar/core/error.hpp>

#include <boost/asio/ssl/context.hpp>

#include <memory>
#include <mutex>
#include <string>

namespace tokenradar::net {

class ServerTls {
  public:
    // Errc::tls_failed naming the file and OpenSSL's reason.
    static Result<std::shared_ptr<ServerTls>> load(std::string cert_file, std::string key_file);

    ServerTls(const ServerTls&) = delete;
    ServerTls& operator=(const ServerTls&) = delete;

    // Reads both files again; on success new connections use them.
    Result<void> reload();
    [[nodiscard]] std::shared_ptr<boost::asio::ssl::context> context() const;
    [[nodiscard]] const std::string& cert_file() const noexcept { return cert_file_; }

  private:
    ServerTls(std::string cert_file, std::string key_file);

    std::string cert_file_;
    std::string key_file_;
    mutable std::mutex mutex_;
    std::shared_ptr<boost::asio::ssl::context> context_;
};

}  // namespace tokenradar::net

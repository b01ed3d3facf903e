#pragma once
// A throwaway certificate authority and a server certificate it signed, generated with the
// openssl CLI into a directory (nothing secret is checked in): ca.pem, ca.key, server.pem,
// server.key. The server certificate's names are `subject_alt_names` (openssl's syntax).

#include <cstdlib>
#include <filesystem>
#include <string>

namespace tokenradar::testing {

// True when openssl made all four files; its output is in `dir`/gen.log.
inline bool make_test_pki(const std::filesystem::path& dir,
                          const std::string& subject_alt_names = "DNS:localhost") {
    std::filesystem::create_directories(dir);
    const std::string script =
        "cd '" + dir.string() +
        "' && ( "
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
        "-keyout ca.key -out ca.pem -days 2 -subj '/CN=TokenRadar Test CA' && "
        "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
        "-keyout server.key -out server.csr -subj '/CN=localhost' && "
        "printf 'subjectAltName=" +
        subject_alt_names +
        "\\nbasicConstraints=CA:FALSE\\n' > ext.cnf && "
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
        "-out server.pem -days 2 -extfile ext.cnf ) > gen.log 2>&1";
    return std::system(script.c_str()) == 0;
}

}  // namespace tokenradar::testing

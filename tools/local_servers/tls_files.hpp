#pragma once
// Certificates and keys for TLS tests, made at run time with the `openssl` command-line tool
// (OpenSSL 3.0 or later: `req -x509 -CA` signs in one step). Every key is an unencrypted EC
// P-256 PEM key; every certificate but the expired one is valid from now for 2 days. One CA
// signs them all, except `other_ca_cert`, which signs nothing: a client trusting only it
// verifies no certificate here (the "unknown CA" case).
#include <filesystem>
#include <string>

namespace fencelock::local {

/// Paths of the PEM files make_tls_files() wrote.
struct TlsFiles {
    /// The directory holding them all.
    std::filesystem::path dir;
    /// The test CA (self-signed, CA:TRUE): trust it to verify every certificate below.
    std::string ca_cert;
    /// A server's: SAN IP:127.0.0.1, DNS:localhost; extendedKeyUsage serverAuth.
    std::string server_cert;
    std::string server_key;
    /// A client's, for `tls-auth-clients yes`: extendedKeyUsage clientAuth, no SAN.
    std::string client_cert;
    std::string client_key;
    /// Like server_cert (same SAN) but valid only from 2020-01-01 to 2020-01-02 (signed with
    /// `openssl ca -startdate/-enddate`): verification fails with "certificate has expired".
    std::string expired_cert;
    std::string expired_key;
    /// A server's for another host: SAN DNS:wrong.example only, so verifying 127.0.0.1 or
    /// localhost against it fails; verifying the name wrong.example succeeds.
    std::string wrong_host_cert;
    std::string wrong_host_key;
    /// An unrelated self-signed CA (its key is not kept).
    std::string other_ca_cert;
};

/// Writes the CA, the certificates and their keys into `dir` (which must exist), eight openssl
/// runs (about 0.1 s here). Throws std::runtime_error naming the step that failed, with what
/// openssl printed.
TlsFiles make_tls_files(const std::filesystem::path& dir);

/// make_tls_files() once per process, into a private directory under /tmp that is removed at
/// exit. Thread-safe; throws (each call, again) when generation failed.
const TlsFiles& shared_tls_files();

}  // namespace fencelock::local

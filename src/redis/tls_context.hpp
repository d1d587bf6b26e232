#pragma once
// OpenSSL's side of the transport (redis/transport.hpp): one SSL_CTX per set of TLS options
// (trust store, client certificate), shared by every connection that uses them, and the
// reasons a TLS step failed, named for people and programs.
#include <expected>
#include <memory>
#include <string>
#include <string_view>

#include "fencelock/redis_url.hpp"

struct ssl_ctx_st;
struct ssl_st;

namespace fencelock::detail {

/// The context for `tls`, loaded once per distinct options and process: the CA file or
/// directory (else the system trust store), the client certificate and key, verification
/// (unless insecure), TLS 1.2 at least. Why not, in words (never a key's bytes), on failure.
std::expected<std::shared_ptr<ssl_ctx_st>, std::string> tls_context(const TlsOptions& tls);

/// Sets what `ssl` sends as SNI and verifies against the certificate's SAN: `name` (a DNS
/// name or an IP address literal). Nothing is verified when `tls.insecure`.
bool set_peer_name(ssl_st* ssl, const std::string& name, bool insecure);

/// Why a TLS step failed, from OpenSSL's error queue and the verification result.
struct TlsFailure {
    std::string
        words;  ///< e.g. "TLS handshake failed: certificate verify failed (unable to get local issuer certificate)"
    std::string_view cause;  ///< error_cause() name: tls_unknown_ca, tls_cert_expired, tls_hostname_mismatch,
                             ///< tls_client_cert_required, tls_to_plaintext_port, tls_handshake_failed
};
/// `ssl_error` is SSL_get_error's answer. Empties the thread's OpenSSL error queue.
/// Before the server's first answer (`answered` false), a failure after it asked for a client
/// certificate none is configured for is tls_client_cert_required, however the server ended
/// the connection (alert, reset, close).
TlsFailure describe_tls_failure(ssl_st* ssl, int ssl_error, bool answered);

/// Whether the server sent a CertificateRequest while no client certificate is configured.
bool asked_for_missing_certificate(ssl_st* ssl);

}  // namespace fencelock::detail

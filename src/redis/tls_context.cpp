#include "redis/tls_context.hpp"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

namespace fencelock::detail {
namespace {

std::string openssl_errors() {
    std::string out;
    while (const unsigned long e = ERR_get_error()) {
        char text[256];
        ERR_error_string_n(e, text, sizeof text);
        if (!out.empty()) out += "; ";
        out += text;
    }
    return out;
}

// Where a connection notes that the server asked for a client certificate it has none of.
int asked_for_certificate_index() {
    static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    return index;
}

// OpenSSL calls this only when the server sends a CertificateRequest and no certificate is
// configured. Under TLS 1.3 a server that insists answers with an alert after the handshake,
// and a reset can discard that alert unread: the note names the cause all the same.
int note_certificate_request(SSL* ssl, X509**, EVP_PKEY**) {
    SSL_set_ex_data(ssl, asked_for_certificate_index(), reinterpret_cast<void*>(1));
    return 0;  // none to send
}

std::expected<std::shared_ptr<ssl_ctx_st>, std::string> load(const TlsOptions& tls) {
    ERR_clear_error();
    std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
    if (!ctx) return std::unexpected("cannot create a TLS context: " + openssl_errors());
    SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
    // Writes may return after a record; a retried write may start at a moved buffer that holds
    // the same bytes (the caller's output buffer grows meanwhile).
    SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    // One recv(2) per reply rather than two (a record's header, then its body): halves the
    // read syscalls on a handoff chain. Transport::holds_bytes() accounts for what it buffers.
    SSL_CTX_set_read_ahead(ctx.get(), 1);
    if (!tls.ca_file.empty() || !tls.ca_dir.empty()) {
        const char* file = tls.ca_file.empty() ? nullptr : tls.ca_file.c_str();
        const char* dir = tls.ca_dir.empty() ? nullptr : tls.ca_dir.c_str();
        if (SSL_CTX_load_verify_locations(ctx.get(), file, dir) != 1)
            return std::unexpected("cannot load the CA certificates (tls_ca '" + tls.ca_file + "', tls_ca_dir '" +
                                   tls.ca_dir + "'): " + openssl_errors());
    } else if (SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
        return std::unexpected("cannot load the system trust store: " + openssl_errors());
    }
    if (!tls.cert_file.empty()) {
        if (SSL_CTX_use_certificate_chain_file(ctx.get(), tls.cert_file.c_str()) != 1)
            return std::unexpected("cannot load the client certificate (tls_cert '" + tls.cert_file +
                                   "'): " + openssl_errors());
        // The key's own bytes never reach a message: OpenSSL's error names the file's problem.
        if (SSL_CTX_use_PrivateKey_file(ctx.get(), tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
            return std::unexpected("cannot load the client key (tls_key '" + tls.key_file + "'): " + openssl_errors());
        if (SSL_CTX_check_private_key(ctx.get()) != 1)
            return std::unexpected("the client key (tls_key) does not match the certificate (tls_cert)");
    }
    SSL_CTX_set_verify(ctx.get(), tls.insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, nullptr);
    if (tls.cert_file.empty()) SSL_CTX_set_client_cert_cb(ctx.get(), note_certificate_request);
    return ctx;
}

std::string_view verify_cause(long result) {
    switch (result) {
        case X509_V_ERR_CERT_HAS_EXPIRED:
        case X509_V_ERR_CERT_NOT_YET_VALID: return "tls_cert_expired";
        case X509_V_ERR_HOSTNAME_MISMATCH:
        case X509_V_ERR_IP_ADDRESS_MISMATCH: return "tls_hostname_mismatch";
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
        case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
        case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE: return "tls_unknown_ca";
        default: return "tls_handshake_failed";
    }
}

}  // namespace

std::expected<std::shared_ptr<ssl_ctx_st>, std::string> tls_context(const TlsOptions& tls) {
    using Key = std::tuple<std::string, std::string, std::string, std::string, bool>;
    static std::mutex mutex;
    static std::map<Key, std::shared_ptr<SSL_CTX>> contexts;
    const Key key{tls.ca_file, tls.ca_dir, tls.cert_file, tls.key_file, tls.insecure};
    std::lock_guard lock(mutex);
    if (auto it = contexts.find(key); it != contexts.end()) return it->second;
    auto ctx = load(tls);
    if (ctx) contexts.emplace(key, *ctx);
    return ctx;
}

bool set_peer_name(ssl_st* ssl, const std::string& name, bool insecure) {
    in6_addr ip{};
    const bool literal = ::inet_pton(AF_INET, name.c_str(), &ip) == 1 || ::inet_pton(AF_INET6, name.c_str(), &ip) == 1;
    // SNI carries host names only (RFC 6066).
    if (!literal && SSL_set_tlsext_host_name(ssl, name.c_str()) != 1) return false;
    if (insecure) return true;
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    if (literal) return X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str()) == 1;
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    return X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0) == 1;
}

bool asked_for_missing_certificate(ssl_st* ssl) {
    return SSL_get_ex_data(ssl, asked_for_certificate_index()) != nullptr;
}

TlsFailure describe_tls_failure(ssl_st* ssl, int ssl_error, bool answered) {
    const unsigned long first = ERR_peek_error();
    const int reason = first == 0 ? 0 : ERR_GET_REASON(first);
    const std::string errors = openssl_errors();
    if (reason == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED ||
        (!answered && asked_for_missing_certificate(ssl) && reason != SSL_R_CERTIFICATE_VERIFY_FAILED))
        return {
            "the server asked for a client certificate, none is configured (tls_cert and tls_key), and it "
            "ended the connection: " +
                (errors.empty() ? std::string(errno != 0 ? std::strerror(errno) : "closed") : errors),
            "tls_client_cert_required"};
    if (ssl_error == SSL_ERROR_SYSCALL && errors.empty())
        return {errno == 0 ? "the server closed the connection during TLS (a plaintext port?)"
                           : std::string("TLS I/O failed: ") + std::strerror(errno),
                errno == 0 ? "handshake_closed" : "tls_handshake_failed"};
    if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED) {
        const long result = SSL_get_verify_result(ssl);
        return {std::string("the server's certificate was not accepted: ") + X509_verify_cert_error_string(result),
                verify_cause(result)};
    }
    if (reason == SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE || reason == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE)
        return {"the server refused the TLS handshake (a client certificate required or not trusted?): " + errors,
                "tls_handshake_failed"};
    if (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
        reason == SSL_R_UNKNOWN_PROTOCOL || reason == SSL_R_HTTP_REQUEST)
        return {"the server did not answer in TLS (a plaintext port? use redis:// there): " + errors,
                "tls_to_plaintext_port"};
    return {"TLS failed: " + (errors.empty() ? std::string("no reason given") : errors), "tls_handshake_failed"};
}

}  // namespace fencelock::detail

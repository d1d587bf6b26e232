#pragma once
// A throwaway redis-server for tests, the demo and benches: a free loopback port, a private
// directory, stopped and removed when the object dies. No persistence unless asked for.
// Optionally TLS (a TLS port, with or without a plaintext one), ACL users from an aclfile and a
// Unix socket; redis-cli (the readiness check, cli(), snapshot()) follows along.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace fencelock::local {

/// A loopback TCP port nobody listens on right now (bind to port 0, read it back).
std::uint16_t free_port();

/// Runs `argv` to completion and returns its exit status (-1 if it did not start).
int run_command(const std::vector<std::string>& argv);

/// tls-auth-clients: whether the server asks clients for a certificate and insists on one.
enum class TlsClientAuth {
    required,  ///< `yes`: a client without a certificate the CA signed is refused
    optional,  ///< `optional`: a certificate is verified if the client sends one
    off,       ///< `no`: none is asked for
};

/// TLS for a RedisServer: what the server presents and trusts, and how redis-cli connects.
struct RedisTlsOptions {
    /// tls-cert-file / tls-key-file: the certificate the server presents and its key. Required.
    std::string cert_file{};
    std::string key_file{};
    /// tls-ca-cert-file: the CA client certificates must chain to (Redis wants one even with
    /// client_auth off). Required.
    std::string ca_cert_file{};
    /// tls-auth-clients. Default required (Redis's default too).
    TlsClientAuth client_auth = TlsClientAuth::required;
    /// Serve plaintext on port() as well. Default false: TLS only on tls_port(), port() is 0.
    bool plaintext_port = false;
    /// The CA redis-cli verifies the server's certificate with. Default empty: ca_cert_file.
    std::string cli_ca_file{};
    /// The certificate and key redis-cli presents. Default none; required with
    /// TlsClientAuth::required.
    std::string cli_cert_file{};
    std::string cli_key_file{};
    /// False: redis-cli connects with --insecure, for a server presenting a certificate that
    /// fails verification on purpose (expired, another CA). redis-cli checks the chain and the
    /// dates, never the host name, so a wrong-host certificate needs no false here. Default true.
    bool cli_verifies = true;
};

/// redis-cli's options to reach a server with `tls`: --tls, --cacert (or --insecure), and the
/// client certificate when one is set.
std::vector<std::string> cli_tls_flags(const RedisTlsOptions& tls);
/// tls-auth-clients' value for `auth`: yes, optional or no.
const char* auth_clients(TlsClientAuth auth);

struct RedisServerOptions {
    /// Appended to redis-server's command line (e.g. {"--requirepass", "pw"}). Default none.
    std::vector<std::string> extra_args{};
    /// Added to its environment ("NAME=value"), e.g. a clock shim's. Default none.
    std::vector<std::string> env{};
    /// TLS on tls_port(). Default none: plaintext on port() only.
    std::optional<RedisTlsOptions> tls{};
    /// ACL users, one aclfile line each without the leading `user`, e.g. "alice on >pw ~* &*
    /// +@all -@admin" (rules split at spaces, so no spaces in passwords), loaded with --aclfile
    /// (so no `--user` in extra_args: Redis refuses both). The default user stays as Redis makes
    /// it (on, nopass, everything) unless a line names `default`: then give redis-cli the
    /// credentials of a user that may do everything in cli_user / cli_password. Default none.
    std::vector<std::string> acl_users{};
    /// Also listen on a Unix socket (unix_path(), unixsocketperm 700). Default false.
    bool unix_socket = false;
    /// What redis-cli authenticates with (--user, -a). Default empty: no AUTH, the default user.
    std::string cli_user{};
    std::string cli_password{};
};

class RedisServer {
public:
    /// Starts redis-server with `extra_args` appended (e.g. {"--requirepass", "pw"}) and waits
    /// until it answers PING. Throws std::runtime_error when it does not start.
    /// `env` ("NAME=value") is added to its environment, e.g. a clock shim's (tests).
    explicit RedisServer(std::vector<std::string> extra_args = {}, std::vector<std::string> env = {});
    /// Starts redis-server as `options` say and waits until it answers PING through redis-cli
    /// (over TLS when options.tls is set). Throws std::invalid_argument naming a missing field,
    /// std::runtime_error when the server does not start or answer within 10 s.
    explicit RedisServer(RedisServerOptions options);
    ~RedisServer();
    RedisServer(const RedisServer&) = delete;
    RedisServer& operator=(const RedisServer&) = delete;

    /// The plaintext port; 0 for a TLS-only server.
    std::uint16_t port() const { return port_; }
    /// The TLS port; 0 without TLS.
    std::uint16_t tls_port() const { return tls_port_; }
    /// The port clients and replicas reach it on: port(), or tls_port() for a TLS-only server.
    std::uint16_t serving_port() const { return port_ != 0 ? port_ : tls_port_; }
    /// The Unix socket's path; empty without one.
    const std::string& unix_path() const { return unix_path_; }
    /// redis://127.0.0.1:port() (the plaintext port).
    std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
    pid_t pid() const { return pid_; }

    /// Kills the server (SIGKILL) and waits for it to exit: all data is gone.
    void kill();
    /// Starts it again on the same port with the same arguments.
    void start();
    /// SIGSTOP / SIGCONT: the server keeps its sockets open but answers nothing.
    void pause();
    void resume();

    /// Runs redis-cli against the server and returns its stdout (trailing newline removed):
    /// over TLS on tls_port() when the server has TLS, as RedisServerOptions::cli_user.
    std::string cli(const std::vector<std::string>& args) const;

    /// Every key with its type and serialized value: equal snapshots mean nothing changed.
    std::string snapshot() const;

private:
    /// redis-cli with the options that reach this server (port, TLS, credentials).
    std::vector<std::string> cli_command() const;

    RedisServerOptions options_;
    std::uint16_t port_ = 0;
    std::uint16_t tls_port_ = 0;
    std::filesystem::path dir_;
    std::string unix_path_;
    pid_t pid_ = -1;
};

}  // namespace fencelock::local

#pragma once
// A throwaway replicated Redis behind Sentinel: one master, its replicas and a quorum of
// sentinels on free loopback ports, for the Sentinel tests, the failover scenario and
// `fencelock demo --failover`. Everything is stopped and removed when the object dies.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "local_servers/redis_server.hpp"

namespace fencelock::local {

struct SentinelGroupOptions {
    std::string master_name = "fencelock";
    int replicas = 1;
    int sentinels = 3;
    /// Sentinel's down-after-milliseconds: how long the master must be silent before the
    /// sentinels call it down and start a failover.
    int down_after_ms = 1000;
    int failover_timeout_ms = 3000;
    /// Appended to every redis-server's command line (not the sentinels').
    std::vector<std::string> server_args;
    /// Added to the environment of server i / sentinel i, where given (e.g. a clock shim's).
    std::vector<std::vector<std::string>> server_env;
    std::vector<std::vector<std::string>> sentinel_env;
    /// TLS everywhere: every server and sentinel listens on a TLS port only, replicas replicate
    /// and sentinels talk to the servers and to each other over TLS (tls-replication yes),
    /// presenting cli_cert_file as their client certificate (required with client_auth on).
    /// Default none: plaintext.
    std::optional<RedisTlsOptions> tls;
    /// ACL users of every server (RedisServerOptions::acl_users; the default user stays on, for
    /// the sentinels and replicas). Default none.
    std::vector<std::string> server_acl_users;
    /// requirepass on every sentinel (the sentinels use it with each other too); clients need
    /// it as sentinel_password. Default none.
    std::string sentinel_password;
};

/// A running group as a process that did not start it knows it (a ctest fixture owns the
/// group; its tests know the URL): enough to ask the sentinels and the master by port.
struct SentinelGroupShape {
    std::vector<std::uint16_t> sentinel_ports;
    std::string master_name;
    int replicas = 1;
    /// redis-cli's options (TLS, credentials) for the sentinels and for the servers; empty for
    /// a plaintext group without sentinel credentials.
    std::vector<std::string> sentinel_cli_flags{};
    std::vector<std::string> server_cli_flags{};
};

/// redis-cli -p PORT FLAGS... ARGS...; stdout without the trailing newline.
std::string cli_at(std::uint16_t port, const std::vector<std::string>& args,
                   const std::vector<std::string>& flags = {});
/// The port the sentinel at `sentinel_port` names as master of `master_name` (nullopt: none).
std::optional<std::uint16_t> master_port_seen_by(std::uint16_t sentinel_port, const std::string& master_name,
                                                 const std::vector<std::string>& flags = {});
/// The master port a majority of the sentinels name (nullopt: no majority).
std::optional<std::uint16_t> majority_master_port(const SentinelGroupShape& group);
/// One look: a majority names a master whose replicas are all online, and every sentinel
/// sees all replicas and all other sentinels and calls the master healthy.
bool group_ready(const SentinelGroupShape& group);
/// Polls group_ready() until it holds; throws std::runtime_error after `timeout`.
void wait_group_ready(const SentinelGroupShape& group, std::chrono::milliseconds timeout);

/// Waits until every sentinel has known the master for at least `d` (SENTINEL MASTER's
/// role-reported-time): from then on a client whose failover grace is at most `d` is granted
/// leases at once. Throws std::runtime_error after `d` + 30 s.
void wait_master_known_for(const SentinelGroupShape& group, std::chrono::milliseconds d);

/// One sentinel process (redis-server CONF --sentinel) with a config file it may rewrite.
class SentinelServer {
public:
    SentinelServer(const std::string& master_name, std::uint16_t master_port, int quorum,
                   const SentinelGroupOptions& options, const std::vector<std::string>& env = {});
    ~SentinelServer();
    SentinelServer(const SentinelServer&) = delete;
    SentinelServer& operator=(const SentinelServer&) = delete;

    std::uint16_t port() const { return port_; }
    pid_t pid() const { return pid_; }
    void kill();
    /// redis-cli against this sentinel; stdout without the trailing newline.
    std::string cli(const std::vector<std::string>& args) const;

private:
    std::uint16_t port_;
    std::filesystem::path dir_;
    std::vector<std::string> cli_flags_;
    pid_t pid_ = -1;
};

class SentinelGroup {
public:
    /// Starts the servers and sentinels and waits until every replica is in sync and every
    /// sentinel sees all replicas and all other sentinels. Throws std::runtime_error otherwise.
    explicit SentinelGroup(SentinelGroupOptions options = {});
    ~SentinelGroup();
    SentinelGroup(const SentinelGroup&) = delete;
    SentinelGroup& operator=(const SentinelGroup&) = delete;

    /// redis-sentinel://127.0.0.1:P1,127.0.0.1:P2,...[?query]#master-name (rediss-sentinel://
    /// with TLS; the query is the caller's, TLS options included).
    std::string url(std::string_view query = {}) const;
    const std::string& master_name() const { return options_.master_name; }
    /// The sentinels' ports, the master name and the replica count.
    SentinelGroupShape shape() const;

    /// Server 0 is the first master; 1.. are its replicas at start.
    std::size_t servers() const { return servers_.size(); }
    RedisServer& server(std::size_t i) { return *servers_.at(i); }
    std::size_t sentinels() const { return sentinels_.size(); }
    SentinelServer& sentinel(std::size_t i) { return *sentinels_.at(i); }

    /// The port sentinel `i` names as the master now (nullopt when it names none).
    std::optional<std::uint16_t> master_port_seen_by(std::size_t i) const;
    /// The index of the server a majority of sentinels name as master (nullopt: no majority).
    std::optional<std::size_t> master() const;

    /// Waits until server `i`'s replicas are online and every sentinel sees them all.
    void wait_ready(std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;

    /// Writes on the master stop reaching `replica` from now on: the replica is paused
    /// (SIGSTOP) and the master drops its replication link. What the master accepts next is
    /// lost if the replica is promoted. Undo with server(replica).resume().
    void cut_replication(std::size_t replica);

    /// Waits until a majority of sentinels name a master other than server `old_master`, and
    /// that server answers ROLE as master; returns its index.
    std::size_t wait_for_new_master(std::size_t old_master,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;

private:
    SentinelGroupOptions options_;
    std::vector<std::unique_ptr<RedisServer>> servers_;
    std::vector<std::unique_ptr<SentinelServer>> sentinels_;
};

}  // namespace fencelock::local

#pragma once
// A throwaway Redis Cluster: masters and their replicas on free loopback ports, joined with
// `redis-cli --cluster create ... --cluster-replicas N --cluster-yes`, for the cluster tests
// and benches. Everything is stopped and removed when the object dies.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "local_servers/redis_server.hpp"

namespace fencelock::local {

struct ClusterGroupOptions {
    int masters = 3;
    int replicas_per_master = 1;
    /// cluster-node-timeout: how long a master must be unreachable before its replica takes
    /// over.
    int node_timeout_ms = 2000;
    /// Appended to every redis-server's command line.
    std::vector<std::string> server_args;
    /// Server i's extra environment ("NAME=value" each; none past the end), e.g. a clock shim.
    std::vector<std::vector<std::string>> server_env;
    /// TLS everywhere: every node listens on a TLS port only, and the cluster bus and
    /// replication run over TLS (tls-cluster, tls-replication), each node presenting
    /// cli_cert_file to the others. The nodes announce their TLS ports. Default none.
    std::optional<RedisTlsOptions> tls;
    /// ACL users of every node (RedisServerOptions::acl_users; the default user stays on).
    std::vector<std::string> server_acl_users;
};

/// One look over the nodes at `ports` that answer: each says cluster_state:ok, they agree on
/// the slot map, every slot has a master, and `masters` masters serve slots.
///
/// `flags` (here and below): redis-cli's options to reach the nodes (cli_tls_flags for a TLS
/// cluster); none for a plaintext one.
bool cluster_ready(const std::vector<std::uint16_t>& ports, int masters, const std::vector<std::string>& flags = {});
/// Polls cluster_ready() until it holds; throws std::runtime_error after `timeout`.
void wait_cluster_ready(const std::vector<std::uint16_t>& ports, int masters, std::chrono::milliseconds timeout,
                        const std::vector<std::string>& flags = {});
/// The port of the master serving `slot`, as the node at `port` sees it (nullopt: none).
std::optional<std::uint16_t> slot_master_port(std::uint16_t port, std::uint16_t slot,
                                              const std::vector<std::string>& flags = {});
/// The node id of the server at `port` (CLUSTER MYID). This, master_ports() and SlotMigration
/// speak plaintext: the tests that move slots use a plaintext cluster.
std::string node_id(std::uint16_t port);
/// The ports of the masters that serve slots, as the node at `port` sees them.
std::vector<std::uint16_t> master_ports(std::uint16_t port);

/// Moves one slot from its master to the master at `to_port` by hand, the way
/// `redis-cli --cluster reshard` does, in three steps a test can interleave with traffic:
/// begin() marks the slot MIGRATING on the source and IMPORTING on the target (from then on
/// the source answers ASK for keys it no longer has), move_keys() MIGRATEs the slot's keys,
/// finish() assigns the slot to the target on every master (the source then answers MOVED).
class SlotMigration {
public:
    SlotMigration(std::vector<std::uint16_t> ports, std::uint16_t slot, std::uint16_t to_port);
    void begin();
    /// MIGRATEs every key of the slot; returns how many moved.
    int move_keys();
    void finish();
    std::uint16_t from_port() const { return from_; }

private:
    std::vector<std::uint16_t> ports_;
    std::uint16_t slot_, from_, to_;
};

class ClusterGroup {
public:
    /// Starts the servers, creates the cluster and waits until every node says
    /// cluster_state:ok and all agree on the slot map. Throws std::runtime_error otherwise.
    explicit ClusterGroup(ClusterGroupOptions options = {});
    ~ClusterGroup();
    ClusterGroup(const ClusterGroup&) = delete;
    ClusterGroup& operator=(const ClusterGroup&) = delete;

    /// redis-cluster://127.0.0.1:P1,127.0.0.1:P2,... (every node a seed; rediss-cluster://
    /// with TLS, the TLS options left to the caller)
    std::string url() const;
    /// The nodes' serving ports (their TLS ports in a TLS cluster).
    std::vector<std::uint16_t> ports() const;
    /// redis-cli's options to reach the nodes (empty for a plaintext cluster).
    const std::vector<std::string>& cli_flags() const { return cli_flags_; }
    std::size_t servers() const { return servers_.size(); }
    /// Servers 0 .. masters-1 were the masters at creation; the rest their replicas.
    RedisServer& server(std::size_t i) { return *servers_.at(i); }
    int masters() const { return options_.masters; }
    /// The index of the server listening on `port`; throws std::out_of_range if none.
    std::size_t index_of(std::uint16_t port) const;
    /// The index of the server whose ROLE says it replicates the master at `port` now;
    /// throws std::runtime_error if none does.
    std::size_t replica_of(std::uint16_t port);
    /// After the master that served `slot` from `dead_port` was killed: waits until another
    /// node serves the slot as master and every node still running agrees on a map where
    /// masters() masters serve all slots; returns the new master's port. Throws
    /// std::runtime_error after `timeout`.
    std::uint16_t wait_for_takeover(std::uint16_t dead_port, std::uint16_t slot, std::chrono::milliseconds timeout);

private:
    ClusterGroupOptions options_;
    std::vector<std::string> cli_flags_;
    std::vector<std::unique_ptr<RedisServer>> servers_;
};

}  // namespace fencelock::local

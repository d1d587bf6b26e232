#pragma once
// A throwaway etcd member (Debian's /usr/bin/etcd, v3.4) for the etcd tests, benches and demo:
// free loopback ports for clients and peers, a private data directory, killed and removed when
// the object dies. Alone it is a one-member cluster of its own; EtcdCluster (etcd_cluster.hpp)
// starts several as one static cluster. Readiness and status are read over etcd's plain HTTP
// endpoints (/health, the gRPC gateway's /v3/maintenance/status), so this links no gRPC;
// etcdctl() runs the etcdctl tool for anything else.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "local_servers/child_process.hpp"

namespace fencelock::local {

/// TLS on a member's client port (etcds://): its certificate and key, and the CA whose client
/// certificates it demands when client_cert_auth is set. Peers still talk plain HTTP.
struct EtcdTls {
    std::string cert_file;
    std::string key_file;
    std::string ca_file;
    bool client_cert_auth = false;
};

struct EtcdServerOptions {
    /// Appended to etcd's command line (e.g. {"--auto-compaction-retention", "1"}). Default none.
    std::vector<std::string> extra_args{};
    /// Added to its environment ("NAME=value"), e.g. a clock shim's. Default none.
    std::vector<std::string> env{};
    /// --heartbeat-interval: how often the leader tells followers it is alive. Default 100 ms
    /// (etcd's default).
    std::chrono::milliseconds heartbeat_interval{100};
    /// --election-timeout: how long followers wait without a heartbeat before electing a new
    /// leader; at least 5 heartbeats (etcd refuses less). Default 1000 ms (etcd's default).
    std::chrono::milliseconds election_timeout{1000};
    /// TLS on the client port (one member only): health is then read from a plain-HTTP metrics
    /// port of its own, and status() does not answer. Default none.
    std::optional<EtcdTls> tls{};
    /// How long start and restart wait for the member to serve. Default 20 s.
    std::chrono::milliseconds start_timeout{std::chrono::seconds(20)};
};

/// Where a member sits in a static cluster: its name, its ports and the whole cluster's
/// --initial-cluster ("name=http://127.0.0.1:PEER_PORT,..."), which must name it.
struct EtcdMembership {
    std::string name;
    std::uint16_t client_port = 0;
    std::uint16_t peer_port = 0;
    std::string initial_cluster;
    /// --initial-cluster-token: keeps members of different throwaway clusters apart.
    std::string cluster_token;
};

/// What one member says about itself (the gRPC gateway's Maintenance.Status).
struct EtcdMemberStatus {
    std::uint64_t member_id = 0;
    /// The member it takes for the leader; 0 when it knows none.
    std::uint64_t leader_id = 0;
    std::int64_t raft_term = 0;
    std::int64_t revision = 0;
};

/// One GET or POST to 127.0.0.1:`port` over plain HTTP/1.0; the response body, or nullopt when
/// the member does not answer with 200 within `timeout` (down, paused, or still starting).
std::optional<std::string> etcd_http(std::uint16_t port, const std::string& method, const std::string& path,
                                     const std::string& body, std::chrono::milliseconds timeout);

class EtcdServer {
public:
    /// Starts a one-member cluster and waits until it serves (/health says true: it has
    /// elected itself leader), 0.1 to 1 s with the default timings: a lone member campaigns
    /// after a random part of the election timeout. Throws std::invalid_argument for an election timeout under five
    /// heartbeats, std::runtime_error when etcd does not start or serve within
    /// options.start_timeout (the message points at its log).
    explicit EtcdServer(EtcdServerOptions options = {});
    /// Starts one member of the static cluster `membership` describes and returns at once: a
    /// member serves only once a quorum of its cluster runs, so the caller waits
    /// (wait_until_healthy()) after starting the others. Throws as above.
    EtcdServer(EtcdServerOptions options, EtcdMembership membership);
    /// Kills the member (SIGKILL) and removes its data directory. Never throws.
    ~EtcdServer();
    EtcdServer(const EtcdServer&) = delete;
    EtcdServer& operator=(const EtcdServer&) = delete;

    std::uint16_t client_port() const { return membership_.client_port; }
    std::uint16_t peer_port() const { return membership_.peer_port; }
    const std::string& name() const { return membership_.name; }
    /// "127.0.0.1:CLIENT_PORT", as etcdctl's --endpoints and gRPC take it.
    std::string endpoint() const { return "127.0.0.1:" + std::to_string(client_port()); }
    /// etcd://127.0.0.1:CLIENT_PORT (etcds:// with TLS)
    std::string url() const { return (options_.tls ? "etcds://" : "etcd://") + endpoint(); }
    /// The private directory: data/ (the member's WAL and database) and etcd.log.
    const std::filesystem::path& dir() const { return dir_; }
    /// The running process; -1 after kill_hard().
    pid_t pid() const { return pid_; }
    /// Running and not paused: a member that can answer.
    bool serving() const { return pid_ > 0 && !paused_; }

    /// One look at /health: true when the member answers that it is healthy (it knows a leader
    /// and has no alarm). False when it is down, paused or has no quorum.
    bool healthy() const;
    /// Polls healthy() until it holds; throws std::runtime_error after options.start_timeout or
    /// when the process exits.
    void wait_until_healthy();
    /// One look at the peer URL (GET /members): true once the member's Raft node runs and
    /// talks to peers, leader or not. A member starting in a new cluster asks the peers it
    /// can connect to whether it was bootstrapped before, and a peer that listens but does
    /// not serve yet lets that question hang for a second: start members one at a time, each
    /// once the one before is peer_ready().
    bool peer_ready() const;
    /// Polls peer_ready() until it holds; throws as wait_until_healthy() does.
    void wait_until_peer_ready();
    /// The member's own status; nullopt when it does not answer.
    std::optional<EtcdMemberStatus> status() const;

    /// SIGSTOP / SIGCONT: the member keeps its sockets open but answers nothing, peers included.
    void pause();
    void resume();
    /// SIGKILL, then waits for the process to exit; the data directory stays for restart().
    void kill_hard();
    /// Starts the member again on the same ports and data directory (killing it first if it
    /// runs) and waits until it serves: alone, once it has elected itself again (1 to 2 s with
    /// the default timings: a restarted member waits a whole randomized election timeout); in
    /// a cluster, once it has rejoined a leader. Throws std::runtime_error as the constructor
    /// does.
    void restart();

    /// Runs `etcdctl --endpoints=endpoint() ARGS...` with ETCDCTL_API=3.
    ProcessResult etcdctl(const std::vector<std::string>& args) const;

private:
    /// Starts the process; throws when it cannot.
    void launch();
    /// Polls `ready` until it holds; throws std::runtime_error naming `what` after
    /// options.start_timeout or when the process exits.
    template <class Ready>
    void wait_until(Ready ready, const std::string& what);

    EtcdServerOptions options_;
    EtcdMembership membership_;
    std::uint16_t metrics_port_ = 0;  // with TLS: plain HTTP for /health
    std::filesystem::path dir_;
    pid_t pid_ = -1;
    bool paused_ = false;
};

/// Runs `etcdctl --endpoints=ENDPOINTS ARGS...` with ETCDCTL_API=3 and a 5 s command timeout;
/// `endpoints` is "host:port,host:port".
ProcessResult etcdctl_at(const std::string& endpoints, const std::vector<std::string>& args);

}  // namespace fencelock::local

#pragma once
// A throwaway etcd cluster: N members (EtcdServer) on loopback ports, bootstrapped from a static
// --initial-cluster, for the etcd coordinator's tests and fault scenarios (leader killed,
// member paused, member restarted). Every member is killed and its directory removed when the
// object dies.
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "local_servers/etcd_server.hpp"

namespace fencelock::local {

struct EtcdClusterOptions {
    /// How many members. Default 3 (the smallest cluster that survives losing one).
    int members = 3;
    /// Every member's options (heartbeat, election timeout, extra arguments, environment,
    /// start_timeout, which also bounds the wait for the first leader). Default etcd's timings.
    EtcdServerOptions server{};
    /// Added to the environment of member i, after server.env, where given. Default none.
    std::vector<std::vector<std::string>> member_env{};
};

class EtcdCluster {
public:
    /// Starts every member, then waits until each one is healthy and a leader exists (three
    /// members: about 0.4 s with the default timings, 0.2 s with 20/200 ms). Throws
    /// std::invalid_argument for fewer than one member, std::runtime_error when a member does
    /// not start or the cluster does not serve within options.server.start_timeout per step.
    explicit EtcdCluster(EtcdClusterOptions options = {});
    ~EtcdCluster();
    EtcdCluster(const EtcdCluster&) = delete;
    EtcdCluster& operator=(const EtcdCluster&) = delete;

    /// etcd://127.0.0.1:P1,127.0.0.1:P2,... (every member's client port).
    std::string url() const { return "etcd://" + endpoints(); }
    /// "127.0.0.1:P1,127.0.0.1:P2,...", as etcdctl's --endpoints takes it.
    std::string endpoints() const;
    /// The same for the members that are serving() now (running, not paused).
    std::string serving_endpoints() const;

    std::size_t members() const { return members_.size(); }
    /// Member i, with its own pause/resume/kill_hard/restart.
    EtcdServer& member(std::size_t i) { return *members_.at(i); }
    const EtcdServer& member(std::size_t i) const { return *members_.at(i); }

    /// The index of the leader, asked of the serving members: the member that names itself
    /// leader and that a majority of the cluster names too. nullopt when there is none (an
    /// election under way, no quorum), so a deposed leader that still believes it leads is
    /// never reported.
    std::optional<std::size_t> leader_index() const;
    /// Polls leader_index() until it names a member; returns it. Throws std::runtime_error
    /// after `timeout`.
    std::size_t wait_for_leader(std::chrono::milliseconds timeout) const;
    /// Polls leader_index() until it names a member other than `old_leader` (after the old one
    /// was killed or paused); returns it. Throws std::runtime_error after `timeout`.
    std::size_t wait_for_new_leader(std::size_t old_leader, std::chrono::milliseconds timeout) const;

    /// Runs `etcdctl --endpoints=serving_endpoints() ARGS...` with ETCDCTL_API=3.
    ProcessResult etcdctl(const std::vector<std::string>& args) const;

private:
    std::size_t wait_for_leader_other_than(std::optional<std::size_t> old_leader,
                                           std::chrono::milliseconds timeout) const;

    EtcdClusterOptions options_;
    std::vector<std::unique_ptr<EtcdServer>> members_;
};

}  // namespace fencelock::local

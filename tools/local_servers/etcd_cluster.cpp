#include "local_servers/etcd_cluster.hpp"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>

#include "local_servers/redis_server.hpp"

namespace fencelock::local {
namespace {

using Clock = std::chrono::steady_clock;

// `count` loopback ports free now and distinct from each other (free_port() may hand out a
// port it just handed out, as nothing holds it in between).
std::vector<std::uint16_t> distinct_free_ports(std::size_t count) {
    std::set<std::uint16_t> taken;
    std::vector<std::uint16_t> ports;
    while (ports.size() < count) {
        const std::uint16_t port = free_port();
        if (taken.insert(port).second) ports.push_back(port);
    }
    return ports;
}

std::string joined(const std::vector<std::string>& parts) {
    std::string out;
    for (const auto& part : parts) out += (out.empty() ? "" : ",") + part;
    return out;
}

}  // namespace

EtcdCluster::EtcdCluster(EtcdClusterOptions options) : options_(std::move(options)) {
    if (options_.members < 1) throw std::invalid_argument("EtcdClusterOptions::members must be at least 1");
    const auto count = static_cast<std::size_t>(options_.members);
    const auto ports = distinct_free_ports(2 * count);  // client ports first, then peer ports
    std::vector<std::string> peers;
    for (std::size_t i = 0; i < count; ++i)
        peers.push_back("etcd" + std::to_string(i) + "=http://127.0.0.1:" + std::to_string(ports[count + i]));
    const std::string initial_cluster = joined(peers);
    const std::string token = "fencelock-" + std::to_string(::getpid()) + "-" + std::to_string(ports[0]);
    // A member serves clients only once a quorum runs, so none is waited for until all run;
    // but each starts once the one before serves its peers (EtcdServer::peer_ready() says
    // why): started all at once, a member often hung a second per peer, 2.6 s instead of 0.4.
    for (std::size_t i = 0; i < count; ++i) {
        if (i > 0) members_.back()->wait_until_peer_ready();
        EtcdServerOptions member_options = options_.server;
        if (i < options_.member_env.size())
            member_options.env.insert(member_options.env.end(), options_.member_env[i].begin(),
                                      options_.member_env[i].end());
        members_.push_back(
            std::make_unique<EtcdServer>(std::move(member_options), EtcdMembership{.name = "etcd" + std::to_string(i),
                                                                                   .client_port = ports[i],
                                                                                   .peer_port = ports[count + i],
                                                                                   .initial_cluster = initial_cluster,
                                                                                   .cluster_token = token}));
    }
    for (auto& member : members_) member->wait_until_healthy();
    (void)wait_for_leader(options_.server.start_timeout);
}

EtcdCluster::~EtcdCluster() = default;

std::string EtcdCluster::endpoints() const {
    std::vector<std::string> out;
    for (const auto& member : members_) out.push_back(member->endpoint());
    return joined(out);
}

std::string EtcdCluster::serving_endpoints() const {
    std::vector<std::string> out;
    for (const auto& member : members_)
        if (member->serving()) out.push_back(member->endpoint());
    return joined(out);
}

std::optional<std::size_t> EtcdCluster::leader_index() const {
    std::map<std::uint64_t, std::size_t> index_of;  // member id -> index
    std::map<std::uint64_t, std::size_t> named_by;  // leader id -> how many members name it
    std::set<std::uint64_t> self_declared;          // members that name themselves
    for (std::size_t i = 0; i < members_.size(); ++i) {
        const auto status = members_[i]->status();
        if (!status) continue;
        index_of[status->member_id] = i;
        if (status->leader_id == 0) continue;
        ++named_by[status->leader_id];
        if (status->leader_id == status->member_id) self_declared.insert(status->member_id);
    }
    const std::size_t majority = members_.size() / 2 + 1;
    for (const std::uint64_t id : self_declared)
        if (named_by[id] >= majority) return index_of.at(id);
    return std::nullopt;
}

std::size_t EtcdCluster::wait_for_leader(std::chrono::milliseconds timeout) const {
    return wait_for_leader_other_than(std::nullopt, timeout);
}

std::size_t EtcdCluster::wait_for_new_leader(std::size_t old_leader, std::chrono::milliseconds timeout) const {
    return wait_for_leader_other_than(old_leader, timeout);
}

std::size_t EtcdCluster::wait_for_leader_other_than(std::optional<std::size_t> old_leader,
                                                    std::chrono::milliseconds timeout) const {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        const auto leader = leader_index();
        if (leader && leader != old_leader) return *leader;
        if (Clock::now() >= deadline)
            throw std::runtime_error("the etcd cluster elected no " + std::string(old_leader ? "new " : "") +
                                     "leader within " + std::to_string(timeout.count()) + " ms");
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the members elect on their own clock
    }
}

ProcessResult EtcdCluster::etcdctl(const std::vector<std::string>& args) const {
    return etcdctl_at(serving_endpoints(), args);
}

}  // namespace fencelock::local

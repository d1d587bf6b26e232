#include "cluster/cluster_fixture.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "local_servers/sentinel_group.hpp"
#include "redis/cluster_slot.hpp"

namespace fencelock::test_support {

SharedCluster& SharedCluster::get() {
    static SharedCluster cluster;
    return cluster;
}

SharedCluster::SharedCluster() {
    if (const char* state = std::getenv("FENCELOCK_CLUSTER_STATE")) {
        std::ifstream in(state);
        if (!std::getline(in, url_)) throw std::runtime_error(std::string("no URL in ") + state);
    } else {
        own_ = std::make_unique<local::ClusterGroup>();
        url_ = own_->url();
    }
    auto ep = parse_redis_url(url_);
    if (!ep) throw std::runtime_error(ep.error().message);
    endpoint_ = *ep;
}

std::vector<std::uint16_t> SharedCluster::ports() const {
    std::vector<std::uint16_t> out;
    for (const auto& s : endpoint_.cluster_seeds) out.push_back(s.port);
    return out;
}

std::uint16_t SharedCluster::master_of(const std::string& key) const {
    for (std::uint16_t p : ports())
        if (auto m = local::slot_master_port(p, detail::key_slot(key))) return *m;
    throw std::runtime_error("no node names a master for " + key);
}

std::string SharedCluster::cli_for(const std::string& key, std::vector<std::string> args) const {
    return local::cli_at(master_of(key), args);
}

std::string SharedCluster::url_with_seed(std::uint16_t port) const {
    return "redis-cluster://127.0.0.1:" + std::to_string(port);
}

LockClient client_for(const std::string& url) {
    auto ep = parse_redis_url(url);
    if (!ep) throw std::runtime_error(ep.error().message);
    auto c = LockClient::create({.endpoint = *ep});
    if (!c) throw std::runtime_error("LockClient::create: " + c.error().message);
    return std::move(*c);
}

std::uint16_t slot_of(const ResourceName& r) { return detail::key_slot("{" + r.str() + "}"); }

std::vector<ResourceName> in_slot_of(const ResourceName& first, const std::string& stem, int n) {
    std::vector<ResourceName> out{first};
    for (int i = 0; static_cast<int>(out.size()) < n; ++i) {
        auto r = *ResourceName::make(stem + std::to_string(::getpid()) + ":" + std::to_string(i));
        if (slot_of(r) == slot_of(first)) out.push_back(r);
    }
    return out;
}

ResourceName resource_on(std::uint16_t port, const std::string& stem) {
    auto& cluster = SharedCluster::get();
    for (int i = 0;; ++i) {
        const std::string name = "cluster:" + std::to_string(::getpid()) + ":" + stem + ":" + std::to_string(i);
        if (cluster.master_of("{" + name + "}") == port) return *ResourceName::make(name);
    }
}

ResourceName resource_on(const local::ClusterGroup& group, std::uint16_t port, const std::string& stem) {
    for (int i = 0;; ++i) {
        auto r = *ResourceName::make(stem + std::to_string(i));
        if (local::slot_master_port(group.ports().front(), slot_of(r)) == port) return r;
    }
}

}  // namespace fencelock::test_support

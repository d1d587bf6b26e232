#pragma once
// The Redis Cluster of a ctest run: the cluster_group fixture (tests/server_fixture_main.cpp)
// starts three masters and three replicas once, and FENCELOCK_CLUSTER_STATE names the file
// holding its redis-cluster:// URL. Run by hand (no such variable), the test process starts a
// cluster of its own.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fencelock/client.hpp"
#include "fencelock/redis_url.hpp"
#include "fencelock/types.hpp"
#include "local_servers/cluster_group.hpp"

namespace fencelock::test_support {

class SharedCluster {
public:
    static SharedCluster& get();

    const std::string& url() const { return url_; }
    const RedisEndpoint& endpoint() const { return endpoint_; }
    /// Every node's port (masters and replicas, in the URL's order).
    std::vector<std::uint16_t> ports() const;
    /// The port of the master serving `key`'s slot now.
    std::uint16_t master_of(const std::string& key) const;
    /// redis-cli against the master serving `key`'s slot.
    std::string cli_for(const std::string& key, std::vector<std::string> args) const;
    /// A redis-cluster:// URL with the single seed `port`.
    std::string url_with_seed(std::uint16_t port) const;

private:
    SharedCluster();
    std::unique_ptr<local::ClusterGroup> own_;  // only without a fixture
    std::string url_;
    RedisEndpoint endpoint_;
};

/// A client for `url` (a redis-cluster:// URL); fails the test if it cannot be made.
LockClient client_for(const std::string& url);

/// The slot of every key of `r`.
std::uint16_t slot_of(const ResourceName& r);

/// `first` and n - 1 more resources (named after `stem` and the pid) in the same slot.
std::vector<ResourceName> in_slot_of(const ResourceName& first, const std::string& stem, int n);

/// A resource whose keys live on the master at `port`, named after `stem` (and the pid, so
/// reruns against a shared cluster never meet old keys).
ResourceName resource_on(std::uint16_t port, const std::string& stem);

/// A resource named `stem` plus a number whose keys live on the master at `port` of `group`
/// (a cluster a test started for itself).
ResourceName resource_on(const local::ClusterGroup& group, std::uint16_t port, const std::string& stem);

}  // namespace fencelock::test_support

#pragma once
// A Connection over a whole Redis Cluster. Each command goes to the master of its key's slot
// (redis/cluster_slot.hpp: the first key decides; fencelock's calls keep all their keys under
// one hash tag), on one connection per master made by the node factory (multiplexed for the
// lock client, blocking for the queue and outbox), and follows the cluster's answers by the
// rules of redis/cluster_redirect.hpp: MOVED updates the slot map and resends, ASK resends
// once with ASKING, TRYAGAIN / CLUSTERDOWN and an unreachable master are retried within the
// command timeout, the map being reloaded from any node that answers (so a master replaced by
// its replica is found). A command is resent only when the cluster said it did not run it or
// it was never written; an unknown outcome goes back to the caller unchanged.
//
// The slot map is loaded on the first command from the seeds (CLUSTER SLOTS), then from the
// masters it names. A seed that answers as a server without cluster support fails with
// errc::not_cluster (fatal); no seed reachable within the command timeout: errc::unavailable.
//
// pipeline() splits a batch by node and sends one pipeline per node, to all nodes at once
// (a batch costs one round trip per master, not one per command, and not one after another),
// then resends the commands a node redirected one by one; a transaction (MULTI ... EXEC) goes whole to the node of its
// first key. As thread-safe as the node connections: multiplexed ones may be shared by threads.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "redis/connection.hpp"
#include "redis/hiredis_connection.hpp"

namespace fencelock::detail {

/// Makes the connection to one node; `settings.topology` names that node.
using NodeFactory = std::function<std::unique_ptr<Connection>(ConnectionSettings)>;

/// A cluster connection for `settings` (settings.endpoint.uses_cluster() must hold).
std::unique_ptr<Connection> make_cluster_connection(ConnectionSettings settings, NodeFactory node_factory);

/// The connection `settings.endpoint` asks for: a cluster connection over `node_factory`'s
/// connections for a redis-cluster:// endpoint, otherwise `node_factory(settings)` itself.
std::unique_ptr<Connection> make_endpoint_connection(ConnectionSettings settings, const NodeFactory& node_factory);

/// The settings of a connection to the one node `at` of the cluster `settings` describes: the
/// same credentials and timeouts, no seeds, a single_server() topology naming `at`.
ConnectionSettings node_settings(const ConnectionSettings& settings, const ServerAddress& at);

/// A cluster connection's slot map, for code that keeps connections of its own to the masters
/// but must route as the connection does (the release notifier's sharded subscribers: pub/sub
/// cannot share a command connection). One map, one router: MOVED seen there corrects it here.
class SlotRoutes {
public:
    virtual ~SlotRoutes() = default;
    /// The master serving `slot` as the map says now, without I/O; nullopt before the first
    /// load() or for a slot that has no master.
    virtual std::optional<ServerAddress> master_of(std::uint16_t slot) = 0;
    /// A MOVED redirect the caller received: `slot` is served by `to`.
    virtual void moved(std::uint16_t slot, const ServerAddress& to) = 0;
    /// Asks the cluster for the whole map again (blocking, within the command timeout).
    virtual std::error_code load() = 0;
};

/// `c`'s slot map when `c` is a cluster connection, otherwise null. Valid as long as `c` lives.
SlotRoutes* slot_routes(Connection& c);

/// The connections a call that must see every master (SCAN for `list`, the audit streams)
/// uses: one per master of a cluster connection's slot map (loaded if needed), or `c` itself
/// for any other connection. Valid as long as `c` lives.
std::expected<std::vector<Connection*>, std::error_code> each_master(Connection& c);

/// The master that serves `key`'s slot in the slot map of cluster connection `c` as it stands,
/// without I/O (no map is loaded, nothing is sent): for callers that group work by node, as
/// the keeper does. nullopt for any other connection, or before the map is loaded.
std::optional<ServerAddress> master_hint(Connection& c, std::string_view key);

}  // namespace fencelock::detail

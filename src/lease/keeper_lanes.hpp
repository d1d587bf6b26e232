#pragma once
// Which of the keeper's lanes carries a kept lease's renewals: the grouping decision alone,
// without threads, connections or the coordinator's routing (the keeper and its renewal
// channel, coordinator/renewal_channel.hpp, own those).
//
// A lease's lane is the node that carries its renewals as the coordinator last knew it
// (RenewalChannel::lane_of; on a Redis Cluster its key's slot's master): one lane per node, so
// that a stalled node holds up only its own leases. A lease with no known node (a cluster's map
// is not loaded yet) shares the lane of "no route". When the node of a lease changes, its next
// batch goes to its new node's lane. A coordinator of one node (a single server) has one lane,
// whatever the lease.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace fencelock::detail {

/// The node that carries a lease's renewals, by the name its coordinator gives it (Redis:
/// "host:port" of the slot's master). Two routes are one node when their names are equal.
struct LaneRoute {
    std::string node;
    bool operator==(const LaneRoute&) const = default;
};

class KeeperLanes {
public:
    /// `single`: the coordinator is one node (RenewalChannel::one_lane): one lane for good.
    explicit KeeperLanes(bool single) : single_(single) {}

    /// Whether every lease goes through one lane (lane 0).
    bool single() const noexcept { return single_; }

    /// A lane picked for a lease: its index, and whether it was made by this pick.
    struct Pick {
        std::size_t index;
        bool made;
        bool operator==(const Pick&) const = default;
    };
    /// The lane of a lease routed to `route` (nullopt: no route: a single server, or a cluster
    /// whose map is not loaded yet). A node's lane is made the first time it appears, at the
    /// next index (made: true); lanes are never removed, so an index stays valid. A single
    /// server: lane 0 for every lease, made by the first pick.
    Pick lane_of(const std::optional<LaneRoute>& route);

    /// Whether lane `index` carries, now, a lease routed to `route`: a lease whose node changed
    /// belongs to its new node's lane. Always true for a single server.
    bool carries(std::size_t index, const std::optional<LaneRoute>& route) const;

    /// The node lane `index` serves; nullopt: the lane of no route (or of a single server).
    const std::optional<LaneRoute>& node(std::size_t index) const { return nodes_.at(index); }

    /// How many lanes were made.
    std::size_t size() const noexcept { return nodes_.size(); }

private:
    bool single_;
    std::vector<std::optional<LaneRoute>> nodes_;  ///< by lane index
};

}  // namespace fencelock::detail

#pragma once
// Which of the keeper's lanes carries a kept lease's renewals: the grouping decision alone,
// without threads, connections or the slot map itself (keeper.hpp owns those).
//
// On a cluster a lease's lane is its key's slot's master as the connection's slot map last
// said (master_hint): one lane per node, so that a stalled node holds up only its own leases.
// A lease whose slot has no known master (the map is not loaded yet) shares the lane of "no
// route". When the map moves a slot, the lease's next batch goes to its new node's lane. A
// single server (no slot map at all) has one lane, whatever a lease's key.
#include <cstddef>
#include <optional>
#include <vector>

#include "redis/topology.hpp"

namespace fencelock::detail {

class KeeperLanes {
public:
    /// `single`: the connection has no slot map (a single server or Sentinel): one lane for good.
    explicit KeeperLanes(bool single) : single_(single) {}

    /// Whether every lease goes through one lane (lane 0).
    bool single() const noexcept { return single_; }

    /// A lane picked for a lease: its index, and whether it was made by this pick.
    struct Pick {
        std::size_t index;
        bool made;
        bool operator==(const Pick&) const = default;
    };
    /// The lane of a lease whose key the slot map routes to `route` (nullopt: no route: a
    /// single server, or a cluster whose map is not loaded yet). A node's lane is made the
    /// first time it appears, at the next index (made: true); lanes are never removed, so an
    /// index stays valid. A single server: lane 0 for every lease, made by the first pick.
    Pick lane_of(const std::optional<ServerAddress>& route);

    /// Whether lane `index` carries, now, a lease whose key is routed to `route`: a lease whose
    /// slot moved belongs to its new node's lane. Always true for a single server.
    bool carries(std::size_t index, const std::optional<ServerAddress>& route) const;

    /// The node lane `index` serves; nullopt: the lane of no route (or of a single server).
    const std::optional<ServerAddress>& node(std::size_t index) const { return nodes_.at(index); }

    /// How many lanes were made.
    std::size_t size() const noexcept { return nodes_.size(); }

private:
    bool single_;
    std::vector<std::optional<ServerAddress>> nodes_;  ///< by lane index
};

}  // namespace fencelock::detail

#pragma once
// Which master serves each of Redis Cluster's 16384 slots, as the client last learned it:
// built from a CLUSTER SLOTS reply, corrected slot by slot by MOVED redirects. Pure data, no
// I/O; the cluster connection (redis/cluster_connection.hpp) holds one under its lock.
#include <array>
#include <cstdint>
#include <expected>
#include <optional>
#include <system_error>
#include <vector>

#include "redis/cluster_slot.hpp"
#include "redis/reply.hpp"
#include "redis/topology.hpp"

namespace fencelock::detail {

class SlotMap {
public:
    /// An empty map: no slot has a master.
    SlotMap();

    /// Reads a CLUSTER SLOTS reply: [[first, last, [ip, port, id...], replicas...]...]. A master
    /// whose ip is empty or "?" (the node does not know its own address) is `asked`, the server
    /// that answered. A reply of another shape: protocol_error.
    static std::expected<SlotMap, std::error_code> from_cluster_slots(const Reply& reply, const ServerAddress& asked);

    /// The master serving `slot`, if the map names one.
    std::optional<ServerAddress> master_of(std::uint16_t slot) const;
    /// A MOVED redirect: `slot` is now served by `to` (the other slots stay where they were;
    /// a reshard moves slots one at a time).
    void moved(std::uint16_t slot, const ServerAddress& to);
    /// Every master that serves at least one slot, each once, in order of its first slot.
    std::vector<ServerAddress> masters() const;
    /// True when every slot has a master (CLUSTER SLOTS of a cluster in state ok).
    bool complete() const;

private:
    static constexpr std::uint16_t none = 0xffff;
    std::uint16_t node_index(const ServerAddress& address);

    std::vector<ServerAddress> nodes_;
    std::array<std::uint16_t, cluster_slots> owner_;  ///< index into nodes_, or none
};

}  // namespace fencelock::detail

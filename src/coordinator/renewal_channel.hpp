#pragma once
// The keeper's own line to its coordinator (Coordinator::renewal_channel): renewals in batches,
// the node that carries each lease's renewals (the keeper's lanes, lease/keeper_lanes.hpp), and
// that node's clock. A channel has its own connection, so that renewals never queue behind the
// client's other calls. One round trip per call, never per byte; the keeper (lock/renewal_keeper.hpp)
// decides everything else (what is due, what is lost, when to probe) in the lease core's terms.
#include <chrono>
#include <optional>
#include <span>
#include <vector>

#include "fencelock/result.hpp"
#include "fencelock/types.hpp"
#include "lease/keeper_lanes.hpp"
#include "lease/replies.hpp"
#include "lease/server_clock_watch.hpp"

namespace fencelock::detail {

/// How many replicas must hold a renewal before it counts, and how long to wait for them
/// (AcquireOptions::replicas and replica_timeout). replicas 0: the coordinator's word is enough.
struct RenewDurability {
    unsigned replicas = 0;
    std::chrono::milliseconds timeout{0};
};

/// One renewal of a batch: the same terms as Coordinator::renew, and the durability the lease
/// asked for. The references stay valid until renew_batch returns.
struct RenewItem {
    const ResourceName& resource;
    const OwnerToken& owner;
    std::chrono::milliseconds lease;
    RenewDurability durability;
};

class RenewalChannel {
public:
    virtual ~RenewalChannel() = default;

    /// Whether every lease's renewals go to one node for good (a single server, or whichever
    /// node a failover makes master): lane_of() is then never asked.
    virtual bool one_lane() const noexcept = 0;

    /// The node that carries `resource`'s renewals as last known, without I/O (the keeper's timer
    /// thread asks it and never waits for the network); nullopt: not known yet (the lane of no
    /// route).
    virtual std::optional<LaneRoute> lane_of(const ResourceName& resource) = 0;

    /// Renews every item in one pipelined round trip; one result per item, in order. Each is what
    /// Coordinator::renew would answer, except that a renewal that fewer replicas acknowledged than
    /// its item asks for comes back as errc::not_replicated (or the acknowledgement's own error):
    /// not a confirmation, and not a loss either. A transport failure fails every item with it.
    /// Called by each lane's sender, concurrently: thread-safe.
    virtual std::vector<Result<RenewReply>> renew_batch(std::span<const RenewItem> items) = 0;

    /// One reading of the clock of a node that carries renewals: the lane of `sample`'s node
    /// (null on one lane), with what tells its origin apart (server_clock_watch.hpp); nullopt
    /// when the reading failed (the renewals will tell). Only for a coordinator whose
    /// capabilities() say server_clock. Thread-safe.
    virtual std::optional<ServerClockWatch::Reading> read_clock(const ResourceName* sample) = 0;
};

}  // namespace fencelock::detail

#pragma once
// The keeper's own line to its coordinator (Coordinator::renewal_channel): renewals in batches,
// the node that carries each lease's renewals (the keeper's lanes, lease/keeper_lanes.hpp), and
// that node's clock. A channel has its own connection, so that renewals never queue behind the
// client's other calls. One round trip per call, never per byte; the keeper (lock/renewal_keeper.hpp)
// decides everything else (what is due, what is lost, when to probe) in the lease core's terms.
#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
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

/// One renewal of a batch: the same terms as Coordinator::renew, the lease named by its address
/// (RenewalChannel::lease_address), and the durability the lease asked for. What the views and
/// references name stays valid until renew_batch returns.
struct RenewItem {
    std::string_view address;
    const OwnerToken& owner;
    std::chrono::milliseconds lease;
    RenewDurability durability;
};

/// A batch's answers: one per item, in order, and the newest server time any reply carried.
struct RenewBatch {
    std::vector<Result<RenewReply>> replies;
    /// The latest RenewReply::server_time of the batch, a renewal that too few replicas
    /// acknowledged included (its reply is an error, but the server's clock spoke all the
    /// same): the keeper's clock watch reads it (server_clock_watch.hpp).
    std::optional<std::chrono::milliseconds> server_time;
};

class RenewalChannel {
public:
    virtual ~RenewalChannel() = default;

    /// The channel's own name for `resource`'s lease (Redis: its lock key), made once when a
    /// lease is kept and handed back by every call below, so that no renewal builds it again.
    /// No I/O; thread-safe.
    virtual std::string lease_address(const ResourceName& resource) const = 0;

    /// Whether every lease's renewals go to one node for good (a single server, or whichever
    /// node a failover makes master): lane_of() is then never asked.
    virtual bool one_lane() const noexcept = 0;

    /// The node that carries the renewals of the lease at `address` as last known, without I/O
    /// (the keeper's timer thread asks it and never waits for the network); nullopt: not known
    /// yet (the lane of no route).
    virtual std::optional<LaneRoute> lane_of(std::string_view address) = 0;

    /// Renews every item in one pipelined round trip; one result per item, in order. Each is what
    /// Coordinator::renew would answer, except that a renewal that fewer replicas acknowledged than
    /// its item asks for comes back as errc::not_replicated (or the acknowledgement's own error):
    /// not a confirmation, and not a loss either. A transport failure fails every item with it.
    /// Called by each lane's sender, concurrently: thread-safe.
    virtual RenewBatch renew_batch(std::span<const RenewItem> items) = 0;

    /// One reading of the clock of a node that carries renewals: the node of the lease at
    /// `sample` (nullopt on one lane), with what tells its origin apart (server_clock_watch.hpp);
    /// nullopt when the reading failed (the renewals will tell). Only for a coordinator whose
    /// capabilities() say server_clock. Thread-safe.
    virtual std::optional<ServerClockWatch::Reading> read_clock(std::optional<std::string_view> sample) = 0;
};

}  // namespace fencelock::detail

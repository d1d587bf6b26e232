#pragma once
// The keeper: its own line to the coordinator (a RenewalChannel) that renews every kept lease
// of a client, batching all renewals that are due into one pipelined round trip per node. The
// timer thread decides (what is due, what is lost, when to wake: a RenewalSchedule, which reads
// only the leases it takes) and never touches the network; one sender thread per node (a
// "lane") carries one batch at a time to that node and back. A loss therefore fires at
// safe_until even while a renewal is stuck on a stalled network for the whole command timeout,
// and on a cluster a stalled or dead node holds up only its own leases' renewals: the other
// nodes' lanes keep going (a lease's lane is the node the channel last knew for it, see
// RenewalChannel::lane_of; a single server, or a map not loaded yet, is one lane). Where the
// coordinator's leases expire by a server clock (CoordinatorCapabilities::server_clock), each
// lane's sender also watches its node's clock for forward steps.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "coordinator/coordinator.hpp"
#include "coordinator/renewal_channel.hpp"
#include "lease/keeper_lanes.hpp"
#include "lease/renewal_schedule.hpp"
#include "lease/server_clock_watch.hpp"
#include "lock/kept_lease.hpp"

namespace fencelock::detail {

class Keeper {
public:
    /// `channel` is the keeper's own (renewals and clock readings); `coordinator` serves releases
    /// from handle threads and says whether there is a server clock to watch; `clock`
    /// (ClientOptions::clock_drift_factor and clock_probe_interval): how far the server's clock
    /// may drift from this one's between two readings before it counts as a step, and how often
    /// each node's clock is read.
    Keeper(std::shared_ptr<Coordinator> coordinator, std::unique_ptr<RenewalChannel> channel,
           std::shared_ptr<LockObserver> observer, ClockWatchTerms clock);
    ~Keeper();

    /// Registers a lease before its acquisition is sent; it is not renewed while pending.
    void add(const std::shared_ptr<KeptLease>& lease);
    /// Starts renewing a lease whose acquisition the coordinator confirmed. `sent`: what its TTL counts
    /// from; `granted_at`: what its holding counts from (later for a trusted direct grant).
    void activate(const std::shared_ptr<KeptLease>& lease, steady_time sent, std::chrono::milliseconds ttl,
                  FencingToken fence, steady_time granted_at);
    /// Stops renewing and forgets the lease; no renewal of it is sent after this returns (one
    /// already on the wire is not waited for: renew compares the owner, so after the release
    /// it changes nothing). Waits for the lease's loss callbacks if they are running on the
    /// timer thread, unless called from that thread.
    void remove(const std::shared_ptr<KeptLease>& lease);

    KeeperStats stats();

    /// How the keeper's channel names `resource`'s lease (RenewalChannel::lease_address).
    std::string lease_address(const ResourceName& resource) const;

    /// Compare-and-delete through the coordinator (Coordinator::give_back: it serves nobody),
    /// never on the keeper's channel; reported to the observer.
    std::expected<ReleaseStatus, std::error_code> release(const KeptLease& lease);

private:
    using Batch = std::vector<std::shared_ptr<KeptLease>>;
    /// One node's renewals: at most one batch on the wire at a time.
    struct Lane {
        explicit Lane(double drift_factor) : clock(drift_factor) {}
        std::size_t index = 0;             ///< in lane_map_, which knows its node
        Batch batch;                       ///< on its way to the node; empty: idle
        bool open = false;                 ///< idle when the timer's sweep began: takes due leases
        std::condition_variable_any work;  ///< wakes this lane's sender
        ServerClockWatch clock;            ///< this node's clock (the sender's alone)
        steady_time next_probe{};
        /// Not one lane: a kept lease of this node, which routes the clock reading there.
        std::weak_ptr<KeptLease> sample;
        /// A lease of this node was kept since the sender last looked: it may start watching.
        bool kept_news = false;
        std::jthread sender;
    };

    void run(std::stop_token stop);
    Lane& lane_for(const KeptLease& lease);
    /// The lane of a lease routed to `route` (see KeeperLanes::lane_of).
    Lane& lane_for_node(const std::optional<LaneRoute>& route);
    /// The route of a lease as the channel last knew it (no I/O); nullopt on one lane.
    std::optional<LaneRoute> route_of(const KeptLease& lease);
    void send(Lane& lane, std::stop_token stop);
    /// Applies a batch's replies to its leases (mutex held); a missing reply fails its lease.
    void apply(std::span<const std::shared_ptr<KeptLease>> batch, std::vector<Result<RenewReply>>& replies,
               steady_time sent, steady_time received);
    void plan_renewal(const std::shared_ptr<KeptLease>& lease, steady_time at,
                      RenewalKind kind = RenewalKind::scheduled);
    void hand_to_lanes(steady_time now);
    void mark_lost(const std::shared_ptr<KeptLease>& lease, LossReason reason);
    /// Whether the lane's sender reads its node's clock now: while the coordinator has a server
    /// clock and the lane has kept leases (not one lane: one the lane's node carries, kept in
    /// lane.sample). Mutex held.
    bool watches_clock(Lane& lane);
    /// Reads the lane's node's clock (RenewalChannel::read_clock) and declares every active
    /// lease of that node lost when it stepped forward (server_clock_watch.hpp). Called by the
    /// lane's sender with the mutex held; unlocks it around the round trip.
    void probe_clock(Lane& lane, std::unique_lock<std::mutex>& lock);
    void fire_losses(std::vector<std::shared_ptr<KeptLease>>& lost);

    const std::shared_ptr<Coordinator> coordinator_;
    const std::unique_ptr<RenewalChannel> channel_;
    const std::shared_ptr<LockObserver> observer_;
    /// The coordinator's leases expire by a server clock the lanes watch.
    const bool server_clock_;
    /// Which lane carries which lease; one lane (channel_->one_lane()): every lease's lane is
    /// lanes_.front(). Mutex held (lanes are made by the timer thread).
    KeeperLanes lane_map_;
    std::mutex mutex_;
    std::condition_variable_any changed_;                    ///< wakes the timer thread and remove()
    std::unordered_set<std::shared_ptr<KeptLease>> leases_;  ///< added, not yet removed or lost
    RenewalSchedule<std::shared_ptr<KeptLease>> schedule_;   ///< the active leases' renewals and deadlines
    /// Due, and taken off the schedule, but their lane was busy: sent when it is idle again.
    std::vector<std::shared_ptr<KeptLease>> waiting_;
    std::vector<std::unique_ptr<Lane>>
        lanes_;  ///< by lane_map_ index; made by the timer thread as nodes appear; never shrinks
    std::vector<std::shared_ptr<KeptLease>> lost_;  ///< marked lost, callbacks not run yet
    bool dirty_ = false;
    KeeperStats stats_;
    const ClockWatchTerms clock_terms_;
    // Last member: started after, and joined (with the lanes' senders) before, the rest.
    std::jthread thread_;
};

/// The keeper for a client over `coordinator`: the coordinator's renewal channel (its own
/// connection), and the coordinator itself for releases.
std::shared_ptr<Keeper> make_keeper(std::shared_ptr<Coordinator> coordinator, std::shared_ptr<LockObserver> observer,
                                    ClockWatchTerms clock);

/// What `keeper` keeps for a lease hold() is about to ask for.
std::shared_ptr<KeptLease> make_kept_lease(const Keeper& keeper, const ResourceName& resource, const OwnerToken& owner,
                                           const AcquireOptions& options, KeepOptions keep, double drift_factor);

}  // namespace fencelock::detail

#include "lock/renewal_keeper.hpp"

#include <algorithm>

#include "common/log.hpp"
#include "lock/lock_events.hpp"

namespace fencelock::detail {

using std::chrono::steady_clock;
using State = KeptLease::State;

// The most renewals in one round trip. The command timeout bounds a whole pipeline, and Redis
// runs renew.lua for about 10 µs each: 100,000 leases due at once in one pipeline took longer
// than the 1 s default and were all lost to the timeout (bench --leases 100000). A lane sends
// a larger batch as consecutive round trips of this size, each counted from its own send.
constexpr std::size_t max_round_trip = 1000;

Keeper::Keeper(std::shared_ptr<Coordinator> coordinator, std::unique_ptr<RenewalChannel> channel,
               std::shared_ptr<LockObserver> observer, ClockWatchTerms clock)
    : coordinator_(std::move(coordinator)),
      channel_(std::move(channel)),
      observer_(std::move(observer)),
      server_clock_(coordinator_->capabilities().server_clock),
      lane_map_(channel_->one_lane()),
      clock_terms_(clock),
      thread_([this](std::stop_token stop) { run(stop); }) {
    // The lane of a single server (or of a cluster before its map is loaded) is ready before
    // the first renewal, as the one sender was: no thread start delays it.
    std::lock_guard lock(mutex_);
    (void)lane_for_node(std::nullopt);
}

Keeper::~Keeper() {
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();  // no lane is made after this
    for (auto& lane : lanes_) lane->sender.request_stop();
    for (auto& lane : lanes_) lane->sender.join();  // after a batch on the wire returns
}

void Keeper::add(const std::shared_ptr<KeptLease>& lease) {
    std::lock_guard lock(mutex_);
    leases_.insert(lease);
}

void Keeper::activate(const std::shared_ptr<KeptLease>& lease, steady_time sent, std::chrono::milliseconds ttl,
                      FencingToken fence, steady_time granted_at) {
    {
        std::lock_guard lock(mutex_);
        const LeaseTimes times = after_confirmation(sent, ttl, lease->policy);
        lease->fence = fence.value();
        lease->set_deadline(times.safe_until);
        lease->acquired_at = granted_at;
        lease->state = State::active;
        // Removed before its grant was told (a hold that failed after all): never renewed.
        if (leases_.contains(lease)) {
            schedule_.set_deadline(lease, times.safe_until);
            // A direct grant's TTL may be shorter than the lease (lib/handoff.lua, at most what
            // was left of the waiter's place): renewed on the next pass, so it runs on the lease asked for.
            plan_renewal(lease, ttl < lease->lease ? sent : times.next_renewal);
        }
        dirty_ = true;
        // Starts watching the clock of the lease's node now, not at its first renewal.
        if (lane_map_.single()) {
            lanes_.front()->work.notify_one();
        } else if (leases_.contains(lease)) {
            Lane& lane = lane_for(*lease);
            if (lane.sample.expired()) lane.sample = lease;
            lane.kept_news = true;
            lane.work.notify_one();
        }
    }
    changed_.notify_all();
}

// No wait for a renewal on the wire: if it reaches the coordinator after the release, renew finds the
// owner gone and changes nothing, and apply() skips a leaving lease. The wait is for loss
// callbacks running on the timer thread, so nothing they captured is destroyed under them
// once release() returns (as std::stop_callback's destructor waits); on the timer thread
// itself (release() from inside on_lost) there is nothing to wait for.
void Keeper::remove(const std::shared_ptr<KeptLease>& lease) {
    std::unique_lock lock(mutex_);
    lease->leaving = true;
    schedule_.forget(lease);
    if (std::this_thread::get_id() != thread_.get_id()) changed_.wait(lock, [&] { return !lease->loss_pending; });
    leases_.erase(lease);
}

std::expected<ReleaseStatus, std::error_code> Keeper::release(const KeptLease& lease) {
    auto result = coordinator_->give_back(lease.resource, lease.owner);
    report_release(observer_.get(), lease.resource, lease.owner, result, lease.held_for(steady_clock::now()));
    return result;
}

KeeperStats Keeper::stats() {
    std::lock_guard lock(mutex_);
    KeeperStats s = stats_;
    s.leases_kept = schedule_.size();  // exactly the active leases: forgotten when released or lost
    return s;
}

void Keeper::mark_lost(const std::shared_ptr<KeptLease>& lease, LossReason reason) {
    ++stats_.leases_lost;
    lease->reason = reason;
    lease->state = State::lost;
    lease->loss_pending = true;
    schedule_.forget(lease);
    leases_.erase(lease);
    lost_.push_back(lease);
}

// The next renewal of an active lease: due (and swept into a batch) as early as renewal_due()
// says for its kind, so scheduled renewals close together share one round trip.
void Keeper::plan_renewal(const std::shared_ptr<KeptLease>& lease, steady_time at, RenewalKind kind) {
    lease->next_renewal = at;
    schedule_.plan_renewal(lease, at, renewal_early_allowance(kind, lease->policy.interval));
}

// The lane of a lease's node, made (with its sender thread) the first time that node appears.
// lane_of does no I/O: the timer thread never waits for the network.
Keeper::Lane& Keeper::lane_for(const KeptLease& lease) { return lane_for_node(route_of(lease)); }

std::optional<LaneRoute> Keeper::route_of(const KeptLease& lease) {
    if (lane_map_.single()) return std::nullopt;
    return channel_->lane_of(lease.address);
}

Keeper::Lane& Keeper::lane_for_node(const std::optional<LaneRoute>& route) {
    const auto pick = lane_map_.lane_of(route);
    if (!pick.made) return *lanes_[pick.index];
    auto& lane = *lanes_.emplace_back(std::make_unique<Lane>(clock_terms_.drift_factor));
    lane.index = pick.index;
    lane.open = true;
    lane.sender = std::jthread([this, &lane](std::stop_token stop) { send(lane, stop); });
    return lane;
}

// The timer thread: sleep until the earliest renewal or deadline in the schedule, then
// (1) declare lost every lease whose safe_until has passed, a lease with a renewal still on the
// wire included (the reply could only come too late), (2) hand every lease that is due to its
// node's lane, as one batch per lane, if that lane is idle, (3) run the stop tokens and callbacks
// of lost leases outside the lock. It never waits for the network, so a loss is reported at
// safe_until plus scheduling delay, whatever the command timeout. A wake-up reads only the
// leases it takes (RenewalSchedule: O(1) each on schedule, O(log n) out of order), not every
// kept lease.
void Keeper::run(std::stop_token stop) {
    std::vector<std::shared_ptr<KeptLease>> lost;
    std::vector<std::shared_ptr<KeptLease>> expired;
    std::unique_lock lock(mutex_);
    while (!stop.stop_requested()) {
        const auto now = steady_clock::now();
        schedule_.take_expired(now, expired);
        for (const auto& lease : expired) mark_lost(lease, LossReason::expired);
        expired.clear();
        schedule_.take_due(now, waiting_);
        hand_to_lanes(now);
        if (lost_.empty()) {
            dirty_ = false;
            // Wake when the earliest renewal is due (not when it first may go early): that
            // batch then sweeps up every lease due within the next quarter interval.
            changed_.wait_until(lock, stop, schedule_.next_wake(now + std::chrono::hours(1)), [&] { return dirty_; });
            continue;
        }
        lost.swap(lost_);
        lock.unlock();
        fire_losses(lost);
        lock.lock();
        for (const auto& lease : lost) lease->loss_pending = false;
        lost.clear();
        changed_.notify_all();
    }
}

// Gives each due lease to its node's lane if that lane was idle when this sweep began, all of
// a lane's leases as one batch. A lease whose lane is busy stays in waiting_: the lane's
// completion wakes the timer (dirty_), and the next sweep hands it over. A lease released or
// lost while waiting is dropped; its deadline stayed in the schedule all along.
void Keeper::hand_to_lanes(steady_time now) {
    for (auto& lane : lanes_) lane->open = lane->batch.empty();
    // Not a cluster: one lane for good. While it is busy nothing can go, and the leases waiting
    // (tens of thousands at 100,000 kept) need not be read on each wake-up. (On a cluster a
    // waiting lease's node may have a new, idle lane, so they are read.)
    if (lane_map_.single() && !lanes_.empty() && !lanes_.front()->open) return;
    std::erase_if(waiting_, [&](const std::shared_ptr<KeptLease>& lease) {
        if (lease->state != State::active || lease->leaving) return true;
        Lane& lane = lane_for(*lease);
        if (!lane.open) return false;
        lane.batch.push_back(lease);
        if (!lane_map_.single() && lane.sample.expired())
            lane.sample = lease;  // the node has kept leases: watch its clock
        if (now > lease->next_renewal)
            stats_.max_send_lateness =
                std::max(stats_.max_send_lateness,
                         std::chrono::duration_cast<std::chrono::microseconds>(now - lease->next_renewal));
        return true;
    });
    for (auto& lane : lanes_)
        if (lane->open && !lane->batch.empty()) lane->work.notify_one();
}

void Keeper::fire_losses(std::vector<std::shared_ptr<KeptLease>>& lost) {
    for (const auto& lease : lost) {
        if (observer_)
            observer_->on_lease_lost(LossEvent{lease->resource, lease->owner, FencingToken(lease->fence),
                                               lease->reason.load(), lease->held_for(steady_clock::now())});
        lease->stop.request_stop();
        if (lease->keep.on_lost)
            lease->keep.on_lost(LeaseLoss{lease->resource, FencingToken(lease->fence), lease->reason});
    }
}

// A lane's sender thread: carries one batch at a time, in pipelined round trips of at most
// max_round_trip renewals, without the mutex (the network is slow), and takes it only to
// publish the results. The lane stays busy (its batch not empty) until the last round trip.
void Keeper::send(Lane& lane, std::stop_token stop) {
    std::vector<RenewItem> items;
    std::unique_lock lock(mutex_);
    while (true) {
        // Wake for the clock probe too, while the node has kept leases; a single lane also
        // wakes when the first is kept (activate()), a cluster lane with its first batch.
        // Without a server clock, only a batch wakes it.
        const bool watch_clock = watches_clock(lane);
        lane.kept_news = false;
        const auto woken = [&] {
            return !lane.batch.empty() ||
                   (server_clock_ && !watch_clock && (lane_map_.single() ? schedule_.size() > 0 : lane.kept_news));
        };
        if (watch_clock) lane.work.wait_until(lock, stop, lane.next_probe, woken);
        else lane.work.wait(lock, stop, woken);
        if (stop.stop_requested()) return;
        if (steady_clock::now() >= lane.next_probe && watches_clock(lane)) probe_clock(lane, lock);
        if (lane.batch.empty()) continue;
        for (std::size_t first = 0; first < lane.batch.size() && !stop.stop_requested(); first += max_round_trip) {
            const std::span<const std::shared_ptr<KeptLease>> part(lane.batch.data() + first,
                                                                   std::min(max_round_trip, lane.batch.size() - first));
            items.clear();
            for (const auto& lease : part) items.push_back(lease->renewal());
            lock.unlock();
            const auto sent = steady_clock::now();
            RenewBatch answers = channel_->renew_batch(items);
            const auto received = steady_clock::now();
            lock.lock();
            // The replies' server time: a forward step shows in the first renewal after it.
            // Its origin is not known (a reconnect, a redirect), so it only calls for a probe
            // now, and the probe, which knows its origin, decides (server_clock_watch.hpp).
            apply(part, answers.replies, sent, received);
            if (server_clock_ && answers.server_time && lane.clock.suggests_step(received, *answers.server_time)) {
                lane.next_probe = received;
                ++stats_.clock_probes_on_renewal;
            }
        }
        lane.batch.clear();
        dirty_ = true;
        changed_.notify_all();
    }
}

bool Keeper::watches_clock(Lane& lane) {
    if (!server_clock_) return false;
    if (lane_map_.single()) return schedule_.size() > 0;
    if (schedule_.size() == 0) {
        lane.sample.reset();
        return false;
    }
    const auto serves = [&](const std::shared_ptr<KeptLease>& l) {
        return l && l->state == State::active && !l->leaving && lane_map_.carries(lane.index, route_of(*l));
    };
    if (serves(lane.sample.lock())) return true;
    // The sample left or moved: another kept lease of this node, if any (once per sample).
    lane.sample.reset();
    for (const auto& l : leases_)
        if (serves(l)) {
            lane.sample = l;
            return true;
        }
    return false;
}

void Keeper::probe_clock(Lane& lane, std::unique_lock<std::mutex>& lock) {
    lane.next_probe = steady_clock::now() + clock_terms_.probe_every;
    std::shared_ptr<KeptLease> sample;
    if (!lane_map_.single()) sample = lane.sample.lock();  // watches_clock() just found it
    lock.unlock();
    const auto reading = channel_->read_clock(sample ? std::optional<std::string_view>(sample->address) : std::nullopt);
    sample.reset();  // were it the last owner, the lease is not destroyed under the mutex
    lock.lock();
    if (!reading) return;  // the coordinator failing: the renewals will tell
    const auto step = lane.clock.observe(*reading);
    if (!step) return;
    const std::optional<LaneRoute>& route = lane_map_.node(lane.index);
    const std::string node = route ? route->node : std::string("server");
    std::vector<std::shared_ptr<KeptLease>> gone;
    for (const auto& lease : leases_)
        if (lease->state == State::active && !lease->leaving && lane_map_.carries(lane.index, route_of(*lease)))
            gone.push_back(lease);
    for (const auto& lease : gone) mark_lost(lease, LossReason::clock_step);
    log_event("warn", "redis_clock_stepped",
              {{"step_ms", std::chrono::duration_cast<std::chrono::milliseconds>(*step).count()},
               {"node", node},
               {"leases_lost", static_cast<std::uint64_t>(gone.size())},
               {"hint",
                "the Redis server's wall clock jumped forward and Redis expires keys by it: every lease "
                "there may have ended early. Keep server clocks slewing, never stepping (chrony without "
                "makestep after boot)"}});
    dirty_ = true;
    changed_.notify_all();
}

// Applies the replies to `batch` (mutex held).
void Keeper::apply(std::span<const std::shared_ptr<KeptLease>> batch, std::vector<Result<RenewReply>>& replies,
                   steady_time sent, steady_time received) {
    ++stats_.batches;
    stats_.renewals_sent += batch.size();
    // One reply per lease: a channel that answered fewer has failed the rest.
    replies.resize(batch.size(), Result<RenewReply>(std::unexpected(make_error_code(errc::protocol_error))));
    for (std::size_t i = 0; i < batch.size(); ++i) {
        KeptLease& lease = *batch[i];
        const Result<RenewReply>& reply = replies[i];
        // release() owns a leaving lease; a lost one stays lost (the timer declared it).
        if (lease.leaving || lease.state != State::active) continue;
        // A renewal fewer replicas acknowledged than the lease asked for comes as an error
        // (not_replicated): safe_until stays where the last acknowledged one put it (what a
        // promoted replica would still have), and the renewal is retried. Nothing says the lease
        // is gone.
        report_renew(observer_.get(), lease.resource, lease.owner, reply, lease.lease, true);
        if (!reply) {
            // Outcome unknown, not replicated or the coordinator failing: retry while the lease
            // can still be saved.
            plan_renewal(batch[i], retry_at(received, lease.deadline(), lease.policy), RenewalKind::retry);
            continue;
        }
        switch (reply->status) {
            case RenewStatus::renewed:
                // A confirmation that arrives after safe_until does not revive the lease:
                // the holder may already have been told it was gone.
                if (expired(received, lease.deadline())) {
                    mark_lost(batch[i], LossReason::expired);
                } else {
                    const LeaseTimes times = after_confirmation(sent, reply->ttl, lease.policy);
                    lease.set_deadline(times.safe_until);
                    schedule_.set_deadline(batch[i], times.safe_until);
                    plan_renewal(batch[i], times.next_renewal);
                    ++lease.renewals;
                    ++stats_.renewals_confirmed;
                }
                break;
            case RenewStatus::not_owner: mark_lost(batch[i], LossReason::not_owner); break;
            case RenewStatus::max_hold_exceeded: mark_lost(batch[i], LossReason::max_hold_exceeded); break;
        }
    }
}

std::shared_ptr<Keeper> make_keeper(std::shared_ptr<Coordinator> coordinator, std::shared_ptr<LockObserver> observer,
                                    ClockWatchTerms clock) {
    auto channel = coordinator->renewal_channel();
    return std::make_shared<Keeper>(std::move(coordinator), std::move(channel), std::move(observer), clock);
}

std::string Keeper::lease_address(const ResourceName& resource) const { return channel_->lease_address(resource); }

std::shared_ptr<KeptLease> make_kept_lease(const Keeper& keeper, const ResourceName& resource, const OwnerToken& owner,
                                           const AcquireOptions& options, KeepOptions keep, double drift_factor) {
    const RenewalPolicy policy{.interval = keep.renew_every > std::chrono::milliseconds::zero()
                                               ? keep.renew_every
                                               : default_renew_interval(options.lease),
                               .retry_delay = keep.retry_delay,
                               .drift_factor = drift_factor};
    return std::make_shared<KeptLease>(resource, owner, options.lease, policy, std::move(keep),
                                       keeper.lease_address(resource),
                                       RenewDurability{options.replicas, options.replica_timeout});
}

}  // namespace fencelock::detail

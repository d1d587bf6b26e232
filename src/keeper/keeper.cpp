#include "keeper/keeper.hpp"

#include <algorithm>

#include "core/protocol.hpp"
#include "lock_ops.hpp"
#include "redis/script_runner.hpp"

namespace fencelock::detail {

using std::chrono::steady_clock;
using State = KeptLease::State;

Keeper::Keeper(std::unique_ptr<Connection> connection, std::shared_ptr<ConnectionPool> pool, std::string key_prefix,
               std::shared_ptr<LockObserver> observer)
    : connection_(std::move(connection)), pool_(std::move(pool)), prefix_(std::move(key_prefix)),
      observer_(std::move(observer)),
      thread_([this](std::stop_token stop) { run(stop); }) {}

Keeper::~Keeper() {
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();
}

void Keeper::add(const std::shared_ptr<KeptLease>& lease) {
    std::lock_guard lock(mutex_);
    leases_.push_back(lease);
}

void Keeper::activate(const std::shared_ptr<KeptLease>& lease, steady_time sent, std::chrono::milliseconds ttl,
                      FencingToken fence) {
    {
        std::lock_guard lock(mutex_);
        const LeaseTimes times = after_confirmation(sent, ttl, lease->policy);
        lease->fence = fence.value();
        lease->set_deadline(times.safe_until);
        lease->next_renewal = times.next_renewal;
        lease->acquired_at = sent;
        lease->state = State::active;
        dirty_ = true;
    }
    changed_.notify_all();
}

void Keeper::remove(const std::shared_ptr<KeptLease>& lease) {
    std::unique_lock lock(mutex_);
    lease->leaving = true;
    changed_.wait(lock, [&] { return !lease->in_flight; });
    std::erase(leases_, lease);
}

std::expected<ReleaseStatus, std::error_code> Keeper::release(const KeptLease& lease) {
    auto result = release_once(*pool_->borrow(), prefix_, lease.resource, lease.owner);
    report_release(observer_.get(), lease.resource, lease.owner, result, lease.held_for(steady_clock::now()));
    return result;
}

KeeperStats Keeper::stats() {
    std::lock_guard lock(mutex_);
    KeeperStats s = stats_;
    s.leases_kept = static_cast<std::size_t>(
        std::count_if(leases_.begin(), leases_.end(), [](const auto& l) { return l->state == State::active; }));
    return s;
}

void Keeper::mark_lost(KeptLease& lease, LossReason reason, std::vector<std::shared_ptr<KeptLease>>& lost,
                       const std::shared_ptr<KeptLease>& ptr) {
    ++stats_.leases_lost;
    lease.reason = reason;
    lease.state = State::lost;
    lost.push_back(ptr);
}

// The loop: sleep until the earliest renewal or deadline among the leases, then (1) declare
// lost every lease whose safe_until has passed, (2) renew every lease that is due in one
// pipelined batch, (3) run the stop tokens and callbacks of lost leases outside the lock.
void Keeper::run(std::stop_token stop) {
    std::vector<std::shared_ptr<KeptLease>> due, lost;
    std::unique_lock lock(mutex_);
    while (!stop.stop_requested()) {
        const auto now = steady_clock::now();
        auto wake = now + std::chrono::hours(1);
        due.clear();
        lost.clear();
        for (const auto& lease : leases_) {
            if (lease->state != State::active || lease->leaving || lease->in_flight) continue;
            if (expired(now, lease->deadline())) {
                mark_lost(*lease, LossReason::expired, lost, lease);
                continue;
            }
            wake = std::min(wake, lease->deadline());
            if (renewal_due(now, lease->next_renewal, lease->policy.interval)) {
                lease->in_flight = true;
                due.push_back(lease);
                if (now > lease->next_renewal)
                    stats_.max_send_lateness = std::max(
                        stats_.max_send_lateness,
                        std::chrono::duration_cast<std::chrono::microseconds>(now - lease->next_renewal));
            } else {
                // Wake when the earliest renewal is due (not when it first may go early):
                // that batch then sweeps up every lease due within the next quarter interval.
                wake = std::min(wake, lease->next_renewal);
            }
        }
        if (due.empty() && lost.empty()) {
            dirty_ = false;
            changed_.wait_until(lock, stop, wake, [&] { return dirty_; });
            continue;
        }
        lock.unlock();
        if (!due.empty()) renew_batch(due, lost);
        for (const auto& lease : lost) {
            if (observer_)
                observer_->on_lease_lost(LossEvent{lease->resource, lease->owner, FencingToken(lease->fence),
                                                   to_string(lease->reason.load()),
                                                   lease->held_for(steady_clock::now())});
            lease->stop.request_stop();
            if (lease->keep.on_lost)
                lease->keep.on_lost(LeaseLoss{lease->resource, FencingToken(lease->fence), lease->reason});
        }
        lock.lock();
        std::erase_if(leases_, [](const auto& l) { return l->state == State::lost; });
    }
}

// Sends the renewals of `due` in one round trip and applies the replies. Runs without the
// mutex held (the network is slow); takes it only to publish the results.
void Keeper::renew_batch(std::vector<std::shared_ptr<KeptLease>>& due, std::vector<std::shared_ptr<KeptLease>>& lost) {
    std::vector<ScriptCall> calls;
    calls.reserve(due.size());
    for (const auto& lease : due) calls.push_back({{lease->lock_key}, {lease->owner.str(), lease->lease_ms}});
    const auto sent = steady_clock::now();
    auto results = run_script_batch(*connection_, scripts::renew, calls);
    const auto received = steady_clock::now();

    {
        std::lock_guard lock(mutex_);
        ++stats_.batches;
        stats_.renewals_sent += due.size();
        for (std::size_t i = 0; i < due.size(); ++i) {
            KeptLease& lease = *due[i];
            lease.in_flight = false;
            if (lease.leaving) continue;  // release() owns it now
            std::expected<RenewReply, std::error_code> reply =
                results ? ((*results)[i] ? decode_renew(*(*results)[i]) : std::unexpected((*results)[i].error()))
                        : std::unexpected(results.error());
            if (observer_)
                observer_->on_renew(RenewEvent{lease.resource, lease.owner,
                                               reply ? renew_result(reply->status) : RenewResult::error,
                                               reply ? reply->fence : std::nullopt, lease.lease, true,
                                               reply ? std::error_code{} : reply.error()});
            if (!reply) {
                // Outcome unknown or Redis failing: retry while the lease can still be saved.
                lease.next_renewal = retry_at(received, lease.deadline(), lease.policy);
                continue;
            }
            switch (reply->status) {
                case RenewStatus::renewed:
                    // A confirmation that arrives after safe_until does not revive the lease:
                    // the holder may already have been told it was gone.
                    if (expired(received, lease.deadline())) {
                        mark_lost(lease, LossReason::expired, lost, due[i]);
                    } else {
                        const LeaseTimes times = after_confirmation(sent, reply->ttl, lease.policy);
                        lease.set_deadline(times.safe_until);
                        lease.next_renewal = times.next_renewal;
                        ++lease.renewals;
                        ++stats_.renewals_confirmed;
                    }
                    break;
                case RenewStatus::not_owner: mark_lost(lease, LossReason::not_owner, lost, due[i]); break;
                case RenewStatus::max_hold_exceeded: mark_lost(lease, LossReason::max_hold_exceeded, lost, due[i]); break;
            }
        }
    }
    changed_.notify_all();
}

}  // namespace fencelock::detail

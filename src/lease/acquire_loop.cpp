#include "lease/acquire_loop.hpp"

#include <algorithm>
#include <stdexcept>

#include "common/backoff_delays.hpp"
#include "lease/safe_until.hpp"

namespace fencelock::detail {

using Kind = AcquireStep::Kind;

AcquireLoop::AcquireLoop(AcquirePlan plan, std::mt19937_64& rng) : plan_(std::move(plan)), rng_(rng) {}

bool AcquireLoop::may_wait() const noexcept {
    return plan_.wait > std::chrono::milliseconds::zero() && plan_.notifications;
}

// Threads of this client already wait for the lock: a newcomer goes to the back of the line
// instead of overtaking them. A fair waiter joins the local line before its first attempt, so
// its place there follows its place in Redis's line, and attempts at once to get the latter.
// With direct grants, a subscription that still stands is joined first too: the first attempt
// is then watched and takes a place a release can grant, saving the second attempt a waiter
// makes after subscribing.
AcquireStep AcquireLoop::start(steady_time now, bool others_wait, bool subscribed) {
    started_ = now;
    deadline_ = now + plan_.wait;
    if (may_wait() && (plan_.fair || others_wait || (subscribed && plan_.direct_grants))) {
        phase_ = Phase::first_join;
        return join(now);
    }
    return attempt();
}

// A slow subscription is no reason to wait longer than polling would.
AcquireStep AcquireLoop::join(steady_time now) {
    return {.kind = Kind::join_line,
            .until = std::min({deadline_, now + plan_.command_timeout, now + plan_.backoff.max})};
}

AcquireStep AcquireLoop::joined(bool subscribed, std::size_t ahead, std::optional<steady_time> successor_until) {
    in_line_ = true;
    if (phase_ == Phase::first_join && successor_until) {
        phase_ = Phase::first_wait;
        return {.kind = Kind::wait_for_release, .until = std::min(deadline_, *successor_until)};
    }
    if (phase_ == Phase::first_join) {
        // With direct grants every waiter attempts at once: its refused attempt is its place.
        if (subscribed && !plan_.fair && ahead > 0 && !plan_.direct_grants) {
            phase_ = Phase::first_wait;
            return {.kind = Kind::wait_for_release, .until = std::min(deadline_, started_ + plan_.backoff.max)};
        }
        return attempt();
    }
    // Subscribed only now: a release may have come between the attempt and the subscription,
    // so look once more before sleeping.
    if (subscribed) return attempt();
    queue_wait();
    return next_queued();
}

AcquireStep AcquireLoop::attempt() {
    ++attempts_;
    phase_ = Phase::attempting;
    return {.kind = Kind::attempt, .owner = &plan_.owner};
}

AcquireStep AcquireLoop::replied(const std::expected<AcquireReply, std::error_code>& reply, bool watched,
                                 steady_time sent, steady_time now, bool stopped) {
    if (reply && reply->acquired && !reply->unreplicated) {
        AcquireStep finish{.kind = Kind::finish, .result = AcquireResult::acquired, .grant = *reply, .sent = sent};
        // "Already ours" for a lease a release handed on, or after a refusal with no attempt of
        // unknown outcome since: a release granted it directly (confirmed, or found before its
        // message came). For the caller it is a new acquisition, not a retry after a lost reply.
        if (reply->reacquired && (reply->handed || (refused_ && !maybe_granted_))) finish.grant.reacquired = false;
        if (reply->handed) return finish_handed(finish);
        return finish;
    }
    watched_ = watched;
    replied_at_ = now;
    if (reply && reply->acquired) {
        // Granted, but not acknowledged by the replicas asked for: a failover could forget
        // it, so it is nobody's. Free it at once (compare-and-delete with our token), then
        // fail like any error: not_replicated is retried until the deadline.
        ++failed_;
        queued_.push_back({.kind = Kind::release, .owner = &plan_.owner});
        last_error_ = reply->unreplicated;
        maybe_granted_ = false;
        if (classify(last_error_) == failure_kind::fatal) {
            queued_.push_back({.kind = Kind::finish, .result = AcquireResult::error, .error = last_error_});
            return next_queued();
        }
        if (!plan_.retry_errors) {
            queue_give_up();  // leaves the line, as at the deadline
            return next_queued();
        }
    } else if (reply) {
        ++contended_;
        holder_ttl_ = reply->ttl;
        refused_ = true;
        refused_fence_ = reply->seen_fence;
        refused_sent_ = sent;
        last_error_.clear();
        maybe_granted_ = false;
        may_be_in_line_ = may_be_in_line_ || plan_.takes_place;
        // Woken for a release that is another process's fair waiter's turn, or a local
        // waiter's whose place in Redis's line is ahead of ours: hand it on.
        if (woken_ && reply->queued) queued_.push_back({.kind = Kind::pass_on});
    } else {
        // A promoted master's failover grace is no transport or server failure: the lock is
        // taken as far as anyone can know, and the attempt counts as contended.
        if (reply.error() == errc::failover_grace) ++contended_;
        else ++failed_;
        last_error_ = reply.error();
        const failure_kind kind = classify(last_error_);
        if (kind == failure_kind::fatal) {
            // A release may have granted us the lease meanwhile: leave_line gives it back.
            if (may_be_in_line_ && plan_.direct_grants)
                queued_.push_back({.kind = Kind::leave_line, .owner = &plan_.owner});
            queued_.push_back({.kind = Kind::finish, .result = AcquireResult::error, .error = last_error_});
            return next_queued();
        }
        const bool unknown = kind == failure_kind::outcome_unknown;
        maybe_granted_ = maybe_granted_ || unknown;
        may_be_in_line_ = may_be_in_line_ || (plan_.takes_place && unknown);
        // Not retried when the caller waits for the lock only (retry_errors = false): wound up
        // as at the deadline, so a place in the line is left and a lease a lost reply may have
        // granted to a private token is freed.
        if (!plan_.retry_errors && last_error_ != errc::failover_grace) {
            queue_give_up();
            return next_queued();
        }
    }
    if (now >= deadline_ || stopped) {
        queue_give_up();
    } else if (may_wait() && !in_line_ && !last_error_) {
        phase_ = Phase::late_join;
        queued_.push_back(join(now));
    } else {
        queue_wait();
    }
    return next_queued();
}

// Subscribed when the attempt went out: a release wakes us, so sleep until the holder's lease
// would end. Otherwise poll with full jitter. Never past the deadline.
void AcquireLoop::queue_wait() {
    auto delay = watched_ && !last_error_ ? calm_delay(plan_.backoff, holder_ttl_, rng_)
                                          : full_jitter(plan_.backoff, attempts_ - 1, rng_);
    delay = std::min(delay, std::chrono::ceil<std::chrono::milliseconds>(deadline_ - replied_at_));
    woken_ = false;
    phase_ = Phase::waiting;
    if (in_line_) queued_.push_back({.kind = Kind::wait_for_release, .until = replied_at_ + delay, .delay = delay});
    else queued_.push_back({.kind = Kind::sleep, .delay = delay});
}

AcquireStep AcquireLoop::waited(bool woken, bool stopped, const std::optional<DirectGrant>& grant, steady_time now,
                                bool in_grace) {
    if (grant) return granted(*grant, now, stopped, in_grace);
    woken_ = woken;
    // The first wait (behind this client's earlier waiters) always ends in an attempt.
    if (phase_ == Phase::first_wait || !stopped) return attempt();
    if (woken) queued_.push_back({.kind = Kind::pass_on});  // a release this waiter will not use
    queue_give_up();
    return next_queued();
}

// A release granted us the lease and said so (see the header for when that is trusted).
AcquireStep AcquireLoop::granted(const DirectGrant& g, steady_time now, bool stopped, bool in_grace) {
    ++grants_;
    woken_ = false;          // the wake-up was ours: nothing to hand on
    may_be_in_line_ = true;  // the lease may be ours: giving up must give it back (leave_line)
    if (stopped || now >= deadline_) {
        queue_give_up();
        return next_queued();
    }
    if (trusted(g, now, in_grace)) {
        return finish_handed({.kind = Kind::finish,
                              .result = AcquireResult::acquired,
                              .grant = {.acquired = true, .fence = g.fence, .ttl = g.ttl, .handed = true},
                              .sent = g.release_sent.value_or(refused_sent_),
                              .direct = true});
    }
    return attempt();  // confirm: the same owner token finds the lease if the grant stands
}

AcquireStep AcquireLoop::finish_handed(AcquireStep finish) {
    if (!plan_.extend_grants || finish.grant.ttl >= plan_.lease) return finish;
    AcquireStep extend{.kind = Kind::extend, .owner = &plan_.owner, .grant = finish.grant, .sent = finish.sent};
    extending_ = finish;
    return extend;
}

// The extension renews a lease we hold: renewed, the lease counts from the renewal's send. Gone
// (it lapsed first): as if never granted, so attempt again with the same token. Anything else
// (a transport error, max hold): the handed lease is still ours with the TTL it came with, which
// the caller's Lease reports as it is.
AcquireStep AcquireLoop::extended(const std::expected<RenewReply, std::error_code>& reply, steady_time sent,
                                  steady_time now) {
    AcquireStep finish = *extending_;
    extending_.reset();
    if (reply && reply->status == RenewStatus::renewed) {
        finish.grant.ttl = reply->ttl;
        finish.sent = sent;
        return finish;
    }
    if (reply && reply->status == RenewStatus::not_owner) {
        replied_at_ = now;
        if (now >= deadline_) {
            queue_give_up();
            return next_queued();
        }
        return attempt();
    }
    return finish;
}

bool AcquireLoop::trusted(const DirectGrant& g, steady_time now, bool in_grace) const {
    if (!plan_.trust_grants || in_grace) return false;
    // Told by this client's own release: fresh, its TTL counted from that release's send.
    if (g.release_sent) return now < safe_until(*g.release_sent, g.ttl, plan_.drift_factor);
    if (!refused_fence_ || g.fence <= *refused_fence_) return false;
    return now < safe_until(refused_sent_, g.ttl, plan_.drift_factor);
}

// Best effort, both: a place left behind lapses by itself, a lease expires anyway.
void AcquireLoop::queue_give_up() {
    phase_ = Phase::winding_up;
    if (may_be_in_line_) queued_.push_back({.kind = Kind::leave_line, .owner = &plan_.owner});
    if (last_error_) {
        // Giving up after an unknown outcome with a token the caller cannot retry with: free
        // the lease we may have been granted instead of leaving it to block others until it
        // expires. A caller holding the token retries instead.
        if (maybe_granted_ && plan_.token_is_private) queued_.push_back({.kind = Kind::release, .owner = &plan_.owner});
        queued_.push_back({.kind = Kind::finish, .result = AcquireResult::error, .error = last_error_});
        return;
    }
    const bool waited = plan_.wait > std::chrono::milliseconds::zero();
    queued_.push_back({.kind = Kind::finish, .result = waited ? AcquireResult::timeout : AcquireResult::contended});
}

AcquireStep AcquireLoop::done() { return next_queued(); }

AcquireStep AcquireLoop::next_queued() {
    if (queued_.empty()) throw std::logic_error("AcquireLoop: no step is pending");
    AcquireStep step = queued_.front();
    queued_.pop_front();
    return step;
}

}  // namespace fencelock::detail

#pragma once
// The acquire loop as a state machine with no I/O: it says what to do next (send an attempt,
// join the local line, wait, give up), and the client carries that out against Redis and the
// release notifier and reports back. It reads no clock and touches no connection, so every
// path (grant, contention, lost replies, errors, deadline) is unit-tested with scripted replies.
//
// Why one owner token for every attempt: if an attempt's reply is lost (timeout, broken
// connection), Redis may have granted the lease. The next attempt with the same token gets that
// lease back with its fence instead of being blocked by it until it expires.
//
// Waiting: once contended, the waiter joins the client's local line for the resource and
// subscribes to its release channel. An attempt sent while the subscription stands cannot miss
// the next release, so after it fails the waiter sleeps until a release wakes it (one waiter per
// release, in arrival order) or until the holder's lease would end; without a subscription it
// polls with full-jitter backoff. Errors fail closed: a fatal one ends the loop at once, others
// are retried until the deadline and then returned.
//
// Direct grants (docs/DESIGN.md, "Direct handoff"): a release may grant the lease to a waiter
// whose refused attempt opted in, and the message says so. The message and the attempt's
// reply come on different connections, so the loop trusts a grant without a round trip only
// when (a) its fence is larger than the fence the last refused attempt saw: it was issued
// after that attempt was processed, hence after it was sent, so (b) its lease is safe until
// that send time + its TTL less the drift margin, and now is before that; (c) no replica
// acknowledgement is asked and no failover grace holds. Otherwise it confirms with an attempt
// under the same owner token, which finds the lease ("already ours") if the grant stands. A
// grant that comes when the loop gives up is handed on by leave_line, never kept. A grant by
// another client may be shorter than the lease asked (its TTL is bounded by the waiter's
// place): a plan that extends grants renews it to the lease before the acquisition ends.
#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>
#include <random>
#include <system_error>

#include "fencelock/backoff.hpp"
#include "fencelock/error.hpp"
#include "fencelock/options.hpp"
#include "fencelock/types.hpp"
#include "lease/replies.hpp"
#include "lease/safe_until.hpp"

namespace fencelock::detail {

/// What one acquisition is allowed to do, fixed before its first attempt.
struct AcquirePlan {
    OwnerToken owner;
    /// AcquireOptions::wait (zero: a single attempt).
    std::chrono::milliseconds wait{0};
    BackoffPolicy backoff{};
    /// AcquireOptions::fair.
    bool fair = false;
    /// ClientOptions::release_notifications: waiters may join the local line.
    bool notifications = false;
    /// A refused attempt leaves a place in a line in Redis (fair line or sleepers).
    bool takes_place = false;
    /// The caller never saw the owner token, so it cannot retry with it.
    bool token_is_private = true;
    /// ClientOptions::command_timeout: bounds the wait for a subscription.
    std::chrono::milliseconds command_timeout{0};
    /// Attempts sent while subscribed opt in to direct grants (the driver sends the flag);
    /// every local waiter then attempts on arrival, so each has a place a release can grant.
    bool direct_grants = false;
    /// A direct grant may be trusted without a confirming attempt: no replica
    /// acknowledgement is asked (AcquireOptions::replicas == 0).
    bool trust_grants = false;
    /// ClientOptions::clock_drift_factor, for a trusted grant's safe-until.
    double drift_factor = 0;
    /// AcquireOptions::lease, and whether a handed lease with a shorter TTL (a grant bounded by
    /// the waiter's place) is extended to it before the acquisition ends: both clients do, for
    /// plain and kept leases alike (a caller would hold less than it asked, and `run` would
    /// stop a command at once whose lease looked about to end: posix/stop_schedule.hpp).
    std::chrono::milliseconds lease{0};
    bool extend_grants = false;
    /// AcquireOptions::retry_errors.
    bool retry_errors = true;
};

/// One thing for the driver to do. Fields not named for a kind are unused.
struct AcquireStep {
    enum class Kind {
        attempt,           ///< run the acquire script for `owner`; then replied()
        join_line,         ///< join the local line, wait for the subscription until `until`; then joined()
        wait_for_release,  ///< wait in the line for a release until `until`; then waited()
        sleep,             ///< not in a line: sleep `delay` unless stopped; then waited(false, ...)
        pass_on,           ///< hand the release that woke us to the next local waiter; then done()
        extend,            ///< renew the handed lease of `owner` (`grant`, `sent`) to the plan's lease; then extended()
        leave_line,        ///< best effort: give up `owner`'s place in Redis's line; then done()
        release,           ///< best effort: free a lease `owner` may have been granted; then done()
        finish,            ///< the acquisition is over with `result` (and `error`)
    };
    Kind kind;
    const OwnerToken* owner = nullptr;
    steady_time until{};
    std::chrono::milliseconds delay{0};
    AcquireResult result = AcquireResult::error;
    std::error_code error{};
    /// finish with acquired: the grant.
    AcquireReply grant{};
    /// finish with acquired: the send time of the attempt the lease counts from (safe-until).
    steady_time sent{};
    /// finish with acquired: taken from a release's direct grant without a round trip.
    bool direct = false;
};

class AcquireLoop {
public:
    /// `rng` draws the backoff jitter; a test seeds its own.
    AcquireLoop(AcquirePlan plan, std::mt19937_64& rng);

    /// The acquisition starts at `now`; `others_wait`: threads of this client already wait for
    /// the lock; `subscribed`: its release channel's subscription stands (it lingers after the
    /// last waiter left). Both only asked when waiting is possible.
    AcquireStep start(steady_time now, bool others_wait, bool subscribed = false);
    /// After join_line: whether the subscription was confirmed and how many local waiters are
    /// ahead of this one. `successor_until`: this client holds the lock until at most then, and
    /// its release will name this waiter its successor (docs/DESIGN.md, "Successors"): a first
    /// join then waits for that grant without an attempt, and attempts if none came by then.
    AcquireStep joined(bool subscribed, std::size_t ahead, std::optional<steady_time> successor_until = std::nullopt);
    /// A release by this client named this waiter its successor: a grant may come, so giving up
    /// from now on sends leave_line, which gives a handed lease back.
    void named_successor() noexcept { may_be_in_line_ = true; }
    /// After attempt: its reply, whether the subscription stood when it was sent, the time it
    /// was sent, the time it came back and whether stop was requested.
    AcquireStep replied(const std::expected<AcquireReply, std::error_code>& reply, bool watched, steady_time sent,
                        steady_time now, bool stopped);
    /// After wait_for_release or sleep: whether a release woke this waiter, whether stop was
    /// requested, the direct grant a release announced for it (wait_for_release only), the
    /// time now and whether a promoted master's failover grace holds.
    AcquireStep waited(bool woken, bool stopped, const std::optional<DirectGrant>& grant = std::nullopt,
                       steady_time now = {}, bool in_grace = false);
    /// After extend: the renewal's reply, when it was sent, and the time now.
    AcquireStep extended(const std::expected<RenewReply, std::error_code>& reply, steady_time sent, steady_time now);
    /// After pass_on, leave_line or release.
    AcquireStep done();

    /// When the wait ends (start() sets it).
    steady_time deadline() const noexcept { return deadline_; }
    unsigned attempts() const noexcept { return attempts_; }
    /// Attempts Redis refused because another owner held the lock or a fair waiter came first,
    /// and attempts a promoted master's failover grace held back.
    unsigned contended_attempts() const noexcept { return contended_; }
    /// Attempts that failed with a transport or server error (retried or not), not counting
    /// the failover grace.
    unsigned failed_attempts() const noexcept { return failed_; }
    /// Direct grants that came to this waiter (trusted or confirmed).
    unsigned direct_grants() const noexcept { return grants_; }
    std::chrono::milliseconds holder_ttl() const noexcept { return holder_ttl_; }
    /// Whether the loop may join the local line at all.
    bool may_wait() const noexcept;

private:
    AcquireStep attempt();
    AcquireStep granted(const DirectGrant& g, steady_time now, bool stopped, bool in_grace);
    // A handed lease shorter than the plan's lease goes through an extend step first.
    AcquireStep finish_handed(AcquireStep finish);
    bool trusted(const DirectGrant& g, steady_time now, bool in_grace) const;
    AcquireStep join(steady_time now);
    void queue_wait();
    void queue_give_up();
    AcquireStep next_queued();

    enum class Phase { idle, first_join, first_wait, attempting, late_join, waiting, winding_up };

    AcquirePlan plan_;
    std::mt19937_64& rng_;
    Phase phase_ = Phase::idle;
    steady_time started_{};
    steady_time deadline_{};
    steady_time replied_at_{};  // when the last attempt came back: waits are counted from it
    unsigned attempts_ = 0;
    unsigned contended_ = 0;
    unsigned failed_ = 0;
    std::chrono::milliseconds holder_ttl_{0};
    std::error_code last_error_;
    bool in_line_ = false;         // joined the local line
    bool watched_ = false;         // the last attempt was sent while subscribed
    bool woken_ = false;           // the last wait ended by a release message
    bool maybe_granted_ = false;   // an attempt with unknown outcome may hold the lease
    bool may_be_in_line_ = false;  // a waiting attempt was refused: Redis may keep a place for us
    // The last refused attempt: the fence it saw and when it was sent (direct grants).
    bool refused_ = false;
    std::optional<FencingToken> refused_fence_;
    steady_time refused_sent_{};
    unsigned grants_ = 0;
    std::deque<AcquireStep> queued_;        // steps that follow a pass_on / leave_line / release
    std::optional<AcquireStep> extending_;  // the finish an extend step holds back
};

}  // namespace fencelock::detail

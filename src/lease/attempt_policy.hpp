#pragma once
// What one acquire attempt asks of Redis, and what it does with a grant found inside a
// promoted master's failover grace, decided once for LockClient and AsyncLockClient. No I/O:
// each client sends the script and gives a lease back itself; this says when and with what.
//
// The two clients differ in one thing only, how a waiter hears that the lock was released
// (ReleaseSource), and every difference in their attempts follows from it:
// - LockClient hears release messages on the lock's channel (ClientOptions::
//   release_notifications), from any client's release. Without them a waiter only polls, so
//   it takes no place among the sleepers and no direct grants; with them, an attempt made
//   while the subscription stands may take a grant from any release.
// - AsyncLockClient's loop subscribes to nothing: it hears its own releases, which name
//   their successor in its local line (their replies say so). Its waiters always take a
//   place, and take direct grants only from this client's releases.
// tests/unit/attempt_policy_test.cpp pins each difference and says why it exists.
#include <chrono>
#include <optional>
#include <system_error>

#include "fencelock/option_error.hpp"
#include "fencelock/options.hpp"
#include "fencelock/types.hpp"
#include "lease/acquire_loop.hpp"
#include "lease/capabilities.hpp"
#include "lease/replies.hpp"

namespace fencelock::detail {

/// How a client's waiters hear that the lock they wait for was released.
enum class ReleaseSource {
    /// None: waiters poll with backoff (LockClient with release_notifications off).
    polling,
    /// The lock's release channel, from any client's release (LockClient with
    /// release_notifications on).
    messages,
    /// Only this client's own releases, told by their replies (AsyncLockClient's loop).
    own_client,
};

/// The rules of one acquisition's attempts: fixed by its AcquireOptions, its client and what
/// its coordinator can do.
class AttemptPolicy {
public:
    AttemptPolicy(const AcquireOptions& options, ReleaseSource source, const CoordinatorCapabilities& coordinator)
        : options_(options), source_(source), coordinator_(coordinator) {}

    /// LockClient's source: release messages when ClientOptions::release_notifications is on
    /// and the coordinator has a release watch.
    static ReleaseSource sync_source(const ClientOptions& client, const CoordinatorCapabilities& coordinator) {
        return client.release_notifications && coordinator.release_watch ? ReleaseSource::messages
                                                                         : ReleaseSource::polling;
    }

    /// What `options` ask that the coordinator cannot do (a fair line), if anything: the
    /// acquisition fails at once as invalid, nothing sent, rather than run on other terms.
    static std::optional<OptionError> unsupported(const AcquireOptions& options,
                                                  const CoordinatorCapabilities& coordinator);

    /// Where a refused attempt waits in Redis (acquire.lua ARGV[5]). A single attempt waits
    /// nowhere; a sleeper's place is only of use to a waiter that hears releases.
    WaitPlace wait_place() const;

    /// Whether the acquisition opts in to direct grants (acquire.lua ARGV[8]): a waiter with a
    /// place in Redis's line and no replica acknowledgement asked (a confirmation's WAIT need
    /// not cover a grant the releaser's connection wrote), on a coordinator that makes them.
    /// From which releases is the attempt's choice (direct_mode).
    bool takes_direct_grants() const;

    /// One attempt's direct-grant mode. `in_line`: the waiter is in its client's local line;
    /// `watched`: its release channel's subscription stands now (only release messages are
    /// watched). In the line it takes grants from releases of its own client (told by the
    /// release's reply); watched, from any release (it hears the message). Such a grant's TTL
    /// may be shorter than the lease (the waiter's place bounds it): the acquire loop extends it.
    DirectGrants direct_mode(bool in_line, bool watched) const;

    /// What the attempt tells of its client's local line (acquire.lua ARGV[7]): a lease
    /// granted while `local_waiters` wait must have its release wake them.
    LocalLine local_line(bool local_waiters) const;

    /// The acquire loop's plan (lease/acquire_loop.hpp) for `owner` (`token_is_private`: the
    /// caller never saw it), with `client`'s command timeout and drift factor.
    AcquirePlan plan(const OwnerToken& owner, bool token_is_private, const ClientOptions& client) const;

    /// Whether `now` is inside a promoted master's failover grace (grants start at
    /// `grants_from`): nothing is granted, no direct grant trusted.
    static bool in_grace(steady_time now, steady_time grants_from) { return now < grants_from; }

    /// Why an attempt is not sent at all, if it is not: the client is closing (unavailable,
    /// retryable; the loop gives up with its usual steps) or the failover grace holds.
    static std::optional<std::error_code> refusal(bool closing, bool in_grace);

    /// Whether a reply's lease must be given back at once because it was granted inside the
    /// grace (checked again on the reply: the connection may have found the new master while
    /// sending). A lease this owner already held (reacquired) is no new grant: it is kept. One
    /// a release handed on is (it may have been issued on the promoted master during its
    /// grace): given back like a new one, before anyone was told of it.
    static bool gives_back(const AcquireReply& reply, bool in_grace) {
        return reply.acquired && !(reply.reacquired && !reply.handed) && in_grace;
    }

private:
    bool waits() const { return options_.wait > std::chrono::milliseconds::zero(); }

    AcquireOptions options_;
    ReleaseSource source_;
    CoordinatorCapabilities coordinator_;
};

}  // namespace fencelock::detail

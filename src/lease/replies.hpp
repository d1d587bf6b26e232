#pragma once
// What a coordinator answers, whatever the backend: an attempt's grant or refusal, a renewal,
// a release, and a direct grant handed to a waiter. The lease core decides on these values
// alone; each backend's codec (for Redis, src/coordinator/redis/calls/) produces them.
#include <chrono>
#include <optional>
#include <string>
#include <system_error>

#include "fencelock/outcomes.hpp"
#include "fencelock/types.hpp"

namespace fencelock::detail {

/// Where a refused attempt leaves its owner waiting (see acquire.lua): nowhere (a single
/// attempt), in the fair line, or among the sleepers that releases wake one at a time.
enum class WaitPlace { none, fair_line, sleepers };

/// Whether threads of the caller's client wait for the lock in its local line (the caller
/// included). They sleep on the next release message without a place in Redis's line, so a
/// lease granted meanwhile must have its release send that message (acquire.lua ARGV[7]).
enum class LocalLine { empty, waiting };

struct AcquireReply {
    bool acquired = false;
    FencingToken fence{0};
    /// acquired: the lease's TTL; contended: the holder's remaining TTL.
    std::chrono::milliseconds ttl{0};
    /// Already held by this owner token (acquire.lua's "already ours").
    bool reacquired = false;
    /// reacquired, and the lease was handed to this owner by a release or leave_line (a
    /// direct grant, `handed 1`): a new grant for the caller, not a retry's lease.
    bool handed = false;
    /// Not granted although free: an earlier fair waiter's turn (ttl: until its place lapses).
    bool queued = false;
    /// Not granted: the newest fence issued when the script ran (the holder's, or the counter
    /// when queued); nullopt from a script that did not say. A direct grant with a larger fence
    /// was issued after this attempt was processed (lib/handoff.lua).
    std::optional<FencingToken> seen_fence{};
    /// Granted with a fence from the counter term while the counter ran this far ahead of the
    /// server's clock (lib/fence.lua, clock_lead): the server's clock is behind the history of
    /// its fences, so a failover that lost writes may issue fences below lost ones.
    std::optional<std::chrono::microseconds> clock_behind{};
    /// Granted, but the replica acknowledgement asked for did not come: not_replicated, or
    /// WAIT's own error (see replica_ack.hpp). The grant must be released, never used.
    std::error_code unreplicated{};
};

/// Whether a refused attempt leaves grant arguments with its place, so that a release may grant
/// it the lease directly (acquire.lua ARGV[8]): from any release (`taken`: only a waiter that
/// hears the release messages), only from a release by its own client (`own_client`: told by
/// that release's reply), or never.
enum class DirectGrants { refused, taken, own_client };

/// A release's direct grant to one waiter: the fence it issued and the TTL it set.
struct DirectGrant {
    FencingToken fence{0};
    std::chrono::milliseconds ttl{0};
    /// Told by the reply of this client's own release, sent at that time: the script's own
    /// result, so fresh by construction (its TTL began after this), unlike a message.
    std::optional<std::chrono::steady_clock::time_point> release_sent{};
};

struct GrantMessage {
    std::string owner;
    DirectGrant grant;
};

struct RenewReply {
    RenewStatus status = RenewStatus::not_owner;
    std::optional<FencingToken> fence;
    std::chrono::milliseconds ttl{0};
    /// The server's TIME when the script ran (renewed and not-owner replies), in ms since the
    /// epoch: the keeper's clock watch reads it (server_clock_watch.hpp).
    std::optional<std::chrono::milliseconds> server_time;
};

/// What a release did: released or not, and the direct grant it made to the next waiter, if
/// any (for the releasing client to hand to its own waiter, lib/handoff.lua).
struct ReleaseReply {
    ReleaseStatus status = ReleaseStatus::not_owner;
    std::optional<GrantMessage> granted{};
};

}  // namespace fencelock::detail

#pragma once
// acquire.lua: its arguments and its reply. KEYS, ARGV and the reply shapes are documented at
// the head of src/lock/scripts/acquire.lua.
#include <chrono>
#include <expected>
#include <optional>
#include <string>
#include <system_error>

#include "fencelock/options.hpp"
#include "fencelock/types.hpp"
#include "lock/calls/lease_meta.hpp"
#include "lock/replica_ack.hpp"
#include "redis/connection.hpp"
#include "redis/reply.hpp"
#include "redis/script_runner.hpp"

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

/// Replies {1, fence, pttl, 0|1} (granted, 1: already ours), {0, pttl, 0, fence} (held) or
/// {0, ms, 1, fence} (an earlier fair waiter's turn); the shapes without the fence ({0, pttl},
/// {0, ms, 1}, {0, pttl, 0}) decode with seen_fence unset.
std::expected<AcquireReply, std::error_code> decode_acquire(const Reply& reply);

/// How long a fair waiter's place in the line lasts without a new attempt.
std::chrono::milliseconds waiter_slot(const AcquireOptions& options);

/// acquire.lua's KEYS and ARGV for one attempt.
OwnedScriptCall acquire_script_call(std::string_view prefix, const ResourceName& resource, const OwnerToken& owner,
                                    const AcquireOptions& options, const HolderMeta& holder, WaitPlace place,
                                    LocalLine local_line, DirectGrants direct);

/// The attempt's reply from the batch that carried it, with `ack`'s WAIT after it when on: a
/// grant WAIT does not confirm comes back with `unreplicated` set.
std::expected<AcquireReply, std::error_code> decode_acquire_batch(const BatchThen& batch, const ReplicaAck& ack);

/// One attempt on `c`: encodes the arguments, runs the script, decodes the reply. With
/// options.replicas, WAIT follows the script in the same write and a grant it does not
/// confirm comes back with `unreplicated` set.
std::expected<AcquireReply, std::error_code> acquire_once(Connection& c, std::string_view prefix,
                                                          const ResourceName& resource, const OwnerToken& owner,
                                                          const AcquireOptions& options, const HolderMeta& holder,
                                                          WaitPlace place, LocalLine local_line,
                                                          DirectGrants direct = DirectGrants::refused);

}  // namespace fencelock::detail

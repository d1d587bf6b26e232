#pragma once
// acquire.lua: its arguments and its reply. KEYS, ARGV and the reply shapes are documented at
// the head of src/coordinator/redis/scripts/acquire.lua.
#include <chrono>
#include <expected>
#include <optional>
#include <string>
#include <system_error>

#include "coordinator/redis/calls/lease_meta.hpp"
#include "coordinator/redis/replica_ack.hpp"
#include "fencelock/options.hpp"
#include "fencelock/types.hpp"
#include "lease/replies.hpp"
#include "redis/connection.hpp"
#include "redis/reply.hpp"
#include "redis/script_runner.hpp"

namespace fencelock::detail {

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

#pragma once
// renew.lua: its arguments and its reply (shapes at the head of src/coordinator/redis/scripts/renew.lua).
// The one encoding serves both a single renew and the keeper's pipelined batches.
#include <chrono>
#include <expected>
#include <optional>
#include <span>
#include <string_view>
#include <system_error>

#include "coordinator/redis/replica_ack.hpp"
#include "fencelock/outcomes.hpp"
#include "fencelock/types.hpp"
#include "lease/replies.hpp"
#include "redis/connection.hpp"
#include "redis/reply.hpp"
#include "redis/script_runner.hpp"

namespace fencelock::detail {

/// Per-call results of a batch of renewals, or the transport error that failed all of it.
using RenewBatchResults = std::expected<std::vector<std::expected<Reply, std::error_code>>, std::error_code>;

/// One renewal's KEYS and ARGV. The views point into `lock_key`, `owner` and `lease_ms`,
/// which the caller keeps alive until the call is sent; `lease_ms` is the new lease length in
/// decimal milliseconds (see lease_argument).
ScriptCall renew_call(std::string_view lock_key, const OwnerToken& owner, std::string_view lease_ms);
std::string lease_argument(std::chrono::milliseconds lease);

/// renew.lua's KEYS and ARGV for one renewal of `resource`'s lease.
OwnedScriptCall renew_script_call(std::string_view prefix, const ResourceName& resource, const OwnerToken& owner,
                                  std::chrono::milliseconds lease);

/// Replies {1, fence, ttl, now_ms} (renewed), {0, now_ms} (not owner) or {2, fence} (max hold
/// exceeded). now_ms may be missing (a script of an earlier version: same shapes without it).
std::expected<RenewReply, std::error_code> decode_renew(const Reply& reply);

/// Sends the calls in one pipelined round trip.
RenewBatchResults renew_batch(Connection& c, std::span<const ScriptCall> calls);

/// A keeper batch's replies and WAIT's answer (0 when no acknowledgement was asked).
struct AcknowledgedBatch {
    RenewBatchResults results;
    std::expected<unsigned, std::error_code> acknowledged{0};
};
/// renew_batch, followed in the same write by one WAIT for `ack` when ack.on().
AcknowledgedBatch renew_batch(Connection& c, std::span<const ScriptCall> calls, ReplicaAck ack);
/// The decoded reply to call `i` of a batch, or the error that failed it.
std::expected<RenewReply, std::error_code> decode_renew_result(const RenewBatchResults& results, std::size_t i);

/// One renewal on `c` (a batch of one).
std::expected<RenewReply, std::error_code> renew_once(Connection& c, std::string_view prefix,
                                                      const ResourceName& resource, const OwnerToken& owner,
                                                      std::chrono::milliseconds lease);

}  // namespace fencelock::detail

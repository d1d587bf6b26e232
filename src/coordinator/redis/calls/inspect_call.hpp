#pragma once
// inspect.lua: its arguments and its reply (shape at the head of src/coordinator/redis/scripts/inspect.lua).
#include <expected>
#include <span>
#include <string_view>
#include <system_error>

#include "fencelock/lock_state.hpp"
#include "redis/connection.hpp"
#include "redis/reply.hpp"
#include "redis/script_runner.hpp"

namespace fencelock::detail {

/// Reply {last_fence, now_ms, pttl, field, value, ...}: the lease hash's fields turned into
/// ages against Redis's own clock.
std::expected<LockInfo, std::error_code> decode_inspect(const Reply& reply);

/// One inspection's KEYS (views into the caller's strings), for a batch.
ScriptCall inspect_call(std::string_view lock_key, std::string_view fence_key);
/// Sends the calls in one pipelined round trip; decode each reply with decode_inspect.
std::expected<std::vector<std::expected<Reply, std::error_code>>, std::error_code> inspect_batch(
    Connection& c, std::span<const ScriptCall> calls);

std::expected<LockInfo, std::error_code> inspect_once(Connection& c, std::string_view prefix,
                                                      const ResourceName& resource);

}  // namespace fencelock::detail

#pragma once
// force_release.lua: its arguments and its reply (shapes at the head of
// src/coordinator/redis/scripts/force_release.lua).
#include <expected>
#include <string_view>
#include <system_error>

#include "fencelock/admin_records.hpp"
#include "redis/connection.hpp"
#include "redis/reply.hpp"

namespace fencelock::detail {

/// Replies {1, owner, fence, since_renew_ms, audit_id} (released), {0} (not held),
/// {2, owner} (another owner than expected) or {3, owner, fence, since_renew_ms, lease_ms}
/// (refused: still active).
std::expected<ForceReleaseOutcome, std::error_code> decode_force_release(const Reply& reply);

/// Deletes the lock and appends the audit entry to the resource's audit stream, in one script.
std::expected<ForceReleaseOutcome, std::error_code> force_release_once(Connection& c, std::string_view prefix,
                                                                       const ResourceName& resource,
                                                                       const ForceReleaseRequest& request);

}  // namespace fencelock::detail

#pragma once
// release.lua: its arguments and its reply (shapes at the head of src/lock/scripts/release.lua).
#include <expected>
#include <string_view>
#include <system_error>

#include "fencelock/outcomes.hpp"
#include "fencelock/types.hpp"
#include "redis/connection.hpp"
#include "redis/reply.hpp"
#include "redis/script_runner.hpp"

namespace fencelock::detail {

/// Replies 1 (released) or 0 (not owner).
std::expected<ReleaseStatus, std::error_code> decode_release(const Reply& reply);

/// release.lua's KEYS and ARGV.
OwnedScriptCall release_script_call(std::string_view prefix, const ResourceName& resource, const OwnerToken& owner);

/// Compare-and-delete on `c`, waking the next waiter.
std::expected<ReleaseStatus, std::error_code> release_once(Connection& c, std::string_view prefix,
                                                           const ResourceName& resource, const OwnerToken& owner);

}  // namespace fencelock::detail

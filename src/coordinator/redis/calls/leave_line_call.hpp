#pragma once
// leave_line.lua: its arguments and its reply (shapes at the head of
// src/coordinator/redis/scripts/leave_line.lua).
#include <expected>
#include <string_view>
#include <system_error>

#include "fencelock/types.hpp"
#include "redis/connection.hpp"
#include "redis/reply.hpp"
#include "redis/script_runner.hpp"

namespace fencelock::detail {

/// Replies 1 (the place was given up) or 0 (the owner had none).
std::expected<bool, std::error_code> decode_leave_line(const Reply& reply);

/// leave_line.lua's KEYS and ARGV.
OwnedScriptCall leave_line_script_call(std::string_view prefix, const ResourceName& resource, const OwnerToken& owner);

/// Gives up a waiter's place (fair line or sleepers): true, or false when it had none.
std::expected<bool, std::error_code> leave_line_once(Connection& c, std::string_view prefix,
                                                     const ResourceName& resource, const OwnerToken& owner);

}  // namespace fencelock::detail

#pragma once
// The direct-grant message a release publishes on released:{R} (lib/handoff.lua):
// "grant <owner> <fence> <ttl ms>". Owner tokens hold no spaces (OwnerToken::make), so a client
// that only knows wake-up messages, which name an owner token or no one, wakes nobody on it.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "fencelock/types.hpp"
#include "lease/replies.hpp"

namespace fencelock::detail {

/// Whether a release message announces a direct grant (well formed or not).
bool is_grant_message(std::string_view payload);

/// The grant a message announces; nullopt when it is no grant message or is malformed (a
/// malformed one wakes nobody: the waiter's own timer covers it).
std::optional<GrantMessage> decode_grant_message(std::string_view payload);

}  // namespace fencelock::detail

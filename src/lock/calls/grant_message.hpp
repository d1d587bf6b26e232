#pragma once
// The direct-grant message a release publishes on released:{R} (lib/handoff.lua):
// "grant <owner> <fence> <ttl ms>". Owner tokens hold no spaces (OwnerToken::make), so a client
// that only knows wake-up messages, which name an owner token or no one, wakes nobody on it.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "fencelock/types.hpp"

namespace fencelock::detail {

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

/// Whether a release message announces a direct grant (well formed or not).
bool is_grant_message(std::string_view payload);

/// The grant a message announces; nullopt when it is no grant message or is malformed (a
/// malformed one wakes nobody: the waiter's own timer covers it).
std::optional<GrantMessage> decode_grant_message(std::string_view payload);

}  // namespace fencelock::detail

#pragma once
// release.lua: its arguments and its reply (shapes at the head of src/coordinator/redis/scripts/release.lua).
#include <chrono>
#include <expected>
#include <optional>
#include <string_view>
#include <system_error>

#include "coordinator/redis/calls/grant_message.hpp"
#include "coordinator/redis/calls/lease_meta.hpp"
#include "fencelock/outcomes.hpp"
#include "fencelock/types.hpp"
#include "lease/replies.hpp"
#include "redis/connection.hpp"
#include "redis/reply.hpp"
#include "redis/script_runner.hpp"

namespace fencelock::detail {

/// Replies 1 (released), {1, owner, fence, ttl} (released and granted to `owner`), 0 (not
/// owner) or -1 (not held).
std::expected<ReleaseReply, std::error_code> decode_release_reply(const Reply& reply);
/// The same, the status alone.
std::expected<ReleaseStatus, std::error_code> decode_release(const Reply& reply);

/// The releasing client's next waiter for the lock, vouched for as waiting now: granted the
/// lock by the release when no live place comes first, the whole lease when its own place is
/// the first (release.lua ARGV[4..7]).
struct Successor {
    std::string_view owner;
    std::chrono::milliseconds lease{0};
    std::chrono::milliseconds max_hold{0};
};

/// release.lua's KEYS and ARGV, the one encoding both clients use. `client` (may be null, or
/// have no id): the releasing client, so that its own waiter is granted the lock (bounded by its place) and told
/// by the reply; `successor` (needs the client): that waiter, named, holding under `client`'s
/// holder text.
OwnedScriptCall release_script_call(std::string_view prefix, const ResourceName& resource, const OwnerToken& owner,
                                    const HolderMeta* client = nullptr, const Successor* successor = nullptr);

/// Compare-and-delete on `c`, serving the next waiter.
std::expected<ReleaseReply, std::error_code> release_for_client(Connection& c, std::string_view prefix,
                                                                const ResourceName& resource, const OwnerToken& owner,
                                                                const HolderMeta* client,
                                                                const Successor* successor = nullptr);
/// The same for a caller without a client id: no grant is ever reported to it.
std::expected<ReleaseStatus, std::error_code> release_once(Connection& c, std::string_view prefix,
                                                           const ResourceName& resource, const OwnerToken& owner);

}  // namespace fencelock::detail

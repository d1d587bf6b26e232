#pragma once
// Pure protocol decisions: turning script replies into outcomes, and the local safe-until
// deadline. No I/O; unit-tested with constructed replies and clock readings.
#include <chrono>
#include <expected>
#include <optional>
#include <system_error>

#include "fencelock/client.hpp"
#include "redis/reply.hpp"

namespace fencelock::detail {

struct AcquireReply {
    bool acquired = false;
    FencingToken fence{0};
    /// acquired: the lease's TTL; contended: the holder's remaining TTL.
    std::chrono::milliseconds ttl{0};
    bool reacquired = false;
    /// Not granted although free: an earlier fair waiter's turn (ttl: until its place lapses).
    bool queued = false;
};

struct RenewReply {
    RenewStatus status = RenewStatus::not_owner;
    std::optional<FencingToken> fence;
    std::chrono::milliseconds ttl{0};
};

/// A fence in a script reply: a decimal string (exact up to 2^63 - 1) or, from scripts of
/// earlier versions, an integer. nullopt when it is neither or negative.
std::optional<FencingToken> parse_fence(const Reply& reply);

std::expected<AcquireReply, std::error_code> decode_acquire(const Reply& reply);
std::expected<RenewReply, std::error_code> decode_renew(const Reply& reply);
std::expected<ReleaseStatus, std::error_code> decode_release(const Reply& reply);
std::expected<LockInfo, std::error_code> decode_inspect(const Reply& reply);

/// The latest moment a holder may still rely on a lease of `ttl` granted by a request sent at
/// `sent`. Redis started the TTL no earlier than it received the request, so counting from
/// the send time is conservative; the drift factor covers clock-rate differences.
steady_time safe_until(steady_time sent, std::chrono::milliseconds ttl, double drift_factor);

}  // namespace fencelock::detail

#pragma once
/// Outcomes of the protocol that are answers, not errors: one enum per outcome, used by the
/// calls' results and the observer's events alike (an event's error is its error code).

#include <string_view>

namespace fencelock {

enum class RenewStatus {
    renewed,
    /// The lock is gone (expired, released) or held by another owner.
    not_owner,
    /// Redis refused: acquisition time + max_hold has passed. The lease runs out on its own.
    max_hold_exceeded,
};

enum class ReleaseStatus {
    released,
    /// Nothing deleted: another owner holds the lock now (this lease expired, or was
    /// force-released, and someone took the lock since).
    not_owner,
    /// Nothing deleted: nobody holds the lock (this lease expired, or was released or
    /// force-released, and nobody has taken the lock since).
    not_held,
};

/// Why a kept lease was lost (HeldLease::loss(), LeaseLoss, LossEvent).
enum class LossReason {
    /// A renewal found the lock gone or held by another owner.
    not_owner,
    /// Redis refused to renew past acquisition + max_hold.
    max_hold_exceeded,
    /// safe_until passed without a confirmed renewal (Redis unreachable, replies lost, or this
    /// process was paused or starved for longer than the lease).
    expired,
    /// The Redis server's wall clock stepped forward (Redis expires keys by it): every lease on
    /// that server may have ended early. Declared at once, within about a second of the step
    /// (the keeper probes TIME), without waiting for the next renewal to find another owner.
    clock_step,
};

/// "renewed", "not_owner", "max_hold_exceeded".
std::string_view to_string(RenewStatus s) noexcept;
/// "released", "not_owner", "not_held".
std::string_view to_string(ReleaseStatus s) noexcept;
/// "not_owner", "max_hold_exceeded", "expired": also the lease-lost metric's label values.
std::string_view to_string(LossReason reason) noexcept;

}  // namespace fencelock

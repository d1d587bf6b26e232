#pragma once
/// Hooks the library calls on lock events, so metrics and logs can be attached without the
/// core depending on any metrics library. Set ClientOptions::observer; with none set, the
/// library pays one pointer check per event.
///
/// Calls come from the calling thread (acquire, renew, release) or the keeper thread (kept
/// renewals, losses). Implementations must be thread-safe, fast, and must not throw.

#include <chrono>
#include <cstdint>
#include <expected>
#include <optional>
#include <string_view>
#include <system_error>

#include "fencelock/outcomes.hpp"
#include "fencelock/types.hpp"

namespace fencelock {

/// An acquisition's events distinguish more than Acquisition does: one attempt refused
/// (contended) from a wait that ran out (timeout).
enum class AcquireResult { acquired, contended, timeout, error };

std::string_view to_string(AcquireResult r) noexcept;

/// The `result` label and log value of a renewal: "renewed", "not_owner", "max_hold" (for
/// RenewStatus::max_hold_exceeded: the label value dashboards and alerts have always used)
/// or "error".
std::string_view result_label(const std::expected<RenewStatus, std::error_code>& result) noexcept;
/// The `result` label and log value of a release: "released", "not_owner", "not_held" or "error".
std::string_view result_label(const std::expected<ReleaseStatus, std::error_code>& result) noexcept;

struct AcquireEvent {
    const ResourceName& resource;
    const OwnerToken& owner;
    /// contended: one attempt found the lock held; timeout: acquire() waited and gave up.
    AcquireResult result;
    std::optional<FencingToken> fence;
    unsigned attempts;
    /// From the first attempt to the outcome.
    std::chrono::microseconds waited;
    /// The lease asked for (AcquireOptions::lease). A kept lease a release granted directly
    /// may start with a shorter TTL, which its keeper extends to this at once.
    std::chrono::milliseconds lease;
    std::error_code error;
    /// Attempts that found the lock held (or a fair waiter first), whatever the outcome: an
    /// acquisition that waited and then got the lock was contended too.
    unsigned contended_attempts = 0;
    /// Attempts that failed with a Redis error, the retried ones included (`error` is the last).
    unsigned failed_attempts = 0;
    /// Grants a release announced to this acquisition directly (docs/DESIGN.md, "Direct
    /// handoff"), trusted or confirmed; 0 for a plain acquire(), which never opts in.
    unsigned direct_grants = 0;
    /// acquired, and the Redis server's clock was behind the fence counter by this much (more
    /// than a burst of fences could explain): fences may go backwards across a failover that
    /// loses writes (docs/DESIGN.md, "Clock skew"). The metric fencelock_clock_behind_total.
    std::optional<std::chrono::microseconds> clock_behind{};
};

struct RenewEvent {
    const ResourceName& resource;
    const OwnerToken& owner;
    /// Redis's answer, or the error that left the renewal's outcome unknown.
    std::expected<RenewStatus, std::error_code> result;
    std::optional<FencingToken> fence;
    std::chrono::milliseconds lease;
    /// True for renewals sent by the keeper for a held lease.
    bool kept;
};

struct ReleaseEvent {
    const ResourceName& resource;
    const OwnerToken& owner;
    /// Redis's answer, or the error that left the release's outcome unknown.
    std::expected<ReleaseStatus, std::error_code> result;
    /// Known for held leases (acquisition to release).
    std::optional<std::chrono::microseconds> held_for;
};

struct LossEvent {
    const ResourceName& resource;
    const OwnerToken& owner;
    FencingToken fence;
    LossReason reason;
    std::chrono::microseconds held_for;
};

class LockObserver {
public:
    virtual ~LockObserver() = default;
    virtual void on_acquire(const AcquireEvent&) noexcept {}
    virtual void on_renew(const RenewEvent&) noexcept {}
    virtual void on_release(const ReleaseEvent&) noexcept {}
    virtual void on_lease_lost(const LossEvent&) noexcept {}
};

}  // namespace fencelock

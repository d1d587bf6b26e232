#pragma once
/// Hooks the library calls on lock events, so metrics and logs can be attached without the
/// core depending on any metrics library. Set ClientOptions::observer; with none set, the
/// library pays one pointer check per event.
///
/// Calls come from the calling thread (acquire, renew, release) or the keeper thread (kept
/// renewals, losses). Implementations must be thread-safe, fast, and must not throw.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>

#include "fencelock/types.hpp"

namespace fencelock {

enum class AcquireResult { acquired, contended, timeout, error };
enum class RenewResult { renewed, not_owner, max_hold, error };
enum class ReleaseResult { released, not_owner, error };

std::string_view to_string(AcquireResult r) noexcept;
std::string_view to_string(RenewResult r) noexcept;
std::string_view to_string(ReleaseResult r) noexcept;

struct AcquireEvent {
    const ResourceName& resource;
    const OwnerToken& owner;
    /// contended: one attempt found the lock held; timeout: acquire() waited and gave up.
    AcquireResult result;
    std::optional<FencingToken> fence;
    unsigned attempts;
    /// From the first attempt to the outcome.
    std::chrono::microseconds waited;
    std::chrono::milliseconds lease;
    std::error_code error;
};

struct RenewEvent {
    const ResourceName& resource;
    const OwnerToken& owner;
    RenewResult result;
    std::optional<FencingToken> fence;
    std::chrono::milliseconds lease;
    /// True for renewals sent by the keeper for a held lease.
    bool kept;
    std::error_code error;
};

struct ReleaseEvent {
    const ResourceName& resource;
    const OwnerToken& owner;
    ReleaseResult result;
    /// Known for held leases (acquisition to release).
    std::optional<std::chrono::microseconds> held_for;
    std::error_code error;
};

struct LossEvent {
    const ResourceName& resource;
    const OwnerToken& owner;
    FencingToken fence;
    /// "not_owner", "max_hold_exceeded" or "expired" (see LossReason).
    std::string_view reason;
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

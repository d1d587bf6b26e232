#pragma once
/// Negative outcomes of the protocol that are answers, not errors.

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
    /// Nothing deleted: the lease expired or another owner holds the lock now.
    not_owner,
};

std::string_view to_string(RenewStatus s) noexcept;
std::string_view to_string(ReleaseStatus s) noexcept;

}  // namespace fencelock

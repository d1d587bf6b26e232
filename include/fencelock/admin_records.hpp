#pragma once
/// The records of LockAdmin's operator calls: a held lock as listed, a force-release request and
/// its outcome, and an audit-log entry.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>

#include "fencelock/lock_state.hpp"
#include "fencelock/types.hpp"

namespace fencelock {

/// A held lock found by LockAdmin::list_locks().
struct HeldLock {
    ResourceName resource;
    /// Empty when `unreadable` is set.
    HolderState holder;
    /// The lock exists but its record could not be read (corrupt_key: damaged fields): listed
    /// so that an operator sees it, and can force-release it, instead of its being left out.
    std::error_code unreadable{};
};

/// What an operator asks of force_release().
struct ForceReleaseRequest {
    /// Why; recorded in the audit entry. Must not be empty.
    std::string reason;
    /// Who; recorded in the audit entry (e.g. user@host). Must not be empty.
    std::string operator_name;
    /// Only delete if this owner still holds the lock. Default: any owner.
    std::optional<OwnerToken> expected_owner{};
    /// Delete even if the lease was renewed within its last lease period (its holder is
    /// probably alive). Default false: refuse.
    bool even_if_active = false;
};

enum class ForceReleaseStatus {
    released,        ///< deleted and audited
    not_held,        ///< nothing to delete; nothing audited
    owner_mismatch,  ///< held by another owner than expected_owner; nothing changed
    active,          ///< refused: renewed within the last lease period; nothing changed
};

struct ForceReleaseOutcome {
    ForceReleaseStatus status = ForceReleaseStatus::not_held;
    /// The holder found (all but not_held).
    std::string owner;
    /// released and active: the holder's fence, its time since the last renewal.
    FencingToken fence{0};
    milliseconds since_renew{0};
    /// The lease length (active only).
    milliseconds lease{0};
    /// active: the lease was renewed at least once; if not, since_renew counts from its
    /// acquisition.
    bool renewed = false;
    /// The audit stream entry id (released only).
    std::string audit_id;
};

/// One audited manual intervention, from the audit stream.
struct AuditEntry {
    std::string id;
    std::string resource;
    std::string owner;
    FencingToken fence{0};
    std::string reason;
    std::string operator_name;
    std::int64_t time_ms = 0;  ///< Redis TIME (Unix ms) of the deletion
    milliseconds since_renew{0};
    bool forced_active = false;
};

}  // namespace fencelock

#pragma once
/// LockAdmin: the operators' calls on locks (list what is held, force-release a stuck lock with
/// an audit entry, read the audit log), apart from LockClient's protocol calls, which are for
/// the code that takes and holds leases.
///
/// Built from a LockClient: it shares that client's connections, key prefix and timeouts, and
/// keeps them alive on its own, so it may outlive the client it came from.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fencelock/client.hpp"

namespace fencelock {

namespace detail {
class ConnectionPool;
}  // namespace detail

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

std::string_view to_string(ForceReleaseStatus s) noexcept;

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

/// Thread-safe, like the LockClient it shares connections with. Every call is bounded by the
/// client's connect and command timeouts; when Redis cannot be reached or fails, it returns
/// the error.
class LockAdmin {
public:
    /// Shares `client`'s connections and key prefix.
    explicit LockAdmin(const LockClient& client);

    /// Every lock currently held whose resource name matches `glob` (Redis glob syntax, `*`
    /// for all), at most `limit`. Scans with SCAN, never KEYS.
    Result<std::vector<HeldLock>> list_locks(std::string_view glob, std::size_t limit);
    /// The last resort for a stuck lock: deletes it and appends an audit entry, atomically,
    /// unless the lease was renewed within its last lease period (see even_if_active). The fence
    /// counter is untouched. Throws std::invalid_argument for an empty reason or operator.
    Result<ForceReleaseOutcome> force_release(const ResourceName& resource, const ForceReleaseRequest& request);
    /// Audit entries, newest first, optionally for one resource, at most `limit`.
    Result<std::vector<AuditEntry>> audit_log(const std::optional<ResourceName>& resource, std::size_t limit);

private:
    std::shared_ptr<detail::ConnectionPool> pool_;
    std::string prefix_;
};

}  // namespace fencelock

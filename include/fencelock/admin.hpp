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

#include "fencelock/admin_records.hpp"
#include "fencelock/client.hpp"

namespace fencelock {

namespace detail {
class Coordinator;
}  // namespace detail

std::string_view to_string(ForceReleaseStatus s) noexcept;

/// Thread-safe, like the LockClient it shares connections with. Every call is bounded by the
/// client's connect and command timeouts; when Redis cannot be reached or fails, it returns
/// the error.
class LockAdmin {
public:
    /// Shares `client`'s connections and key prefix (its coordinator).
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
    std::shared_ptr<detail::Coordinator> coordinator_;
};

}  // namespace fencelock

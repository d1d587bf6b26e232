// LockAdmin: the operators' calls, carried out by the client's coordinator.
#include "fencelock/admin.hpp"

#include <stdexcept>

#include "coordinator/coordinator.hpp"
#include "lock/client_gate.hpp"

namespace fencelock {

std::string_view to_string(ForceReleaseStatus s) noexcept {
    switch (s) {
        case ForceReleaseStatus::released: return "released";
        case ForceReleaseStatus::not_held: return "not_held";
        case ForceReleaseStatus::owner_mismatch: return "owner_mismatch";
        case ForceReleaseStatus::active: return "active";
    }
    return "unknown";
}

LockAdmin::LockAdmin(const LockClient& client) : coordinator_(detail::ClientGate::coordinator(client)) {}

Result<std::vector<HeldLock>> LockAdmin::list_locks(std::string_view glob, std::size_t limit) {
    return coordinator_->list_locks(glob, limit);
}

Result<ForceReleaseOutcome> LockAdmin::force_release(const ResourceName& resource, const ForceReleaseRequest& request) {
    if (request.reason.empty()) throw std::invalid_argument("force_release: reason must not be empty");
    if (request.operator_name.empty()) throw std::invalid_argument("force_release: operator must not be empty");
    return coordinator_->force_release(resource, request);
}

Result<std::vector<AuditEntry>> LockAdmin::audit_log(const std::optional<ResourceName>& resource, std::size_t limit) {
    return coordinator_->audit_log(resource, limit);
}

}  // namespace fencelock

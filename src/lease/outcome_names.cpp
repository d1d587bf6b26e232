// The names of outcomes, as CLI output, log values and metric labels spell them.
#include "fencelock/observer.hpp"
#include "fencelock/outcomes.hpp"

namespace fencelock {

std::string_view to_string(RenewStatus s) noexcept {
    switch (s) {
        case RenewStatus::renewed: return "renewed";
        case RenewStatus::not_owner: return "not_owner";
        case RenewStatus::max_hold_exceeded: return "max_hold_exceeded";
    }
    return "unknown";
}

std::string_view to_string(ReleaseStatus s) noexcept {
    switch (s) {
        case ReleaseStatus::released: return "released";
        case ReleaseStatus::not_owner: return "not_owner";
        case ReleaseStatus::not_held: return "not_held";
    }
    return "unknown";
}

std::string_view to_string(AcquireResult r) noexcept {
    switch (r) {
        case AcquireResult::acquired: return "acquired";
        case AcquireResult::contended: return "contended";
        case AcquireResult::timeout: return "timeout";
        case AcquireResult::error: return "error";
    }
    return "error";
}

std::string_view result_label(const std::expected<RenewStatus, std::error_code>& result) noexcept {
    if (!result) return "error";
    // The label predates the enum's name; renaming it would break dashboards and alerts.
    if (*result == RenewStatus::max_hold_exceeded) return "max_hold";
    return to_string(*result);
}

std::string_view result_label(const std::expected<ReleaseStatus, std::error_code>& result) noexcept {
    return result ? to_string(*result) : "error";
}

}  // namespace fencelock

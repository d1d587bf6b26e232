#include "lease/renewal.hpp"

#include <algorithm>

#include "lease/safe_until.hpp"

namespace fencelock::detail {

LeaseTimes after_confirmation(steady_time sent, std::chrono::milliseconds ttl, const RenewalPolicy& policy) {
    return {safe_until(sent, ttl, policy.drift_factor), sent + policy.interval};
}

steady_time retry_at(steady_time now, steady_time safe_until, const RenewalPolicy& policy) {
    if (now >= safe_until) return now;
    // Half the remaining window at most, so a second retry still fits before the deadline; at
    // least a millisecond, so a failing lease reaches its deadline in a bounded number of tries.
    const steady_time::duration half = (safe_until - now) / 2;
    return now + std::min<steady_time::duration>(policy.retry_delay,
                                                 std::max<steady_time::duration>(half, std::chrono::milliseconds(1)));
}

std::chrono::milliseconds renewal_early_allowance(RenewalKind kind, std::chrono::milliseconds interval) {
    return kind == RenewalKind::retry ? std::chrono::milliseconds(0) : interval / 4;
}

bool renewal_due(steady_time now, steady_time next_renewal, std::chrono::milliseconds interval, RenewalKind kind) {
    return next_renewal - renewal_early_allowance(kind, interval) <= now;
}

std::chrono::milliseconds default_renew_interval(std::chrono::milliseconds lease) {
    return std::max(lease / 3, std::chrono::milliseconds(1));
}

}  // namespace fencelock::detail

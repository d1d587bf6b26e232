#include "common/backoff_delays.hpp"

#include <algorithm>

#include "common/option_check.hpp"

namespace fencelock::detail {

std::chrono::milliseconds backoff_ceiling(const BackoffPolicy& policy, unsigned attempt) noexcept {
    // Double until the cap instead of computing 2^attempt, which overflows past 63; stop
    // before a doubling could overflow even when max is near the representable limit.
    std::chrono::milliseconds ceiling = policy.base;
    for (unsigned i = 0; i < attempt && ceiling < policy.max; ++i) {
        if (ceiling > policy.max / 2) return policy.max;
        ceiling *= 2;
    }
    return ceiling < policy.max ? ceiling : policy.max;
}

std::chrono::milliseconds full_jitter(const BackoffPolicy& policy, unsigned attempt, std::mt19937_64& rng) noexcept {
    std::uniform_int_distribution<std::chrono::milliseconds::rep> pick(0, backoff_ceiling(policy, attempt).count());
    return std::chrono::milliseconds(pick(rng));
}

}  // namespace fencelock::detail

namespace fencelock::detail {

std::chrono::milliseconds calm_delay(const BackoffPolicy& policy, std::chrono::milliseconds holder_ttl,
                                     std::mt19937_64& rng) noexcept {
    using rep = std::chrono::milliseconds::rep;
    const rep ttl = std::clamp<rep>(holder_ttl.count(), 0, policy.max.count());
    // Jitter only up to the room left below max: the sum then never exceeds max (nor overflows).
    std::uniform_int_distribution<rep> jitter(0, std::min(policy.base.count(), policy.max.count() - ttl));
    return std::chrono::milliseconds(ttl + jitter(rng));
}

}  // namespace fencelock::detail

namespace fencelock {

std::expected<void, OptionError> BackoffPolicy::validate() const {
    if (base <= milliseconds::zero()) return detail::bad("backoff.base", "must be positive");
    if (max < base) return detail::bad("backoff.max", "must be >= backoff.base");
    return detail::at_most("backoff.max", max, limits::backoff);
}

}  // namespace fencelock

#pragma once
// Full-jitter exponential backoff (pure; the caller supplies the random source).
#include <chrono>
#include <random>

#include "fencelock/backoff.hpp"

namespace fencelock::detail {

/// min(policy.max, policy.base * 2^attempt), without overflow for any attempt.
std::chrono::milliseconds backoff_ceiling(const BackoffPolicy& policy, unsigned attempt) noexcept;

/// A delay uniform in [0, backoff_ceiling(policy, attempt)].
std::chrono::milliseconds full_jitter(const BackoffPolicy& policy, unsigned attempt, std::mt19937_64& rng) noexcept;

/// The fallback sleep of a waiter that release messages wake: until the holder's lease would
/// end (it can expire without a release), plus up to policy.base of jitter so the waiters of
/// an expired lease do not all retry at once; never more than policy.max.
std::chrono::milliseconds calm_delay(const BackoffPolicy& policy, std::chrono::milliseconds holder_ttl,
                                     std::mt19937_64& rng) noexcept;

}  // namespace fencelock::detail

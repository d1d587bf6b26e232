#pragma once
/// Vocabulary every option aggregate shares: the validation error, and the full-jitter backoff
/// policy that the lock, the stores and the queue retry with.

#include <chrono>
#include <expected>
#include <string>

#include "fencelock/limits.hpp"
#include "fencelock/option_error.hpp"

namespace fencelock {

using std::chrono::milliseconds;

/// Full-jitter exponential backoff between acquisition attempts: the delay before retry n
/// (n = 0, 1, ...) is uniform in [0, min(max, base * 2^n)]. Random spread keeps contenders
/// from retrying in lockstep after a release.
struct BackoffPolicy {
    /// Ceiling of the first delay. Default 10 ms; at most `max`.
    milliseconds base{10};
    /// Largest ceiling any delay can have. Default 1 s; at most limits::backoff (1 h).
    milliseconds max{1000};

    std::expected<void, OptionError> validate() const;
};

}  // namespace fencelock

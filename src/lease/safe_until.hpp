#pragma once
// The local safe-until deadline: a pure decision from a send time and a TTL, unit-tested with
// clock readings.
#include <chrono>

#include "fencelock/types.hpp"

namespace fencelock::detail {

/// The latest moment a holder may still rely on a lease of `ttl` granted by a request sent at
/// `sent`. Redis started the TTL no earlier than it received the request, so counting from
/// the send time is conservative; the drift factor covers clock-rate differences.
steady_time safe_until(steady_time sent, std::chrono::milliseconds ttl, double drift_factor);

}  // namespace fencelock::detail

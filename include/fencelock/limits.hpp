#pragma once
/// Upper bounds of every duration fencelock accepts.

#include <chrono>

namespace fencelock {

/// Upper bounds of the duration options, checked by validate() before anything is sent (the
/// Lua scripts check the Redis-side ones again). They keep every deadline Redis computes an
/// exact integer and every steady_clock deadline far from overflow: a lease of 99999999h is a
/// typo, not a plan.
namespace limits {
using std::chrono::milliseconds;

/// AcquireOptions::lease and every renewal's lease: 24 h.
inline constexpr milliseconds lease{24LL * 3600 * 1000};
/// AcquireOptions::max_hold: 30 days.
inline constexpr milliseconds max_hold{30LL * 24 * 3600 * 1000};
/// AcquireOptions::wait: 24 h.
inline constexpr milliseconds wait{24LL * 3600 * 1000};
/// connect_timeout and command_timeout (client, queue, stores): 10 min.
inline constexpr milliseconds timeout{10LL * 60 * 1000};
/// BackoffPolicy::max: 1 h.
inline constexpr milliseconds backoff{3600LL * 1000};
/// Any other duration (parse_duration refuses longer ones): 365 days.
inline constexpr milliseconds duration{365LL * 24 * 3600 * 1000};
}  // namespace limits

}  // namespace fencelock

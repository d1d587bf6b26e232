#pragma once
// When to renew a kept lease and when to give it up: pure arithmetic on steady_clock readings,
// unit-tested with a fake clock. The keeper feeds it times and renewal outcomes.
//
// Why it is safe: the only thing that moves safe_until forward is a renewal Redis confirmed,
// and the new deadline is counted from when that renewal was *sent* (Redis started the new TTL
// no earlier), shortened by the drift factor. A lease is lost the moment safe_until passes
// without such a confirmation; a confirmation that arrives after that does not revive it, so
// valid() never turns from false back to true.
#include <chrono>

#include "fencelock/types.hpp"

namespace fencelock::detail {

struct RenewalPolicy {
    /// Time between renewals of one lease (default lease / 3).
    std::chrono::milliseconds interval;
    /// Delay before retrying a renewal whose outcome was unknown or failed.
    std::chrono::milliseconds retry_delay;
    /// ClientOptions::clock_drift_factor.
    double drift_factor;
};

struct LeaseTimes {
    /// The holder may rely on the lease until here.
    steady_time safe_until;
    /// The next renewal should be sent at (or shortly before) this moment.
    steady_time next_renewal;
};

/// Times after a grant or a confirmed renewal of `ttl` whose request was sent at `sent`.
LeaseTimes after_confirmation(steady_time sent, std::chrono::milliseconds ttl, const RenewalPolicy& policy);

/// The next attempt after a renewal that failed or whose reply never came, at `now`: soon, and
/// always before safe_until so there is still a chance to confirm in time.
steady_time retry_at(steady_time now, steady_time safe_until, const RenewalPolicy& policy);

/// Why a renewal is planned: on the lease's schedule, or as a retry after a failed one.
enum class RenewalKind { scheduled, retry };

/// How early a renewal may go. A scheduled one, a quarter interval: renewing early lets one
/// round trip carry many leases. A retry, not at all: it waits its retry_delay, so a Redis that
/// fails fast is not asked again in a tight loop.
std::chrono::milliseconds renewal_early_allowance(RenewalKind kind, std::chrono::milliseconds interval);

/// Whether a renewal planned for `next_renewal` should go out in the batch sent at `now`:
/// from renewal_early_allowance() before it.
bool renewal_due(steady_time now, steady_time next_renewal, std::chrono::milliseconds interval,
                 RenewalKind kind = RenewalKind::scheduled);

/// True once the lease can no longer be relied on.
inline bool expired(steady_time now, steady_time safe_until) { return now >= safe_until; }

/// The default interval for a lease: a third of it, so two renewals can fail before it ends.
std::chrono::milliseconds default_renew_interval(std::chrono::milliseconds lease);

}  // namespace fencelock::detail

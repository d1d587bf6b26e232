#include "lease/attempt_policy.hpp"

#include <string>

#include "fencelock/error.hpp"

namespace fencelock::detail {

WaitPlace AttemptPolicy::wait_place() const {
    if (!waits()) return WaitPlace::none;
    // (A fair acquisition on a coordinator without a fair line is refused before: unsupported().)
    if (options_.fair && coordinator_.fair_line) return WaitPlace::fair_line;
    // A poller is woken by nothing: a place among the sleepers would only hold up releases.
    return source_ == ReleaseSource::polling ? WaitPlace::none : WaitPlace::sleepers;
}

bool AttemptPolicy::takes_direct_grants() const {
    return coordinator_.direct_grants && options_.replicas == 0 && source_ != ReleaseSource::polling &&
           wait_place() != WaitPlace::none;
}

std::optional<OptionError> AttemptPolicy::unsupported(const AcquireOptions& options,
                                                      const CoordinatorCapabilities& coordinator) {
    if (options.fair && !coordinator.fair_line)
        return OptionError{"fair",
                           std::string(coordinator.name) + " keeps no fair line of waiters; acquire without fair"};
    if (options.replicas > 0 && !coordinator.replica_acks)
        return OptionError{"replicas", std::string(coordinator.name) +
                                           " has no replica acknowledgement to wait for (etcd answers a grant "
                                           "once a majority has committed it); acquire without replicas"};
    const auto ms = [](std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; };
    if (options.lease < coordinator.min_lease)
        return OptionError{"lease", std::string(coordinator.name) + " keeps no lease shorter than " +
                                        ms(coordinator.min_lease) + " (asked " + ms(options.lease) + ")"};
    if (coordinator.lease_step.count() > 0 && options.lease % coordinator.lease_step != std::chrono::milliseconds(0))
        return OptionError{"lease", std::string(coordinator.name) + " keeps leases in whole multiples of " +
                                        ms(coordinator.lease_step) + " (asked " + ms(options.lease) + ")"};
    return std::nullopt;
}

DirectGrants AttemptPolicy::direct_mode(bool in_line, bool watched) const {
    if (!takes_direct_grants() || !in_line) return DirectGrants::refused;
    // Only a waiter that hears the release message of any client can take that client's grant.
    return watched && source_ == ReleaseSource::messages ? DirectGrants::taken : DirectGrants::own_client;
}

LocalLine AttemptPolicy::local_line(bool local_waiters) const {
    if (!local_waiters) return LocalLine::empty;
    // LockClient tells it on every attempt, waiting or not (a single attempt's lease must wake
    // its threads too); AsyncLockClient only on a waiting acquisition's (see the test).
    if (source_ == ReleaseSource::own_client && !waits()) return LocalLine::empty;
    return LocalLine::waiting;
}

AcquirePlan AttemptPolicy::plan(const OwnerToken& owner, bool token_is_private, const ClientOptions& client) const {
    return {.owner = owner,
            .wait = options_.wait,
            .backoff = options_.backoff,
            .fair = options_.fair,
            .notifications = source_ != ReleaseSource::polling,
            .takes_place = wait_place() != WaitPlace::none,
            .token_is_private = token_is_private,
            .command_timeout = client.command_timeout,
            .direct_grants = takes_direct_grants(),
            .trust_grants = options_.replicas == 0,
            .drift_factor = client.clock_drift_factor,
            .lease = options_.lease,
            .extend_grants = true,
            .retry_errors = options_.retry_errors};
}

std::optional<std::error_code> AttemptPolicy::refusal(bool closing, bool in_grace) {
    if (closing) return make_error_code(errc::unavailable);
    if (in_grace) return make_error_code(errc::failover_grace);
    return std::nullopt;
}

}  // namespace fencelock::detail

#pragma once
// What both clients (LockClient, AsyncLockClient) make of the lease core's outcomes: the
// caller's Acquisition or Holding from a finish step, a Renewal from a renew reply, and the
// misuse checks they share.
#include <chrono>
#include <expected>
#include <system_error>

#include "fencelock/client.hpp"
#include "lease/acquire_loop.hpp"
#include "lease/capabilities.hpp"
#include "lease/safe_until.hpp"
#include "lock/lock_events.hpp"

namespace fencelock {

namespace detail {
// The caller's result of an acquisition's finish step, shared by LockClient and AsyncLockClient.
// `on_granted(out, grant, sent, granted_at)` fills in the lease: a trusted direct grant's lease
// counts from the refused attempt's send (safe-until), its holding from now, when its message
// was taken.
template <typename Out, typename OnGranted>
Result<Out> finish_acquisition(const AcquireStep& step, const AcquireLoop& loop, OnGranted&& on_granted) {
    Out out;
    out.attempts = loop.attempts();
    const bool by_attempt = step.result == AcquireResult::acquired && !step.direct;
    out.unsuccessful_attempts = loop.attempts() - (by_attempt ? 1u : 0u);
    out.holder_ttl = loop.holder_ttl();
    if (step.result == AcquireResult::acquired) {
        on_granted(out, step.grant, step.sent, step.direct ? std::chrono::steady_clock::now() : step.sent);
        return out;
    }
    if (step.error) return std::unexpected(step.error);
    return out;
}

/// acquire()'s `on_granted` for finish_acquisition, in both clients: `owner`'s Lease on
/// `resource`, safe until the attempt's send + its TTL less the drift margin.
inline auto lease_for(const ResourceName& resource, const OwnerToken& owner, double drift_factor) {
    return [resource, owner, drift_factor](Acquisition& out, const AcquireReply& reply, steady_time sent, steady_time) {
        out.lease =
            Lease{resource, owner, reply.fence, reply.ttl, safe_until(sent, reply.ttl, drift_factor), reply.reacquired};
    };
}

/// renew()'s result in both clients, from renew.lua's reply to a request sent at `sent`,
/// reported to `client`'s observer first (as a caller's renewal, not the keeper's).
inline Result<Renewal> reported_renewal(const ClientOptions& client, const ResourceName& resource,
                                        const OwnerToken& owner, milliseconds lease,
                                        const std::expected<RenewReply, std::error_code>& reply, steady_time sent) {
    report_renew(client.observer.get(), resource, owner, reply, lease, false);
    if (!reply) return std::unexpected(reply.error());
    Renewal r{reply->status, reply->ttl, {}, reply->fence};
    if (r.status == RenewStatus::renewed) r.safe_until = safe_until(sent, r.ttl, client.clock_drift_factor);
    return r;
}

// Misuse checks shared by LockClient and AsyncLockClient: std::invalid_argument naming the field.
void require_valid(const AcquireOptions& options, milliseconds command_timeout);
void require_valid(const KeepOptions& keep, const AcquireOptions& options, const ClientOptions& client);
void require_valid_lease(milliseconds lease);
/// Throws std::invalid_argument when `options` ask what the coordinator cannot do
/// (AttemptPolicy::unsupported): nothing is sent.
void require_supported(const AcquireOptions& options, const CoordinatorCapabilities& coordinator);
}  // namespace detail

}  // namespace fencelock

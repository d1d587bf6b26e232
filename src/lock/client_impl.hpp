#pragma once
// LockClient's implementation: the shared client state (client_core.hpp) plus the blocking
// acquire loop over the coordinator (client.cpp).
#include "fencelock/client.hpp"
#include "lease/attempt_policy.hpp"
#include "lock/client_core.hpp"
#include "lock/client_gate.hpp"
#include "lock/client_results.hpp"

namespace fencelock {

using std::chrono::steady_clock;

struct LockClient::Impl : detail::ClientCore {
    using ClientCore::ClientCore;

    // One attempt under `policy` (lease/attempt_policy.hpp); `sent` receives the moment the
    // request went out (safe-until counts from it). Nothing is granted inside a promoted
    // master's failover grace: a lease granted meanwhile is given back at once, before anyone
    // was told of it (best effort: if that release fails, the lease only blocks the lock until
    // its TTL). A stop request is heard after the reply (AcquireLoop::replied), never before.
    Result<detail::AcquireReply> attempt(const ResourceName& r, const OwnerToken& owner, const AcquireOptions& o,
                                         const detail::AttemptPolicy& policy, steady_time& sent,
                                         detail::DirectGrants direct) {
        if (auto refused = detail::AttemptPolicy::refusal(false, in_grace())) return std::unexpected(*refused);
        sent = steady_clock::now();
        auto reply = coordinator->attempt({.resource = r,
                                           .owner = owner,
                                           .options = o,
                                           .place = policy.wait_place(),
                                           .local_line = policy.local_line(coordinator->has_local_waiters(r)),
                                           .direct = direct});
        if (!reply || !detail::AttemptPolicy::gives_back(*reply, in_grace())) return reply;
        (void)coordinator->give_back(r, owner);
        return std::unexpected(make_error_code(errc::failover_grace));
    }

    bool in_grace() const { return detail::AttemptPolicy::in_grace(steady_clock::now(), coordinator->grants_from()); }

    // Full-jitter retry loop shared by acquire() and hold(). `on_granted` turns a grant into
    // the caller's result type.
    // `token_is_private`: the caller never saw the owner token, so it cannot retry with it.
    // A direct grant's shorter TTL is extended to the lease before the acquisition ends, for
    // acquire() and hold() alike (AcquireLoop's extend step; docs/DESIGN.md, "Direct handoff").
    template <typename Out, typename OnGranted>
    Result<Out> acquire_loop(const ResourceName& r, const OwnerToken& owner, bool token_is_private,
                             const AcquireOptions& o, std::stop_token stop, OnGranted on_granted);
};

}  // namespace fencelock

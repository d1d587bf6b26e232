#pragma once
// LockClient's state: client.cpp's protocol calls use all of it, LockAdmin (admin.cpp) shares
// its connection pool and key prefix.
#include <mutex>

#include "fencelock/client.hpp"
#include "lock/acquire_loop.hpp"
#include "lock/attempt_policy.hpp"
#include "lock/keeper.hpp"
#include "common/random_id.hpp"
#include "lock/calls/acquire_call.hpp"
#include "lock/calls/release_call.hpp"
#include "lock/calls/renew_call.hpp"
#include "lock/protocol.hpp"
#include "lock/keys.hpp"
#include "lock/lock_events.hpp"
#include "redis/cluster_connection.hpp"
#include "redis/connection_pool.hpp"
#include "redis/hiredis_connection.hpp"
#include "redis/multiplexed_connection.hpp"
#include "lock/release_notifier.hpp"

namespace fencelock {

using std::chrono::steady_clock;

std::string host_name();

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
        out.lease = Lease{resource, owner, reply.fence, reply.ttl, safe_until(sent, reply.ttl, drift_factor),
                          reply.reacquired};
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
}  // namespace detail

struct LockClient::Impl {
    explicit Impl(ClientOptions o)
        : options(std::move(o)),
          settings{options.endpoint, options.connect_timeout, options.command_timeout,
                   detail::topology_for(options.endpoint)},
          pool(std::make_shared<detail::ConnectionPool>(
              [s = settings] { return detail::make_endpoint_connection(s, detail::make_multiplexed_connection); }, options.pool_size)),
          holder{host_name(), std::to_string(::getpid()), options.holder_label, detail::random_hex_id()} {}

    // One attempt under `policy` (lock/attempt_policy.hpp); `sent` receives the moment the
    // request went out (safe-until counts from it). Nothing is granted inside a promoted
    // master's failover grace: a lease granted meanwhile is given back at once, before anyone
    // was told of it (best effort: if that release fails, the lease only blocks the lock until
    // its TTL). A stop request is heard after the reply (AcquireLoop::replied), never before.
    Result<detail::AcquireReply> attempt(const ResourceName& r, const OwnerToken& owner, const AcquireOptions& o,
                                         const detail::AttemptPolicy& policy, steady_time& sent,
                                         detail::DirectGrants direct) {
        if (auto refused = detail::AttemptPolicy::refusal(false, in_grace())) return std::unexpected(*refused);
        sent = steady_clock::now();
        auto reply = detail::acquire_once(*pool->borrow(), options.key_prefix, r, owner, o, holder,
                                          policy.wait_place(), policy.local_line(has_local_waiters(r)), direct);
        if (!reply || !detail::AttemptPolicy::gives_back(*reply, in_grace())) return reply;
        (void)detail::release_once(*pool->borrow(), options.key_prefix, r, owner);
        return std::unexpected(make_error_code(errc::failover_grace));
    }

    bool in_grace() const {
        return detail::AttemptPolicy::in_grace(steady_clock::now(), settings.topology->grants_from());
    }

    // A release by this client granted `g` to its waiter (the reply said so, no message did):
    // hands it to that waiter if it is still in the local line of `channel` (released:{R}).
    void hand_to_waiter(const std::string& channel, const detail::GrantMessage& g);

    // Full-jitter retry loop shared by acquire() and hold(). `on_granted` turns a grant into
    // the caller's result type.
    // `token_is_private`: the caller never saw the owner token, so it cannot retry with it.
    // A direct grant's shorter TTL is extended to the lease before the acquisition ends, for
    // acquire() and hold() alike (AcquireLoop's extend step; docs/DESIGN.md, "Direct handoff").
    template <typename Out, typename OnGranted>
    Result<Out> acquire_loop(const ResourceName& r, const OwnerToken& owner, bool token_is_private,
                             const AcquireOptions& o, std::stop_token stop, OnGranted on_granted);

    // What the keeper keeps for a lease hold() is about to ask for.
    std::shared_ptr<detail::KeptLease> kept_lease(const ResourceName& r, const OwnerToken& owner,
                                                  const AcquireOptions& o, KeepOptions keep) const {
        const detail::RenewalPolicy policy{
            .interval = keep.renew_every > milliseconds::zero() ? keep.renew_every
                                                                : detail::default_renew_interval(o.lease),
            .retry_delay = keep.retry_delay,
            .drift_factor = options.clock_drift_factor};
        return std::make_shared<detail::KeptLease>(r, owner, o.lease, policy, std::move(keep),
                                                   detail::make_keys(options.key_prefix, r).lock,
                                                   detail::replica_ack(o));
    }

    // hold()'s `on_granted`, in both clients: `keeper` starts renewing `state` from the grant,
    // and the caller gets the HeldLease (whose constructor only LockClient may call).
    static auto held_lease_for(std::shared_ptr<detail::Keeper> keeper, std::shared_ptr<detail::KeptLease> state) {
        return [keeper = std::move(keeper), state = std::move(state)](Holding& out, const detail::AcquireReply& reply,
                                                                       steady_time sent, steady_time granted_at) {
            keeper->activate(state, sent, reply.ttl, reply.fence, granted_at);
            out.lease.emplace(HeldLease(state, keeper));
        };
    }

    std::shared_ptr<detail::Keeper> keeper_instance() {
        std::lock_guard lock(keeper_mutex);
        if (!keeper)
            keeper = std::make_shared<detail::Keeper>(
                detail::make_endpoint_connection(settings, detail::make_multiplexed_connection), pool,
                options.key_prefix, options.observer,
                detail::ClockWatchTerms{options.clock_drift_factor, options.clock_probe_interval});
        return keeper;
    }

    detail::ReleaseNotifier& notifier_instance() {
        std::lock_guard lock(notifier_mutex);
        if (!notifier) notifier = std::make_unique<detail::ReleaseNotifier>(settings);
        return *notifier;
    }

    // The waiter a release of `channel` names its successor: one that still waits longer than
    // the release can take (the command timeout), so it is alive when the grant comes back.
    std::optional<detail::WaitLine::Named> local_successor(const std::string& channel) {
        std::lock_guard lock(notifier_mutex);
        if (!notifier) return std::nullopt;
        return notifier->successor(channel, options.command_timeout);
    }

    bool has_local_waiters(const std::string& channel) {
        std::lock_guard lock(notifier_mutex);
        return notifier && notifier->has_waiters(channel);
    }

    bool subscribed(const std::string& channel) {
        std::lock_guard lock(notifier_mutex);
        return notifier && notifier->subscribed(channel);
    }

    // Whether threads of this client wait for r in its local line (AttemptPolicy::local_line).
    bool has_local_waiters(const ResourceName& r) {
        return has_local_waiters(detail::make_keys(options.key_prefix, r).released);
    }

    void report(const detail::AcquireStep& finish, const ResourceName& r, const OwnerToken& owner,
                const AcquireOptions& o, const detail::AcquireLoop& loop, steady_time started) {
        detail::report_acquire(options.observer.get(), finish, r, owner, o, loop, started);
    }

    ClientOptions options;
    detail::ConnectionSettings settings;
    std::shared_ptr<detail::ConnectionPool> pool;
    detail::HolderMeta holder;
    std::mutex keeper_mutex;
    std::shared_ptr<detail::Keeper> keeper;
    std::mutex notifier_mutex;
    std::unique_ptr<detail::ReleaseNotifier> notifier;  // created by the first waiter
};


}  // namespace fencelock

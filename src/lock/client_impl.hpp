#pragma once
// LockClient's state: client.cpp's protocol calls use all of it, LockAdmin (admin.cpp) shares
// its connection pool and key prefix.
#include <mutex>

#include "fencelock/client.hpp"
#include "lock/acquire_loop.hpp"
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

/// LockClient::renew's result from renew.lua's reply to a request sent at `sent`.
inline Result<Renewal> renewal_result(const std::expected<RenewReply, std::error_code>& reply, steady_time sent,
                                      double drift_factor) {
    if (!reply) return std::unexpected(reply.error());
    Renewal r{reply->status, reply->ttl, {}, reply->fence};
    if (r.status == RenewStatus::renewed) r.safe_until = safe_until(sent, r.ttl, drift_factor);
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

    // One attempt; `sent` receives the moment the request went out (safe-until counts from it).
    // Inside the failover grace of a promoted master nothing is granted: checked before, and
    // again after the reply, since the connection may have found the new master while sending.
    // A lease granted meanwhile is given back at once, before anyone was told of it (best
    // effort: if that release fails, the lease only blocks the lock until its TTL).
    // `direct`: a refused attempt leaves grant arguments with its place (the caller hears the
    // release messages).
    Result<detail::AcquireReply> attempt(const ResourceName& r, const OwnerToken& owner,
                                         const AcquireOptions& o, steady_time& sent, detail::DirectGrants direct) {
        if (in_grace()) return std::unexpected(make_error_code(errc::failover_grace));
        sent = steady_clock::now();
        auto reply = detail::acquire_once(*pool->borrow(), options.key_prefix, r, owner, o, holder, wait_place(o),
                                          local_line(r), direct);
        // A lease this owner already held (reacquired) is no new grant: it is kept and returned.
        // One a release handed on is (it may have been issued on the promoted master during
        // its grace): given back like a new one.
        if (!reply || !reply->acquired || (reply->reacquired && !reply->handed) || !in_grace()) return reply;
        (void)detail::release_once(*pool->borrow(), options.key_prefix, r, owner);
        return std::unexpected(make_error_code(errc::failover_grace));
    }

    // A promoted master's failover grace: nothing is granted, no direct grant trusted.
    bool in_grace() const { return steady_clock::now() < settings.topology->grants_from(); }

    // A single attempt waits nowhere; a sleeper's place is only of use to a release message.
    detail::WaitPlace wait_place(const AcquireOptions& o) const {
        if (o.wait <= milliseconds::zero()) return detail::WaitPlace::none;
        if (o.fair) return detail::WaitPlace::fair_line;
        return options.release_notifications ? detail::WaitPlace::sleepers : detail::WaitPlace::none;
    }

    // Who opts in to direct grants (acquire.lua ARGV[8]): a waiter with a place in Redis's line
    // and no replica acknowledgement asked (a confirmation's WAIT need not cover a grant the
    // releaser's connection wrote). From which releases is the attempt's choice (direct_mode).
    bool takes_direct_grants(const AcquireOptions& o) const {
        return o.replicas == 0 && options.release_notifications && wait_place(o) != detail::WaitPlace::none;
    }

    // An attempt made in the local line takes grants from releases of this client (told by the
    // reply: Impl::hand_to_waiter); one that is watched (the waiter hears the
    // release messages) takes them from any release. Such a grant's TTL may be shorter than the
    // lease (the waiter's place bounds it): acquire() and hold() renew it to the lease asked
    // before they return (AcquireLoop's extend step).
    static detail::DirectGrants direct_mode(bool opted_in, bool in_line, bool watched) {
        if (!opted_in || !in_line) return detail::DirectGrants::refused;
        return watched ? detail::DirectGrants::taken : detail::DirectGrants::own_client;
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

    // Told to every attempt, waiting or not: a lease granted while this client's threads wait
    // for r must wake them when released (acquire.lua, ARGV[9]).
    detail::LocalLine local_line(const ResourceName& r) {
        std::lock_guard lock(notifier_mutex);
        if (!notifier || !notifier->has_waiters(detail::make_keys(options.key_prefix, r).released))
            return detail::LocalLine::empty;
        return detail::LocalLine::waiting;
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

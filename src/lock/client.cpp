#include "fencelock/client.hpp"

#include "lock/client_impl.hpp"

#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <random>
#include <stdexcept>

#include "lock/acquire_loop.hpp"
#include "lock/keys.hpp"
#include "lock/keeper.hpp"
#include "lock/calls/inspect_call.hpp"
#include "lock/calls/leave_line_call.hpp"
#include "lock/calls/release_call.hpp"
#include "lock/calls/renew_call.hpp"
#include "lock/lock_events.hpp"
#include "lock/protocol.hpp"
#include "lock/replica_ack.hpp"
#include "redis/connection_pool.hpp"
#include "redis/hiredis_connection.hpp"

namespace fencelock {

std::string host_name() {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
    return buf;
}

namespace {

std::mt19937_64& thread_rng() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    return rng;
}

// Sleeps for `d` unless `stop` is requested first; returns false when stopped.
bool sleep_unless_stopped(std::chrono::milliseconds d, std::stop_token stop) {
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lock(m);
    return !cv.wait_for(lock, stop, d, [] { return false; }) && !stop.stop_requested();
}

}  // namespace

void detail::require_valid(const AcquireOptions& options, milliseconds command_timeout) {
    if (auto ok = options.validate_for(command_timeout); !ok)
        throw std::invalid_argument("AcquireOptions." + ok.error().field + ": " + ok.error().message);
}

void detail::require_valid(const KeepOptions& keep, const AcquireOptions& options, const ClientOptions& client) {
    require_valid(options, client.command_timeout);
    if (auto ok = keep.validate(options.lease, client.clock_drift_factor); !ok)
        throw std::invalid_argument("KeepOptions." + ok.error().field + ": " + ok.error().message);
}

void detail::require_valid_lease(milliseconds lease) {
    if (auto ok = validate_lease(lease); !ok) throw std::invalid_argument("renew: lease " + ok.error().message);
}

// Carries out the steps of the pure acquire loop (lock/acquire_loop.hpp, which explains the
// waiting and retry rules) against Redis, the release notifier and the clock.
template <typename Out, typename OnGranted>
Result<Out> LockClient::Impl::acquire_loop(const ResourceName& r, const OwnerToken& owner, bool token_is_private,
                                           const AcquireOptions& o, std::stop_token stop, OnGranted on_granted) {
    using Kind = detail::AcquireStep::Kind;
    detail::require_valid(o, options.command_timeout);
    const auto started = steady_clock::now();
    const detail::AttemptPolicy policy(o, detail::AttemptPolicy::sync_source(options));
    const bool direct_grants = policy.takes_direct_grants();
    detail::AcquireLoop loop(policy.plan(owner, token_is_private, options), thread_rng());
    const std::string channel = loop.may_wait() ? detail::make_keys(options.key_prefix, r).released : std::string{};
    std::unique_ptr<detail::ReleaseNotifier::Waiter> line;
    steady_time sent;
    auto step = loop.may_wait() ? loop.start(started, has_local_waiters(channel), subscribed(channel))
                                : loop.start(started, false);
    for (;;) {
        switch (step.kind) {
            case Kind::attempt: {
                const bool watched = line && line->subscribed_now();
                const auto direct = policy.direct_mode(line != nullptr, watched);
                const auto reply = attempt(r, *step.owner, o, policy, sent, direct);
                step = loop.replied(reply, watched, sent, steady_clock::now(), stop.stop_requested());
                break;
            }
            case Kind::join_line: {
                // A waiter that takes direct grants may be named by this client's releases.
                std::optional<detail::SuccessorTerms> terms;
                if (direct_grants) terms = detail::SuccessorTerms{o.lease, o.max_hold, started + o.wait};
                line = notifier_instance().join(channel, owner.str(), terms);
                const bool subscribed = line->subscribed(step.until, stop);
                step = loop.joined(subscribed, line->ahead());
                break;
            }
            case Kind::wait_for_release: {
                const bool woken = line->wait(step.until, stop);
                const auto grant = line->take_grant();
                step = loop.waited(woken, stop.stop_requested(), grant, steady_clock::now(), in_grace());
                break;
            }
            case Kind::sleep:
                (void)sleep_unless_stopped(step.delay, stop);
                step = loop.waited(false, stop.stop_requested());
                break;
            case Kind::pass_on:
                line->pass_on();
                step = loop.done();
                break;
            case Kind::extend: {
                const auto renew_sent = steady_clock::now();
                const auto reply = detail::renew_once(*pool->borrow(), options.key_prefix, r, *step.owner, o.lease);
                step = loop.extended(reply, renew_sent, steady_clock::now());
                break;
            }
            case Kind::leave_line:
                (void)detail::leave_line_once(*pool->borrow(), options.key_prefix, r, *step.owner);
                step = loop.done();
                break;
            case Kind::release:
                (void)detail::release_once(*pool->borrow(), options.key_prefix, r, *step.owner);
                step = loop.done();
                break;
            case Kind::finish: {
                const bool acquired = step.result == AcquireResult::acquired;
                if (acquired && line) line->granted();
                auto out = detail::finish_acquisition<Out>(step, loop, on_granted);
                report(step, r, owner, o, loop, started);
                return out;
            }
        }
    }
}

std::expected<LockClient, OptionError> LockClient::create(ClientOptions options) {
    if (auto ok = options.validate(); !ok) return std::unexpected(ok.error());
    return LockClient(std::make_unique<Impl>(std::move(options)));
}

LockClient::LockClient(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
LockClient::LockClient(LockClient&&) noexcept = default;
LockClient& LockClient::operator=(LockClient&&) noexcept = default;
LockClient::~LockClient() = default;

const ClientOptions& LockClient::options() const noexcept { return impl_->options; }

namespace {
AcquireOptions single_attempt(AcquireOptions options) {
    options.wait = milliseconds::zero();
    return options;
}
}  // namespace

Result<Acquisition> LockClient::try_acquire(const ResourceName& resource, const AcquireOptions& options) {
    return acquire_with(resource, OwnerToken::generate(), true, single_attempt(options), {});
}

Result<Acquisition> LockClient::try_acquire(const ResourceName& resource, const OwnerToken& owner,
                                            const AcquireOptions& options) {
    return acquire_with(resource, owner, false, single_attempt(options), {});
}

Result<Acquisition> LockClient::acquire(const ResourceName& resource, const AcquireOptions& options,
                                        std::stop_token stop) {
    return acquire_with(resource, OwnerToken::generate(), true, options, stop);
}

Result<Acquisition> LockClient::acquire(const ResourceName& resource, const OwnerToken& owner,
                                        const AcquireOptions& options, std::stop_token stop) {
    return acquire_with(resource, owner, false, options, stop);
}

Result<Acquisition> LockClient::acquire_with(const ResourceName& resource, const OwnerToken& owner,
                                             bool token_is_private, const AcquireOptions& options,
                                             std::stop_token stop) {
    return impl_->acquire_loop<Acquisition>(resource, owner, token_is_private, options, stop,
                                            detail::lease_for(resource, owner, impl_->options.clock_drift_factor));
}

Result<Holding> LockClient::hold(const ResourceName& resource, const AcquireOptions& options) {
    return hold(resource, options, KeepOptions{});
}

Result<Holding> LockClient::hold(const ResourceName& resource, const AcquireOptions& options, KeepOptions keep,
                                 std::stop_token stop) {
    detail::require_valid(keep, options, impl_->options);
    auto keeper = impl_->keeper_instance();
    const OwnerToken owner = OwnerToken::generate();
    auto state = impl_->kept_lease(resource, owner, options, std::move(keep));
    keeper->add(state);  // before the request: a grant is never unknown to the keeper
    auto result = impl_->acquire_loop<Holding>(resource, owner, true, options, stop, Impl::held_lease_for(keeper, state));
    if (!result || !result->acquired()) keeper->remove(state);
    return result;
}

KeeperStats LockClient::keeper_stats() const {
    std::shared_ptr<detail::Keeper> keeper;
    {
        std::lock_guard lock(impl_->keeper_mutex);
        keeper = impl_->keeper;
    }
    return keeper ? keeper->stats() : KeeperStats{};
}

Result<Renewal> LockClient::renew(const ResourceName& resource, const OwnerToken& owner,
                                  std::chrono::milliseconds lease) {
    detail::require_valid_lease(lease);
    const auto sent = steady_clock::now();
    auto reply = detail::renew_once(*impl_->pool->borrow(), impl_->options.key_prefix, resource, owner, lease);
    return detail::reported_renewal(impl_->options, resource, owner, lease, reply, sent);
}

Result<ReleaseStatus> LockClient::release(const ResourceName& resource, const OwnerToken& owner) {
    const std::string channel = detail::make_keys(impl_->options.key_prefix, resource).released;
    // A thread of this client waiting for the lock, vouched for as alive (lib/handoff.lua):
    // the release grants it the whole lease, so it need not extend a place-bounded one.
    const auto next = impl_->local_successor(channel);
    const std::string holder = next ? detail::holder_text(impl_->holder) : std::string{};
    const detail::Successor successor{next ? std::string_view(next->tag) : std::string_view{},
                                      next ? next->terms.lease : milliseconds{},
                                      next ? next->terms.max_hold : milliseconds{}, holder};
    const auto sent = steady_clock::now();
    auto reply = detail::release_for_client(*impl_->pool->borrow(), impl_->options.key_prefix, resource, owner,
                                            impl_->holder.client_id, next ? &successor : nullptr);
    const Result<ReleaseStatus> result =
        reply ? Result<ReleaseStatus>(reply->status) : Result<ReleaseStatus>(std::unexpected(reply.error()));
    detail::report_release(impl_->options.observer.get(), resource, owner, result, std::nullopt);
    if (reply && reply->granted) {
        reply->granted->grant.release_sent = sent;  // its TTL began after this
        impl_->hand_to_waiter(channel, *reply->granted);
    }
    return result;
}

// A waiter that is not in the local line any more needs nothing: it either took the lease by its
// own attempt ("already ours") or is giving up, and giving up sends leave_line, which deletes a
// lease handed to the leaver (leave_line.lua). Releasing it here instead could delete the lease
// of a waiter that just took it by its attempt.
void LockClient::Impl::hand_to_waiter(const std::string& channel, const detail::GrantMessage& g) {
    std::lock_guard lock(notifier_mutex);
    if (notifier) (void)notifier->grant(channel, g.owner, g.grant);
}

Result<LockInfo> LockClient::inspect(const ResourceName& resource) {
    return detail::inspect_once(*impl_->pool->borrow(), impl_->options.key_prefix, resource);
}

}  // namespace fencelock

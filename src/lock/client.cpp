#include "fencelock/client.hpp"

#include "lock/client_impl.hpp"

#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <random>
#include <stdexcept>

#include "common/backoff.hpp"
#include "lock/keys.hpp"
#include "lock/keeper.hpp"
#include "lock/calls/inspect_call.hpp"
#include "lock/calls/leave_line_call.hpp"
#include "lock/calls/release_call.hpp"
#include "lock/calls/renew_call.hpp"
#include "lock/lock_events.hpp"
#include "lock/protocol.hpp"
#include "redis/connection_pool.hpp"
#include "redis/hiredis_connection.hpp"

namespace fencelock {

std::string host_name() {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
    return buf;
}

namespace {

void require_valid(const AcquireOptions& options) {
    if (auto ok = options.validate(); !ok)
        throw std::invalid_argument("AcquireOptions." + ok.error().field + ": " + ok.error().message);
}

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

// Why one owner token for every attempt: if an attempt's reply is lost (timeout, broken
// connection), Redis may have granted the lease. The next attempt with the same token gets that
// lease back with its fence instead of being blocked by it until it expires.
//
// Waiting: once contended, the waiter joins this client's local line for the resource and
// subscribes to its release channel. An attempt sent while the subscription stands cannot miss
// the next release, so after it fails the waiter sleeps until a release wakes it (one waiter per
// release, in arrival order) or until the holder's lease would end; without a subscription it
// polls with full-jitter backoff.
template <typename Out, typename OnGranted>
Result<Out> LockClient::Impl::acquire_loop(const ResourceName& r, const OwnerToken& owner, bool token_is_private,
                                           const AcquireOptions& o, std::stop_token stop, OnGranted on_granted) {
    require_valid(o);
    const auto started = steady_clock::now();
    const auto deadline = started + o.wait;
    Out out;
    std::error_code last_error;
    bool maybe_granted = false;  // an attempt with unknown outcome may hold the lease
    bool may_be_in_line = false;  // a waiting attempt was refused: Redis may keep a place for us
    const bool may_wait = o.wait > milliseconds::zero() && options.release_notifications;
    const bool takes_place = wait_place(o) != detail::WaitPlace::none;
    const std::string channel = may_wait ? detail::make_keys(options.key_prefix, r).released : std::string{};
    std::unique_ptr<detail::ReleaseNotifier::Waiter> line;
    auto join_line = [&](steady_time now) {
        line = notifier_instance().join(channel, owner.str());
        // A slow subscription is no reason to wait longer than polling would.
        return line->subscribed(std::min({deadline, now + options.command_timeout, now + o.backoff.max}), stop);
    };
    // Threads of this client already wait for the lock: a newcomer goes to the back of the
    // line instead of overtaking them. A fair waiter joins the local line before its first
    // attempt, so its place there follows its place in Redis's line, and attempts at once to
    // get the latter.
    bool woken = false;  // the last wait ended by a release message
    if (may_wait && (o.fair || has_local_waiters(channel)) && join_line(started) && !o.fair && line->ahead() > 0)
        woken = line->wait(std::min(deadline, started + o.backoff.max), stop);
    for (;;) {
        ++out.attempts;
        const bool watched = line && line->subscribed_now();
        steady_time sent;
        auto reply = attempt(r, owner, o, sent);
        if (reply && reply->acquired) {
            if (line) line->granted();
            on_granted(out, *reply, sent);
            report(AcquireResult::acquired, r, owner, o, reply->fence, out.attempts, started, {});
            return out;
        }
        if (reply) {
            out.holder_ttl = reply->ttl;
            last_error.clear();
            maybe_granted = false;
            may_be_in_line = may_be_in_line || takes_place;
            // Woken for a release that is another process's fair waiter's turn, or a local
            // waiter's whose place in Redis's line is ahead of ours: hand it on.
            if (woken && reply->queued) line->pass_on();
        } else {
            last_error = reply.error();
            const failure_kind kind = classify(last_error);
            if (kind == failure_kind::fatal) {
                report(AcquireResult::error, r, owner, o, std::nullopt, out.attempts, started, last_error);
                return std::unexpected(last_error);
            }
            maybe_granted = maybe_granted || kind == failure_kind::outcome_unknown;
            may_be_in_line = may_be_in_line || (takes_place && kind == failure_kind::outcome_unknown);
        }
        const auto now = steady_clock::now();
        if (now >= deadline || stop.stop_requested()) break;
        // Subscribed only now: a release may have come between the attempt and the
        // subscription, so look once more before sleeping.
        if (may_wait && !line && !last_error && join_line(now)) continue;
        auto delay = watched && !last_error ? detail::calm_delay(o.backoff, out.holder_ttl, thread_rng())
                                            : detail::full_jitter(o.backoff, out.attempts - 1, thread_rng());
        delay = std::min(delay, std::chrono::ceil<std::chrono::milliseconds>(deadline - now));
        woken = false;
        if (line) woken = line->wait(now + delay, stop);
        else (void)sleep_unless_stopped(delay, stop);
        if (stop.stop_requested()) {
            if (woken) line->pass_on();  // a release this waiter will not use
            break;
        }
    }
    // Best effort, like the release below: a place left behind lapses by itself.
    if (may_be_in_line) (void)detail::leave_line_once(*pool->borrow(), options.key_prefix, r, owner);
    if (last_error) {
        // Giving up after an unknown outcome with a token the caller cannot retry with: free
        // the lease we may have been granted instead of leaving it to block others until it
        // expires. Best effort; it expires anyway. A caller holding the token retries instead.
        if (maybe_granted && token_is_private) (void)detail::release_once(*pool->borrow(), options.key_prefix, r, owner);
        report(AcquireResult::error, r, owner, o, std::nullopt, out.attempts, started, last_error);
        return std::unexpected(last_error);
    }
    report(o.wait > milliseconds::zero() ? AcquireResult::timeout : AcquireResult::contended, r, owner, o,
           std::nullopt, out.attempts, started, {});
    return out;
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
    const double drift = impl_->options.clock_drift_factor;
    return impl_->acquire_loop<Acquisition>(
        resource, owner, token_is_private, options, stop,
        [&](Acquisition& out, const detail::AcquireReply& reply, steady_time sent) {
            out.lease = Lease{resource, owner, reply.fence, reply.ttl, detail::safe_until(sent, reply.ttl, drift),
                              reply.reacquired};
        });
}

Result<Holding> LockClient::hold(const ResourceName& resource, const AcquireOptions& options) {
    return hold(resource, options, KeepOptions{});
}

Result<Holding> LockClient::hold(const ResourceName& resource, const AcquireOptions& options, KeepOptions keep,
                                 std::stop_token stop) {
    require_valid(options);
    if (auto ok = keep.validate(options.lease, impl_->options.clock_drift_factor); !ok)
        throw std::invalid_argument("KeepOptions." + ok.error().field + ": " + ok.error().message);
    const detail::RenewalPolicy policy{
        .interval = keep.renew_every > milliseconds::zero() ? keep.renew_every
                                                            : detail::default_renew_interval(options.lease),
        .retry_delay = keep.retry_delay,
        .drift_factor = impl_->options.clock_drift_factor};
    auto keeper = impl_->keeper_instance();
    const OwnerToken owner = OwnerToken::generate();
    auto state = std::make_shared<detail::KeptLease>(resource, owner, options.lease, policy, std::move(keep),
                                                     detail::make_keys(impl_->options.key_prefix, resource).lock);
    keeper->add(state);  // before the request: a grant is never unknown to the keeper
    auto result = impl_->acquire_loop<Holding>(
        resource, owner, true, options, stop, [&](Holding& out, const detail::AcquireReply& reply, steady_time sent) {
            keeper->activate(state, sent, reply.ttl, reply.fence);
            out.lease.emplace(HeldLease(state, keeper));
        });
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
    if (auto ok = validate_lease(lease); !ok) throw std::invalid_argument("renew: lease " + ok.error().message);
    const auto sent = steady_clock::now();
    auto reply = detail::renew_once(*impl_->pool->borrow(), impl_->options.key_prefix, resource, owner, lease);
    detail::report_renew(impl_->options.observer.get(), resource, owner, reply, lease, false);
    if (!reply) return std::unexpected(reply.error());
    Renewal r{reply->status, reply->ttl, {}, reply->fence};
    if (r.status == RenewStatus::renewed)
        r.safe_until = detail::safe_until(sent, r.ttl, impl_->options.clock_drift_factor);
    return r;
}

Result<ReleaseStatus> LockClient::release(const ResourceName& resource, const OwnerToken& owner) {
    auto result = detail::release_once(*impl_->pool->borrow(), impl_->options.key_prefix, resource, owner);
    detail::report_release(impl_->options.observer.get(), resource, owner, result, std::nullopt);
    return result;
}

Result<LockInfo> LockClient::inspect(const ResourceName& resource) {
    return detail::inspect_once(*impl_->pool->borrow(), impl_->options.key_prefix, resource);
}

}  // namespace fencelock

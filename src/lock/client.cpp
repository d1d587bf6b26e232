#include "fencelock/client.hpp"

#include "lock/client_impl.hpp"

#include <condition_variable>
#include <mutex>
#include <random>
#include <stdexcept>

namespace fencelock {

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

void detail::require_supported(const AcquireOptions& options, const CoordinatorCapabilities& coordinator) {
    if (auto no = AttemptPolicy::unsupported(options, coordinator))
        throw std::invalid_argument("AcquireOptions." + no->field + ": " + no->message);
}

std::expected<void, OptionError> LockClient::supports(const AcquireOptions& options) const {
    if (auto no = detail::AttemptPolicy::unsupported(options, impl_->coordinator->capabilities()))
        return std::unexpected(std::move(*no));
    return {};
}

void detail::require_valid_lease(milliseconds lease) {
    if (auto ok = validate_lease(lease); !ok) throw std::invalid_argument("renew: lease " + ok.error().message);
}

// Carries out the steps of the pure acquire loop (lease/acquire_loop.hpp, which explains the
// waiting and retry rules) against the coordinator, its release watch and the clock.
template <typename Out, typename OnGranted>
Result<Out> LockClient::Impl::acquire_loop(const ResourceName& r, const OwnerToken& owner, bool token_is_private,
                                           const AcquireOptions& o, std::stop_token stop, OnGranted on_granted) {
    using Kind = detail::AcquireStep::Kind;
    detail::require_valid(o, options.command_timeout);
    const auto can = coordinator->capabilities();
    detail::require_supported(o, can);
    const auto started = steady_clock::now();
    const detail::AttemptPolicy policy(o, detail::AttemptPolicy::sync_source(options, can), can);
    const bool direct_grants = policy.takes_direct_grants();
    detail::AcquireLoop loop(policy.plan(owner, token_is_private, options), thread_rng());
    std::unique_ptr<detail::WatchSeat> line;
    steady_time sent;
    auto step = loop.may_wait() ? loop.start(started, coordinator->has_local_waiters(r), coordinator->watching(r))
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
                line = coordinator->watch(r, owner, terms);
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
                const auto reply = coordinator->renew(r, *step.owner, o.lease);
                step = loop.extended(reply, renew_sent, steady_clock::now());
                break;
            }
            case Kind::leave_line:
                (void)coordinator->leave_line(r, *step.owner);
                step = loop.done();
                break;
            case Kind::release:
                (void)coordinator->give_back(r, *step.owner);
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
    // Before the keeper learns of the lease: a refusal leaves nothing registered there.
    detail::require_supported(options, impl_->coordinator->capabilities());
    auto keeper = impl_->keeper_instance();
    const OwnerToken owner = OwnerToken::generate();
    auto state = impl_->kept_lease(resource, owner, options, std::move(keep));
    keeper->add(state);  // before the request: a grant is never unknown to the keeper
    auto result =
        impl_->acquire_loop<Holding>(resource, owner, true, options, stop, Impl::held_lease_for(keeper, state));
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
    auto reply = impl_->coordinator->renew(resource, owner, lease);
    return detail::reported_renewal(impl_->options, resource, owner, lease, reply, sent);
}

Result<ReleaseStatus> LockClient::release(const ResourceName& resource, const OwnerToken& owner) {
    const auto reply = impl_->coordinator->release(resource, owner);
    const Result<ReleaseStatus> result = reply ? Result<ReleaseStatus>(reply->status)
                                               : Result<ReleaseStatus>(std::unexpected(reply.error()));
    detail::report_release(impl_->options.observer.get(), resource, owner, result, std::nullopt);
    if (reply && reply->granted) impl_->coordinator->hand_over(resource, *reply->granted);
    return result;
}

Result<LockInfo> LockClient::inspect(const ResourceName& resource) { return impl_->coordinator->inspect(resource); }

std::shared_ptr<detail::Coordinator> detail::ClientGate::coordinator(const LockClient& client) {
    return client.impl_->coordinator;
}

detail::ClientCore& detail::ClientGate::core(LockClient& client) { return *client.impl_; }

}  // namespace fencelock

#include "lock/async_acquire.hpp"

#include <memory>
#include <random>
#include <stdexcept>
#include <utility>

#include "fencelock/error.hpp"
#include "lease/attempt_policy.hpp"
#include "lease/safe_until.hpp"

namespace fencelock::detail {
namespace {

using std::chrono::steady_clock;
using Kind = AcquireStep::Kind;

std::uint64_t fresh_seed() {
    static std::atomic<std::uint64_t> counter{std::random_device{}()};
    return counter.fetch_add(0x9e3779b97f4a7c15ULL, std::memory_order_relaxed);
}

bool waits(const AcquireOptions& o) { return o.wait > std::chrono::milliseconds::zero(); }

class AsyncAcquire : public AsyncLineWaiter, public std::enable_shared_from_this<AsyncAcquire> {
public:
    AsyncAcquire(const AsyncLockContext& c, const ResourceName& r, const OwnerToken& owner, bool token_is_private,
                 const AcquireOptions& o, AcquireFinish finish)
        : context_(c),
          resource_(r),
          owner_(owner),
          options_(o),
          line_(waits(o) ? r.str() : std::string{}),
          finish_(std::move(finish)),
          rng_(fresh_seed()),
          policy_(o, ReleaseSource::own_client, c.coordinator.capabilities()),
          loop_(policy_.plan(owner, token_is_private, c.options), rng_) {}

    void start() {
        const auto now = steady_clock::now();
        if (!loop_.may_wait()) return drive(loop_.start(now, false));
        // "Subscribed" here means this client's releases of the lock are heard, which they
        // always are; a channel waited for lately joins before its first attempt.
        drive(loop_.start(now, lines().has_waiters(line_), lines().waited_lately(line_, now)));
    }

    // AsyncLineWaiter: called on the loop thread by this client's release (a grant) or by the
    // waiter in front (a wake-up it hands on).
    void granted(const DirectGrant& g) override {
        grant_ = g;
        wake();
    }
    void woken() override {
        woken_ = true;
        wake();
    }
    void named() override { loop_.named_successor(); }

private:
    bool closing() const { return context_.closing.load(std::memory_order_acquire); }
    bool in_grace() const { return AttemptPolicy::in_grace(steady_clock::now(), context_.coordinator.grants_from()); }
    AsyncWaitLines& lines() const { return context_.lines; }

    // Ends a wait for release at once (its timer, if any, finds a newer generation).
    void wake() {
        if (!waiting_) return;  // attempting: the grant or wake-up waits for the next wait
        waiting_ = false;
        ++wait_generation_;
        end_wait();
    }
    void end_wait() {
        const bool woken = std::exchange(woken_, false) || grant_.has_value();
        drive(loop_.waited(woken, closing(), std::exchange(grant_, std::nullopt), steady_clock::now(), in_grace()));
    }

    // Carries out `step`; an asynchronous one continues here from its completion.
    void drive(AcquireStep step) {
        switch (step.kind) {
            case Kind::attempt: return attempt();
            case Kind::join_line: {
                std::size_t ahead = 0;
                ticket_ = lines().join(line_, owner_.str(), options_.lease, options_.max_hold, loop_.deadline(),
                                       weak_from_this(), ahead);
                in_line_ = true;
                // Held by this client: its release will name a successor, so wait for that
                // (no attempt), at most until that lease ends or backoff.max (a release by
                // other means, e.g. the synchronous client, names nobody).
                std::optional<steady_time> succession;
                if (auto until = lines().held_until(line_))
                    succession = std::min(*until, steady_clock::now() + options_.backoff.max);
                return drive(loop_.joined(true, ahead, succession));
            }
            case Kind::wait_for_release: {
                if (grant_ || woken_ || closing()) return end_wait();
                waiting_ = true;
                const auto generation = ++wait_generation_;
                auto timer = [self = shared_from_this(), generation] {
                    if (self->wait_generation_ != generation || !self->waiting_) return;
                    self->waiting_ = false;
                    self->end_wait();
                };
                if (!context_.session.at(step.until, std::move(timer))) {
                    waiting_ = false;
                    return drive(loop_.waited(false, true));
                }
                return;
            }
            case Kind::sleep: {
                auto self = shared_from_this();
                auto wake = [self] { self->drive(self->loop_.waited(false, self->closing())); };
                if (closing() || !context_.session.at(steady_clock::now() + step.delay, std::move(wake)))
                    return drive(loop_.waited(false, true));
                return;
            }
            case Kind::pass_on: lines().wake_after(line_, ticket_); return drive(loop_.done());
            case Kind::extend: {
                // A grant bounded by its place (lib/handoff.lua) is renewed to the lease asked.
                // The lock is this client's from the grant on: waiters arriving meanwhile wait
                // for its release in the local line (a successor grant) instead of attempting.
                if (!line_.empty())
                    lines().hold(line_, owner_.str(), step.grant.fence.value(),
                                 safe_until(step.sent, step.grant.ttl, context_.options.clock_drift_factor));
                const auto sent = steady_clock::now();
                return context_.session.renew(resource_, *step.owner, options_.lease,
                                              [self = shared_from_this(), sent](const Result<RenewReply>& reply) {
                                                  self->drive(self->loop_.extended(reply, sent, steady_clock::now()));
                                              });
            }
            case Kind::leave_line:  // best effort: whatever the reply, the loop goes on
                return context_.session.leave_line(
                    resource_, *step.owner,
                    [self = shared_from_this()](const Result<bool>&) { self->drive(self->loop_.done()); });
            case Kind::release:
                return release_on_loop(
                    context_, resource_, *step.owner,
                    [self = shared_from_this()](const Result<ReleaseStatus>&) { self->drive(self->loop_.done()); });
            case Kind::finish: {
                const auto now = steady_clock::now();
                if (in_line_) lines().leave(line_, ticket_, now);
                in_line_ = false;
                // A lease a waiting acquisition of this client got: its waiters wait calmly on it.
                if (step.result == AcquireResult::acquired && !line_.empty())
                    lines().hold(line_, owner_.str(), step.grant.fence.value(),
                                 safe_until(step.sent, step.grant.ttl, context_.options.clock_drift_factor));
                auto finish = std::move(finish_);
                return finish(step, loop_);
            }
        }
        AcquireStep fail{.kind = Kind::finish, .error = std::make_error_code(std::errc::operation_not_supported)};
        drive(fail);
    }

    // One attempt under the policy LockClient's attempts follow (lease/attempt_policy.hpp).
    void attempt() {
        const auto now = steady_clock::now();
        // Nothing sent (closing: unavailable, retryable; or the failover grace): the loop gives
        // up or goes on with its usual steps (the release owed after a lost reply, leaving the line).
        const bool closing_now = closing();
        if (auto refused = AttemptPolicy::refusal(closing_now, in_grace()))
            return drive(loop_.replied(std::unexpected(*refused), false, now, now, closing_now));
        sent_ = now;
        const auto local = policy_.local_line(lines().has_waiters(line_));
        // This loop subscribes to nothing: in the line, a refused attempt's place takes grants
        // from this client's releases only.
        const auto direct = policy_.direct_mode(in_line_, false);
        const AttemptRequest request{.resource = resource_,
                                     .owner = owner_,
                                     .options = options_,
                                     .place = policy_.wait_place(),
                                     .local_line = local,
                                     .direct = direct};
        context_.session.attempt(
            request, [self = shared_from_this()](const Result<AcquireReply>& reply) { self->attempted(reply); });
    }

    // A new grant found inside the grace is given back before anyone hears of it (and before
    // the loop goes on, as LockClient waits for that release).
    void attempted(const Result<AcquireReply>& reply) {
        if (reply && AttemptPolicy::gives_back(*reply, in_grace())) {
            return release_on_loop(context_, resource_, owner_,
                                   [self = shared_from_this()](const Result<ReleaseStatus>&) {
                                       self->replied(std::unexpected(make_error_code(errc::failover_grace)));
                                   });
        }
        replied(reply);
    }

    // Watched: refused on a lease this client holds, whose release this client will hear.
    void replied(const std::expected<AcquireReply, std::error_code>& reply) {
        const bool watched = reply && !reply->acquired && !reply->queued && reply->seen_fence && !line_.empty() &&
                             lines().held_here(line_, reply->seen_fence->value());
        drive(loop_.replied(reply, watched, sent_, steady_clock::now(), closing()));
    }

    const AsyncLockContext& context_;
    const ResourceName resource_;
    const OwnerToken owner_;  // the plan's: every attempt sends the same token
    const AcquireOptions options_;
    const std::string line_;  // the local line's key (the resource name) for a waiting acquisition, else empty
    AcquireFinish finish_;
    std::mt19937_64 rng_;
    const AttemptPolicy policy_;
    AcquireLoop loop_;  // after rng_: it keeps a reference
    steady_time sent_{};
    // The local line (loop thread only, like everything here).
    bool in_line_ = false;
    AsyncWaitLines::Ticket ticket_ = 0;
    bool waiting_ = false;               // a wait_for_release step is under way
    std::uint64_t wait_generation_ = 0;  // a wait's timer acts only if no wake-up ended it
    std::optional<DirectGrant> grant_;   // came while not waiting: for the next wait
    bool woken_ = false;                 // likewise, a wake-up handed on
};

}  // namespace

void start_async_acquire(const AsyncLockContext& context, const ResourceName& resource, const OwnerToken& owner,
                         bool token_is_private, const AcquireOptions& options, AcquireFinish finish) {
    auto acquisition =
        std::make_shared<AsyncAcquire>(context, resource, owner, token_is_private, options, std::move(finish));
    // Started on the loop thread, so that even an acquisition that ends before sending anything
    // (inside the failover grace) completes there, never on the caller's thread.
    auto start = [acquisition] { acquisition->start(); };
    if (!context.session.at(std::chrono::steady_clock::time_point::min(), std::move(start)))
        throw std::logic_error("start_async_acquire: the loop is stopping");  // its client outlives it
}

void release_on_loop(const AsyncLockContext& context, const ResourceName& resource, const OwnerToken& owner,
                     std::move_only_function<void(const Result<ReleaseStatus>&)> then) {
    // The client's local lines are the loop thread's alone (naming the successor reads them
    // while the loop's completions change them): a release from a caller's thread runs there.
    // Should the loop be stopping, the task is dropped with `then`, whose owner (the client's
    // counted completion) then completes the operation with an error.
    if (!context.session.on_loop_thread()) {
        (void)context.session.at(std::chrono::steady_clock::time_point::min(),
                                 [&context, resource, owner, then = std::move(then)]() mutable {
                                     release_on_loop(context, resource, owner, std::move(then));
                                 });
        return;
    }
    const std::string& line = resource.str();
    // The next waiter of this client (the front of its line) is named, so that the release can
    // hand it the lock without its ever taking a place in the coordinator's line.
    const auto next = context.lines.name_successor(line, steady_clock::now(), context.options.command_timeout);
    context.session.release(
        resource, owner, next,
        [&context, resource, owner = owner.str(), then = std::move(then)](Result<ReleaseReply> reply) mutable {
            const std::string& line = resource.str();
            context.lines.release(line, owner);
            // The grant first: it is on the path of whoever waits next. A grant to a waiter the
            // lines do not know is for a thread of the synchronous client (it shares the client id).
            if (reply && reply->granted && !context.lines.grant(line, reply->granted->owner, reply->granted->grant))
                context.coordinator.hand_over(resource, *reply->granted);
            // Nobody of this client holds it now (no grant, or one to a thread of the
            // synchronous client): a waiter that waited for a succession attempts.
            context.lines.after_release(line);
            then(reply ? Result<ReleaseStatus>(reply->status) : Result<ReleaseStatus>(std::unexpected(reply.error())));
        });
}

}  // namespace fencelock::detail

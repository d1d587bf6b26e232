#include "lock/async_acquire.hpp"

#include <memory>
#include <random>
#include <stdexcept>

#include "lock/calls/leave_line_call.hpp"
#include "lock/calls/release_call.hpp"
#include "lock/replica_ack.hpp"
#include "lock/scripts.hpp"
#include "redis/async_script.hpp"

namespace fencelock::detail {
namespace {

using std::chrono::steady_clock;
using Kind = AcquireStep::Kind;

std::uint64_t fresh_seed() {
    static std::atomic<std::uint64_t> counter{std::random_device{}()};
    return counter.fetch_add(0x9e3779b97f4a7c15ULL, std::memory_order_relaxed);
}

std::vector<std::string> wait_argv(const ReplicaAck& ack) {
    if (!ack.on()) return {};
    const WaitCommand wait(ack);
    const auto argv = wait.argv();
    return {argv.begin(), argv.end()};
}

bool takes_place(const AcquireOptions& o) { return o.fair && o.wait > std::chrono::milliseconds::zero(); }

class AsyncAcquire : public std::enable_shared_from_this<AsyncAcquire> {
public:
    AsyncAcquire(const AsyncLockContext& c, const ResourceName& r, const OwnerToken& owner, bool token_is_private,
                 const AcquireOptions& o, AcquireFinish finish)
        : context_(c),
          resource_(r),
          owner_(owner),
          options_(o),
          ack_(replica_ack(o)),
          finish_(std::move(finish)),
          rng_(fresh_seed()),
          loop_({.owner = owner,
                 .wait = o.wait,
                 .backoff = o.backoff,
                 .fair = o.fair,
                 .notifications = false,
                 .takes_place = takes_place(o),
                 .token_is_private = token_is_private,
                 .command_timeout = c.options.command_timeout,
                 .direct_grants = false,
                 .trust_grants = false,
                 .drift_factor = c.options.clock_drift_factor},
                rng_) {}

    void start() { drive(loop_.start(steady_clock::now(), false)); }

private:
    bool closing() const { return context_.closing.load(std::memory_order_acquire); }
    bool in_grace() const { return steady_clock::now() < context_.topology.grants_from(); }

    // Carries out `step`; an asynchronous one continues here from its completion.
    void drive(AcquireStep step) {
        switch (step.kind) {
            case Kind::attempt: return attempt();
            case Kind::sleep: {
                auto self = shared_from_this();
                auto wake = [self] { self->drive(self->loop_.waited(false, self->closing())); };
                if (closing() || !context_.loop.post_at(steady_clock::now() + step.delay, std::move(wake)))
                    return drive(loop_.waited(false, true));
                return;
            }
            case Kind::leave_line:
                return then_done(scripts::leave_line,
                                 leave_line_script_call(context_.options.key_prefix, resource_, *step.owner));
            case Kind::release:
                return release_then(*step.owner, [self = shared_from_this()] { self->drive(self->loop_.done()); });
            case Kind::finish: {
                auto finish = std::move(finish_);
                return finish(step, loop_);
            }
            case Kind::join_line:
            case Kind::wait_for_release:
            case Kind::pass_on:
                break;  // the plan has no release notifications: never asked
        }
        AcquireStep fail{.kind = Kind::finish, .error = std::make_error_code(std::errc::operation_not_supported)};
        auto finish = std::move(finish_);
        finish(fail, loop_);
    }

    // One attempt, as LockClient::Impl::attempt makes it: nothing granted inside a promoted
    // master's failover grace, checked before sending and again on the reply.
    void attempt() {
        const auto now = steady_clock::now();
        // Nothing sent (unavailable, retryable): the loop gives up with its usual steps (the
        // release owed after a lost reply, leaving the fair line).
        if (closing())
            return drive(loop_.replied(std::unexpected(make_error_code(errc::unavailable)), false, now, now, true));
        if (in_grace())
            return drive(loop_.replied(std::unexpected(make_error_code(errc::failover_grace)), false, now, now, false));
        sent_ = now;
        // Without release messages only a fair waiter keeps a place (LockClient::Impl::wait_place).
        const auto place = takes_place(options_) ? WaitPlace::fair_line : WaitPlace::none;
        auto self = shared_from_this();
        run_script_async(
            context_.loop, scripts::acquire,
            acquire_script_call(context_.options.key_prefix, resource_, owner_, options_, context_.holder, place,
                                LocalLine::empty, DirectGrants::refused),
            wait_argv(ack_), [self](std::expected<BatchThen, std::error_code> batch) {
                std::expected<AcquireReply, std::error_code> reply =
                    batch ? decode_acquire_batch(*batch, self->ack_) : std::unexpected(batch.error());
                // A new grant found inside the grace is given back before anyone hears of it (and
                // before the loop goes on, as LockClient waits for that release).
                if (reply && reply->acquired && !(reply->reacquired && !reply->handed) && self->in_grace()) {
                    return self->release_then(self->owner_, [self] {
                        self->replied(std::unexpected(make_error_code(errc::failover_grace)));
                    });
                }
                self->replied(reply);
            });
    }

    void replied(const std::expected<AcquireReply, std::error_code>& reply) {
        drive(loop_.replied(reply, false, sent_, steady_clock::now(), closing()));
    }

    // Best effort (leave_line, release): whatever the reply, the loop goes on.
    void then_done(const ScriptSource& script, OwnedScriptCall call) {
        auto self = shared_from_this();
        run_script_async(context_.loop, script, std::move(call), {},
                         [self](std::expected<BatchThen, std::error_code>) { self->drive(self->loop_.done()); });
    }

    // Compare-and-delete for `owner`, then `next`, whatever the reply (best effort).
    template <typename Next>
    void release_then(const OwnerToken& owner, Next next) {
        run_script_async(context_.loop, scripts::release,
                         release_script_call(context_.options.key_prefix, resource_, owner), {},
                         [next = std::move(next)](std::expected<BatchThen, std::error_code>) mutable { next(); });
    }

    const AsyncLockContext& context_;
    const ResourceName resource_;
    const OwnerToken owner_;  // the plan's: every attempt sends the same token
    const AcquireOptions options_;
    const ReplicaAck ack_;
    AcquireFinish finish_;
    std::mt19937_64 rng_;
    AcquireLoop loop_;  // after rng_: it keeps a reference
    steady_time sent_{};
};

}  // namespace

void start_async_acquire(const AsyncLockContext& context, const ResourceName& resource, const OwnerToken& owner,
                         bool token_is_private, const AcquireOptions& options, AcquireFinish finish) {
    auto acquisition =
        std::make_shared<AsyncAcquire>(context, resource, owner, token_is_private, options, std::move(finish));
    // Started on the loop thread, so that even an acquisition that ends before sending anything
    // (inside the failover grace) completes there, never on the caller's thread.
    auto start = [acquisition] { acquisition->start(); };
    if (!context.loop.post_at(std::chrono::steady_clock::time_point::min(), std::move(start)))
        throw std::logic_error("start_async_acquire: the loop is stopping");  // its client outlives it
}

}  // namespace fencelock::detail

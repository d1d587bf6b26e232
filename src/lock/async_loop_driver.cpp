// AsyncLockClient on the coordinator's event loop (coordinator/async_session.hpp): each
// operation is a chain of round trips and timers on the client's own loop (lock/async_acquire.hpp),
// with no thread per operation. It shares LockClient's rules through ClientCore.
#include <condition_variable>
#include <mutex>
#include <optional>

#include "lock/async_acquire.hpp"
#include "lock/async_driver.hpp"
#include "lock/client_core.hpp"
#include "lock/client_results.hpp"
#include "lock/lock_events.hpp"

namespace fencelock::detail {
namespace {

void nothing_to_undo(const auto&) {}

// Counts the operations under way, so that closing can wait for them.
class LoopDriver final : public AsyncDriver {
public:
    LoopDriver(ClientCore& core, std::unique_ptr<AsyncSession> session)
        : core_(core),
          session_(std::move(session)),
          context_{*session_, *core.coordinator, core.options, closing_, lines_} {}
    ~LoopDriver() override { close(); }

    // Ends the waits, then waits for every operation to complete; idempotent.
    void close() override {
        {
            std::lock_guard lock(mutex_);
            closing_.store(true, std::memory_order_release);
        }
        session_->hurry();  // sleeping acquisitions wake, see `closing` and give up
        std::unique_lock lock(mutex_);
        idle_.wait(lock, [&] { return under_way_ == 0; });
    }

    void acquire(const ResourceName& resource, const AcquireOptions& options, Callback<Acquisition> done) override {
        const OwnerToken owner = OwnerToken::generate();
        acquire_on_loop<Acquisition>(resource, owner, options, std::move(done),
                                     lease_for(resource, owner, core_.options.clock_drift_factor),
                                     nothing_to_undo<Result<Acquisition>>);
    }

    void renew(const ResourceName& resource, const OwnerToken& owner, milliseconds lease,
               Callback<Renewal> done) override {
        auto completion = begin(done);
        if (!completion) return;
        const auto& options = core_.options;
        const auto sent = std::chrono::steady_clock::now();
        session_->renew(resource, owner, lease,
                        [&options, resource, owner, lease, sent,
                         done = std::move(*completion)](const Result<RenewReply>& reply) mutable {
                            done(reported_renewal(options, resource, owner, lease, reply, sent));
                        });
    }

    void release(const ResourceName& resource, const OwnerToken& owner, Callback<ReleaseStatus> done) override {
        auto completion = begin(done);
        if (!completion) return;
        const auto& options = core_.options;
        release_on_loop(
            context_, resource, owner,
            [&options, resource, owner, done = std::move(*completion)](const Result<ReleaseStatus>& result) mutable {
                report_release(options.observer.get(), resource, owner, result, std::nullopt);
                done(result);
            });
    }

    void hold(const ResourceName& resource, const AcquireOptions& options, KeepOptions keep,
              Callback<Holding> done) override {
        auto keeper = core_.keeper_instance();
        const OwnerToken owner = OwnerToken::generate();
        auto state = core_.kept_lease(resource, owner, options, std::move(keep));
        keeper->add(state);  // before the request: a grant is never unknown to the keeper
        acquire_on_loop<Holding>(resource, owner, options, std::move(done), ClientCore::held_lease_for(keeper, state),
                                 [keeper, state](const Result<Holding>& result) {
                                     if (!result || !result->acquired()) keeper->remove(state);
                                 });
    }

private:
    // One counted operation's callback: completes exactly once, with an error if the operation
    // is abandoned (an exception, e.g. bad_alloc, between begin() and its reply), so that
    // closing never waits for it in vain.
    template <typename T>
    class Completion {
    public:
        Completion(LoopDriver& driver, Callback<T> done) : driver_(&driver), done_(std::move(done)) {}
        Completion(Completion&& other) noexcept
            : driver_(std::exchange(other.driver_, nullptr)), done_(std::move(other.done_)) {}
        Completion& operator=(Completion&&) = delete;
        ~Completion() {
            if (driver_) (*this)(std::unexpected(std::make_error_code(std::errc::not_enough_memory)));
        }
        void operator()(Result<T> result) { std::exchange(driver_, nullptr)->end(done_, std::move(result)); }

    private:
        LoopDriver* driver_;
        Callback<T> done_;
    };

    // Counts an operation in, or completes `done` at once (on this thread) with
    // operation_canceled once closing began.
    template <typename T>
    std::optional<Completion<T>> begin(Callback<T>& done) {
        {
            std::lock_guard lock(mutex_);
            if (!closing_.load(std::memory_order_relaxed)) {
                ++under_way_;
                return Completion<T>(*this, std::move(done));
            }
        }
        done(cancelled());
        return std::nullopt;
    }

    // Completes an operation: its callback returns before closing may go on.
    template <typename T>
    void end(Callback<T>& done, Result<T> result) {
        done(std::move(result));
        std::lock_guard lock(mutex_);
        if (--under_way_ == 0) idle_.notify_all();
    }

    bool closing_now() const { return closing_.load(std::memory_order_acquire); }

    // One acquisition, its result built by `on_granted` as LockClient builds it. One that ends
    // after closing began gives its lease back and reports cancelled.
    template <typename Out, typename OnGranted, typename Undo>
    void acquire_on_loop(const ResourceName& r, const OwnerToken& owner, const AcquireOptions& o, Callback<Out> done,
                         OnGranted on_granted, Undo undo) {
        auto completion = begin(done);
        if (!completion) return undo(Result<Out>(cancelled()));
        const auto started = std::chrono::steady_clock::now();
        start_async_acquire(
            context_, r, owner, true, o,
            [this, r, owner, o, started, done = std::move(*completion), on_granted = std::move(on_granted),
             undo = std::move(undo)](const AcquireStep& step, const AcquireLoop& loop) mutable {
                auto result = finish_acquisition<Out>(step, loop, on_granted);
                core_.report(step, r, owner, o, loop, started);
                undo(result);
                // Closing ended the wait, or came before the caller could hear of the lease:
                // the lease goes back before the operation counts as complete. Read once: a
                // lease must never be dropped between two readings.
                const bool closing = closing_now();
                if (closing && result && result->acquired())
                    return give_back(*result, [done = std::move(done)]() mutable { done(Result<Out>(cancelled())); });
                done(closing ? Result<Out>(cancelled()) : std::move(result));
            });
    }

    template <typename Then>
    void give_back(Acquisition& got, Then then) {
        const auto& options = core_.options;
        release_on_loop(
            context_, got.lease->resource, got.lease->owner,
            [&options, lease = *got.lease, then = std::move(then)](const Result<ReleaseStatus>& result) mutable {
                report_release(options.observer.get(), lease.resource, lease.owner, result, std::nullopt);
                then();
            });
    }
    template <typename Then>
    void give_back(Holding& got, Then then) {
        got.lease.reset();  // a HeldLease releases when destroyed (a round trip on the pool)
        then();
    }

    ClientCore& core_;
    std::unique_ptr<AsyncSession> session_;  // its own connection; first: its thread ends last
    std::atomic<bool> closing_{false};
    AsyncWaitLines lines_;  // loop thread only
    AsyncLockContext context_;
    std::mutex mutex_;
    std::condition_variable idle_;
    std::size_t under_way_ = 0;
};

}  // namespace

std::unique_ptr<AsyncDriver> make_loop_driver(ClientCore& core, std::unique_ptr<AsyncSession> session) {
    return std::make_unique<LoopDriver>(core, std::move(session));
}

}  // namespace fencelock::detail

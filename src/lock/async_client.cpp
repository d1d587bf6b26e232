// AsyncLockClient. On one server or a Sentinel-managed master, each operation is a chain of
// script calls and timers on the client's own event loop (lock/async_acquire.hpp): no thread
// per operation. On a Cluster, whose redirects and per-node connections the loop does not
// follow, each operation is a job on the runner threads (lock/async_runners.hpp) that calls the
// synchronous LockClient. Both share LockClient's rules through its Impl.
#include "fencelock/async_client.hpp"

#include <condition_variable>
#include <mutex>
#include <optional>
#include <stop_token>
#include <system_error>

#include "coordinator/redis/redis_coordinator.hpp"
#include "coordinator/redis/scripts.hpp"
#include "lock/async_acquire.hpp"
#include "lock/async_runners.hpp"
#include "lock/client_core.hpp"
#include "lock/client_gate.hpp"
#include "lock/client_results.hpp"
#include "lock/lock_events.hpp"
#include "redis/async_script.hpp"

namespace fencelock {

std::expected<void, OptionError> AsyncOptions::validate() const {
    if (runners == 0) return std::unexpected(OptionError{"runners", "must be at least 1"});
    return {};
}

namespace {
std::unexpected<std::error_code> cancelled() {
    return std::unexpected(std::make_error_code(std::errc::operation_canceled));
}

AcquireOptions single_attempt(AcquireOptions options) {
    options.wait = milliseconds::zero();
    return options;
}

}  // namespace

struct AsyncLockClient::Impl {
    // The event-loop mode: counts the operations under way so that destruction can wait for them.
    struct LoopMode {
        // Redis only, for now: the loop speaks to the Redis coordinator's endpoint itself
        // (docs/DESIGN.md, "Layout").
        explicit LoopMode(detail::ClientCore& sync)
            : LoopMode(sync.options, detail::redis_coordinator(*sync.coordinator)) {}
        LoopMode(const ClientOptions& options, detail::RedisCoordinator& redis)
            : loop(redis.settings()),
              context{loop,
                      options,
                      redis.holder(),
                      *detail::topology_of(redis.settings()),
                      closing,
                      lines,
                      [&redis](const std::string& channel, const detail::GrantMessage& g) {
                          redis.hand_to_waiter(channel, g);
                      },
                      redis.capabilities()} {}

        ~LoopMode() { close(); }

        // Ends the waits, then waits for every operation to complete; idempotent.
        void close() {
            {
                std::lock_guard lock(mutex);
                closing.store(true, std::memory_order_release);
            }
            loop.hurry();  // sleeping acquisitions wake, see `closing` and give up
            std::unique_lock lock(mutex);
            idle.wait(lock, [&] { return under_way == 0; });
        }

        // Counts an operation in: false once destruction began.
        bool begin() {
            std::lock_guard lock(mutex);
            if (closing.load(std::memory_order_relaxed)) return false;
            ++under_way;
            return true;
        }

        // Completes an operation: its callback returns before destruction may go on.
        template <typename T>
        void end(Callback<T>& done, Result<T> result) {
            done(std::move(result));
            std::lock_guard lock(mutex);
            if (--under_way == 0) idle.notify_all();
        }

        bool closing_now() const { return closing.load(std::memory_order_acquire); }

        detail::AsyncLoop loop;  // its own connection; the sync client's topology
        std::atomic<bool> closing{false};
        detail::AsyncWaitLines lines;  // loop thread only
        detail::AsyncLockContext context;
        std::mutex mutex;
        std::condition_variable idle;
        std::size_t under_way = 0;
    };

    // One counted operation's callback: completes exactly once, with an error if the operation
    // is abandoned (an exception, e.g. bad_alloc, between begin() and its reply), so that
    // destruction never waits for it in vain.
    template <typename T>
    class Completion {
    public:
        Completion(LoopMode& mode, Callback<T> done) : mode_(&mode), done_(std::move(done)) {}
        Completion(Completion&& other) noexcept
            : mode_(std::exchange(other.mode_, nullptr)), done_(std::move(other.done_)) {}
        Completion& operator=(Completion&&) = delete;
        ~Completion() {
            if (mode_) (*this)(std::unexpected(std::make_error_code(std::errc::not_enough_memory)));
        }
        void operator()(Result<T> result) { std::exchange(mode_, nullptr)->end(done_, std::move(result)); }

    private:
        LoopMode* mode_;
        Callback<T> done_;
    };

    // Counts an operation in, or completes `done` at once (on this thread) with
    // operation_canceled once destruction began.
    template <typename T>
    std::optional<Completion<T>> begin(Callback<T>& done) {
        if (native->begin()) return Completion<T>(*native, std::move(done));
        done(cancelled());
        return std::nullopt;
    }

    Impl(LockClient c, std::size_t runner_count) : client(std::move(c)) {
        if (client.options().endpoint.uses_cluster()) runners.emplace(runner_count);
        else native.emplace(sync());
    }
    ~Impl() { close(); }

    // Called by ~AsyncLockClient while the client is whole: a callback may still issue an
    // operation meanwhile (it completes cancelled).
    void close() {
        if (native) return native->close();
        stop.request_stop();  // ends the waits of acquisitions under way
        runners->close();
    }

    detail::ClientCore& sync() { return detail::ClientGate::core(client); }

    // Runner mode: queues `work` (LockClient& -> Result<T>). A result that comes after
    // destruction began is reported cancelled, and `give_back` undoes what it got (a lease).
    template <typename T, typename Work, typename GiveBack>
    void submit(Callback<T> done, Work work, GiveBack give_back) {
        runners->post([this, done = std::move(done), work = std::move(work),
                       give_back = std::move(give_back)](bool closing) mutable {
            if (closing || closing_now()) return done(cancelled());
            Result<T> result = work(client, stop.get_token());
            if (closing_now()) {
                if (result) give_back(client, *result);
                return done(cancelled());
            }
            done(std::move(result));
        });
    }

    // Stop is requested before the runners close: a wait it ended (no lease, no error) must
    // still report cancelled, and a job taken in between must not start its work.
    bool closing_now() const { return stop.stop_requested() || runners->closing(); }

    // Loop mode: one acquisition, its result built by `on_granted` as LockClient builds it.
    // One that ends after destruction began gives its lease back and reports cancelled.
    template <typename Out, typename OnGranted, typename Undo>
    void acquire_on_loop(const ResourceName& r, const OwnerToken& owner, bool token_is_private, const AcquireOptions& o,
                         Callback<Out> done, OnGranted on_granted, Undo undo) {
        auto completion = begin(done);
        if (!completion) return undo(Result<Out>(cancelled()));
        const auto started = std::chrono::steady_clock::now();
        detail::start_async_acquire(
            native->context, r, owner, token_is_private, o,
            [this, r, owner, o, started, done = std::move(*completion), on_granted = std::move(on_granted),
             undo = std::move(undo)](const detail::AcquireStep& step, const detail::AcquireLoop& loop) mutable {
                auto result = detail::finish_acquisition<Out>(step, loop, on_granted);
                sync().report(step, r, owner, o, loop, started);
                undo(result);
                // Destruction ended the wait, or came before the caller could hear of the lease:
                // the lease goes back before the operation counts as complete. Read once: a
                // lease must never be dropped between two readings.
                const bool closing = native->closing_now();
                if (closing && result && result->acquired())
                    return give_back(*result, [done = std::move(done)]() mutable { done(Result<Out>(cancelled())); });
                done(closing ? Result<Out>(cancelled()) : std::move(result));
            });
    }

    template <typename Then>
    void give_back(Acquisition& got, Then then) {
        const auto& options = client.options();
        detail::release_on_loop(
            native->context, got.lease->resource, got.lease->owner,
            [&options, lease = *got.lease, then = std::move(then)](const Result<ReleaseStatus>& result) mutable {
                detail::report_release(options.observer.get(), lease.resource, lease.owner, result, std::nullopt);
                then();
            });
    }
    template <typename Then>
    void give_back(Holding& got, Then then) {
        got.lease.reset();  // a HeldLease releases when destroyed (a round trip on the pool)
        then();
    }

    LockClient client;
    std::optional<LoopMode> native;  // one server or Sentinel
    std::stop_source stop;
    std::optional<detail::AsyncRunners> runners;  // Cluster; last: its threads end before the client they use
};

namespace {
// An acquisition that came too late for its caller: the lease goes back at once.
void give_back_acquisition(LockClient& client, Acquisition& got) {
    if (got.acquired()) (void)client.release(got.lease->resource, got.lease->owner);
}
void nothing_to_give_back(LockClient&, const auto&) {}
void nothing_to_undo(const auto&) {}
}  // namespace

std::expected<AsyncLockClient, OptionError> AsyncLockClient::create(ClientOptions options, AsyncOptions async) {
    if (auto ok = async.validate(); !ok) return std::unexpected(ok.error());
    auto client = LockClient::create(std::move(options));
    if (!client) return std::unexpected(client.error());
    return AsyncLockClient(std::make_unique<Impl>(std::move(*client), async.runners));
}

AsyncLockClient::AsyncLockClient(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
AsyncLockClient::AsyncLockClient(AsyncLockClient&&) noexcept = default;
AsyncLockClient& AsyncLockClient::operator=(AsyncLockClient&&) noexcept = default;
AsyncLockClient::~AsyncLockClient() {
    if (impl_) impl_->close();  // before impl_ goes: a callback may still call into this client
}

LockClient& AsyncLockClient::sync() noexcept { return impl_->client; }

void AsyncLockClient::try_acquire(const ResourceName& resource, const AcquireOptions& options,
                                  Callback<Acquisition> done) {
    acquire(resource, single_attempt(options), std::move(done));
}

void AsyncLockClient::acquire(const ResourceName& resource, const AcquireOptions& options, Callback<Acquisition> done) {
    detail::require_valid(options, impl_->client.options().command_timeout);
    if (!impl_->native) {
        return impl_->submit<Acquisition>(
            std::move(done),
            [resource, options](LockClient& c, std::stop_token stop) { return c.acquire(resource, options, stop); },
            give_back_acquisition);
    }
    const OwnerToken owner = OwnerToken::generate();
    impl_->acquire_on_loop<Acquisition>(resource, owner, true, options, std::move(done),
                                        detail::lease_for(resource, owner, impl_->client.options().clock_drift_factor),
                                        nothing_to_undo<Result<Acquisition>>);
}

void AsyncLockClient::renew(const ResourceName& resource, const OwnerToken& owner, milliseconds lease,
                            Callback<Renewal> done) {
    detail::require_valid_lease(lease);
    if (!impl_->native) {
        return impl_->submit<Renewal>(
            std::move(done),
            [resource, owner, lease](LockClient& c, std::stop_token) { return c.renew(resource, owner, lease); },
            nothing_to_give_back<Renewal>);
    }
    auto completion = impl_->begin(done);
    if (!completion) return;
    const auto& options = impl_->client.options();
    const auto sent = std::chrono::steady_clock::now();
    detail::run_script_async(
        impl_->native->loop, detail::scripts::renew,
        detail::renew_script_call(options.key_prefix, resource, owner, lease), {},
        [&options, resource, owner, lease, sent, done = std::move(*completion)](auto batch) mutable {
            done(detail::reported_renewal(options, resource, owner, lease, detail::decode_renew_then(batch), sent));
        });
}

void AsyncLockClient::release(const ResourceName& resource, const OwnerToken& owner, Callback<ReleaseStatus> done) {
    if (!impl_->native) {
        return impl_->submit<ReleaseStatus>(
            std::move(done), [resource, owner](LockClient& c, std::stop_token) { return c.release(resource, owner); },
            nothing_to_give_back<ReleaseStatus>);
    }
    auto completion = impl_->begin(done);
    if (!completion) return;
    const auto& options = impl_->client.options();
    detail::release_on_loop(
        impl_->native->context, resource, owner,
        [&options, resource, owner, done = std::move(*completion)](const Result<ReleaseStatus>& result) mutable {
            detail::report_release(options.observer.get(), resource, owner, result, std::nullopt);
            done(result);
        });
}

void AsyncLockClient::hold(const ResourceName& resource, const AcquireOptions& options, KeepOptions keep,
                           Callback<Holding> done) {
    detail::require_valid(keep, options, impl_->client.options());
    if (!impl_->native) {
        return impl_->submit<Holding>(
            std::move(done),
            [resource, options, keep = std::move(keep)](LockClient& c, std::stop_token stop) {
                return c.hold(resource, options, keep, stop);
            },
            [](LockClient&, Holding& got) { got.lease.reset(); });  // a HeldLease releases when destroyed
    }
    auto& sync = impl_->sync();
    auto keeper = sync.keeper_instance();
    const OwnerToken owner = OwnerToken::generate();
    auto state = sync.kept_lease(resource, owner, options, std::move(keep));
    keeper->add(state);  // before the request: a grant is never unknown to the keeper
    impl_->acquire_on_loop<Holding>(resource, owner, true, options, std::move(done),
                                    detail::ClientCore::held_lease_for(keeper, state),
                                    [keeper, state](const Result<Holding>& result) {
                                        if (!result || !result->acquired()) keeper->remove(state);
                                    });
}

}  // namespace fencelock

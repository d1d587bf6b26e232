#pragma once
/// AsyncLockClient: the lock client's operations with a completion callback instead of a
/// blocking return, so one thread can drive many lockers.
///
/// How operations run. On one server or a Sentinel-managed master (redis://, redis-sentinel://)
/// the client has an event loop of its own: one thread and one connection carry every
/// operation, each a chain of script calls and timers, and commands issued while a round trip
/// is under way leave together in the next write. The calls, replies, failover grace, replica
/// WAIT and retries with the same owner token are the synchronous LockClient's. One difference:
/// the loop hears no release messages, only this client's own releases. A release by this
/// client hands the lock straight to this client's next waiter (one round trip per handoff, no
/// attempt: the fastest way to take turns on a hot resource within one process), but a wait for
/// a lock another client holds polls with full-jitter backoff (AcquireOptions::backoff) instead
/// of waking on that client's release. On a Redis Cluster (redis-cluster://) each
/// operation is carried out by one of AsyncOptions::runners threads calling the synchronous
/// client, so redirects and per-node connections behave exactly as there.
///
/// Threads. Every callback runs on the client's loop thread (Cluster: a runner thread), never
/// on the caller's thread and never while the client holds an internal lock, so a callback may
/// call back into the client (release in the callback of acquire, or the next operation).
/// Callbacks must not block: every operation of the client waits behind one that does (the
/// synchronous calls of sync() and a Holding's destruction make a round trip on another
/// connection). Callbacks must not throw: an exception leaving a callback ends the process
/// (std::terminate).
///
/// Destruction. The destructor ends waiting acquisitions at once, lets the requests under way
/// finish (each bounded by the command timeout) and completes every operation exactly once. An
/// acquisition that ends after destruction began gets std::errc::operation_canceled, and a
/// lease it got is released again (best effort); a renew or release already sent completes
/// with its result. An operation issued once destruction began (from a callback) completes at
/// once, on the issuing thread, with operation_canceled. The destructor returns when every
/// callback has returned. Do not destroy the client from one of its callbacks.

#include <cstddef>
#include <expected>
#include <functional>
#include <future>
#include <memory>
#include <utility>

#include "fencelock/client.hpp"

namespace fencelock {

struct AsyncOptions {
    /// On a Redis Cluster only: runner threads, how many operations are carried out at once
    /// (each holds its runner for its round trips, or for the whole wait of an acquire).
    /// Default 4; at least 1.
    std::size_t runners = 4;

    std::expected<void, OptionError> validate() const;
};

/// A completion callback, called exactly once.
template <typename T>
using Callback = std::move_only_function<void(Result<T>)>;

/// The thin future adaptor: a callback that fulfils the returned future.
///     auto [done, result] = fencelock::promised<Acquisition>();
///     client.try_acquire(resource, options, std::move(done));
///     result.get();  // blocks this thread only
template <typename T>
std::pair<Callback<T>, std::future<Result<T>>> promised() {
    std::promise<Result<T>> promise;
    auto future = promise.get_future();
    return {[p = std::move(promise)](Result<T> r) mutable { p.set_value(std::move(r)); }, std::move(future)};
}

class AsyncLockClient {
public:
    /// Validates both option sets; connections open lazily on the first operation.
    static std::expected<AsyncLockClient, OptionError> create(ClientOptions options, AsyncOptions async = {});

    AsyncLockClient(AsyncLockClient&&) noexcept;
    AsyncLockClient& operator=(AsyncLockClient&&) noexcept;
    ~AsyncLockClient();

    /// LockClient::try_acquire (a fresh owner token, one attempt), completed by `done`.
    /// Options that LockClient would refuse throw std::invalid_argument here, before queueing.
    void try_acquire(const ResourceName& resource, const AcquireOptions& options, Callback<Acquisition> done);
    /// LockClient::acquire: attempts until acquired or options.wait has elapsed.
    void acquire(const ResourceName& resource, const AcquireOptions& options, Callback<Acquisition> done);
    /// LockClient::renew.
    void renew(const ResourceName& resource, const OwnerToken& owner, milliseconds lease, Callback<Renewal> done);
    /// LockClient::release (compare-and-delete).
    void release(const ResourceName& resource, const OwnerToken& owner, Callback<ReleaseStatus> done);
    /// LockClient::hold: acquire, then renewed by the keeper until the Holding's lease is gone.
    void hold(const ResourceName& resource, const AcquireOptions& options, KeepOptions keep, Callback<Holding> done);

    /// The synchronous client underneath, e.g. for inspect() or keeper_stats(): the same
    /// options, topology and keeper (a hold()'s lease is renewed by it); its own connections.
    LockClient& sync() noexcept;

private:
    struct Impl;
    explicit AsyncLockClient(std::unique_ptr<Impl> impl) noexcept;
    std::unique_ptr<Impl> impl_;
};

}  // namespace fencelock

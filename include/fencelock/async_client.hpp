#pragma once
/// AsyncLockClient: the lock client's operations with a completion callback instead of a
/// blocking return, so one thread can drive many lockers.
///
/// Each operation is queued and carried out by one of the client's runner threads with the
/// synchronous LockClient's own logic (topology, failover grace, replica WAIT, Cluster
/// redirects, backoff and release notifications all behave exactly as in LockClient); the
/// calling thread returns at once.
///
/// Threads. Every callback runs on one of the runner threads, never on the caller's thread
/// and never while the client holds an internal lock, so a callback may call back into the
/// client (e.g. release in the callback of acquire, or issue the next operation). Callbacks
/// must not throw: an exception leaving a callback ends the process (std::terminate).
/// Operations run concurrently up to AsyncOptions::runners; more wait in FIFO order.
///
/// Destruction. The destructor stops waiting acquisitions, lets the operations under way
/// finish (each is bounded by the command timeout) and completes every operation exactly once:
/// one that had not started, or finished after destruction began, gets
/// std::errc::operation_canceled, and a lease it got is released again (best effort). It
/// returns when every callback has returned. Do not destroy the client from one of its callbacks.

#include <cstddef>
#include <expected>
#include <functional>
#include <future>
#include <memory>
#include <utility>

#include "fencelock/client.hpp"

namespace fencelock {

struct AsyncOptions {
    /// Runner threads: how many operations are carried out at once (each holds its runner for
    /// its round trips, or for the whole wait of an acquire). Default 4; at least 1.
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

    /// The synchronous client underneath (same connections, keeper and notifier), e.g. for
    /// inspect() or keeper_stats().
    LockClient& sync() noexcept;

private:
    struct Impl;
    explicit AsyncLockClient(std::unique_ptr<Impl> impl) noexcept;
    std::unique_ptr<Impl> impl_;
};

}  // namespace fencelock

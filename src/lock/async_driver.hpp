#pragma once
// How AsyncLockClient carries out its operations, chosen once when it is created: on the
// coordinator's event loop (async_loop_driver.cpp) when the coordinator can run one
// (CoordinatorCapabilities::async_loop), else as jobs on runner threads that call the
// synchronous LockClient (async_runner_driver.cpp; a Redis Cluster today). The client checks
// its arguments and hands each operation to its driver: one path per operation.
#include <memory>
#include <system_error>

#include "coordinator/async_session.hpp"
#include "fencelock/async_client.hpp"

namespace fencelock::detail {

struct ClientCore;

class AsyncDriver {
public:
    virtual ~AsyncDriver() = default;

    /// Ends the waits under way and waits until every operation has completed its callback;
    /// idempotent. An operation issued meanwhile (from a callback) completes cancelled. Must
    /// not be called from a callback.
    virtual void close() = 0;

    // AsyncLockClient's operations, their arguments already checked (require_valid).
    virtual void acquire(const ResourceName& resource, const AcquireOptions& options, Callback<Acquisition> done) = 0;
    virtual void renew(const ResourceName& resource, const OwnerToken& owner, milliseconds lease,
                       Callback<Renewal> done) = 0;
    virtual void release(const ResourceName& resource, const OwnerToken& owner, Callback<ReleaseStatus> done) = 0;
    virtual void hold(const ResourceName& resource, const AcquireOptions& options, KeepOptions keep,
                      Callback<Holding> done) = 0;
};

/// The event-loop driver over `session`, sharing `core`'s options, coordinator and keeper
/// (`core` outlives it).
std::unique_ptr<AsyncDriver> make_loop_driver(ClientCore& core, std::unique_ptr<AsyncSession> session);

/// The runner driver: `threads` threads calling `client` (which outlives it).
std::unique_ptr<AsyncDriver> make_runner_driver(LockClient& client, std::size_t threads);

/// What an operation that comes too late (its client is being destroyed) completes with.
inline std::unexpected<std::error_code> cancelled() {
    return std::unexpected(std::make_error_code(std::errc::operation_canceled));
}

}  // namespace fencelock::detail

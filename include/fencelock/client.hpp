#pragma once
/// LockClient: leases with fencing tokens on one Redis server.
///
/// Protocol (details in docs/DESIGN.md): for resource R, `lock:{R}` is a hash holding the
/// current lease (owner token, fence, timestamps, holder) with a Redis TTL; `fence:{R}` is a
/// counter that never expires. Acquire, renew, release and inspect are each one Lua script, so
/// every check-and-act runs atomically inside Redis.

#include <chrono>
#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "fencelock/error.hpp"
#include "fencelock/keeper.hpp"
#include "fencelock/lock_state.hpp"
#include "fencelock/options.hpp"
#include "fencelock/outcomes.hpp"
#include "fencelock/result.hpp"
#include "fencelock/types.hpp"

namespace fencelock {

/// A granted lease. A plain value: it does not renew or release itself.
struct Lease {
    ResourceName resource;
    OwnerToken owner;
    FencingToken fence;
    /// Remaining lease length Redis reported with the grant.
    milliseconds ttl;
    /// Local deadline after which this holder must assume the lease is gone: the send time of
    /// the acquiring request plus ttl * (1 - clock_drift_factor). Computed on steady_clock;
    /// the wall clock never decides validity.
    steady_time safe_until;
    /// True when Redis already held this lease for the same owner token (a retried request
    /// whose first reply was lost); the fence is the one issued the first time.
    bool reacquired = false;
};

/// Result of an acquisition: either a lease, or the lock is held by someone else.
struct Acquisition {
    /// Set when acquired.
    std::optional<Lease> lease;
    /// When not acquired: the current holder's remaining TTL at the last attempt.
    milliseconds holder_ttl{0};
    /// Attempts made (1 for try_acquire; 0 for a lease a release handed over directly, which
    /// came without an attempt of its own).
    unsigned attempts = 0;
    /// Attempts that did not get the lock (refused, or failed): all of them, less the one that
    /// got it, if one did.
    unsigned unsuccessful_attempts = 0;

    bool acquired() const noexcept { return lease.has_value(); }
};

struct Renewal {
    RenewStatus status;
    /// The new TTL (renewed only).
    milliseconds ttl{0};
    /// Local safe-until for the renewed lease, from the renew request's send time.
    steady_time safe_until{};
    /// Fence of the lease (renewed and max_hold_exceeded); renewal never changes it.
    std::optional<FencingToken> fence;
};

namespace detail {
class ClientGate;
}  // namespace detail

/// Thread-safe client: calls from any number of threads share `pool_size` multiplexed
/// connections. Its sockets are written only by its own threads, which block asynchronous
/// signals, so a write to a connection Redis closed cannot end the process with SIGPIPE. Redis
/// sockets are close-on-exec, so child processes do not inherit them.
/// Every call is bounded by the connect and command timeouts; a connection that timed out is
/// dropped and re-established on the next call. When Redis cannot be reached or fails, every
/// operation returns an error: never "acquired" (fail closed).
class LockClient {
public:
    /// Validates the options; connections are opened lazily on first use.
    static std::expected<LockClient, OptionError> create(ClientOptions options);

    LockClient(LockClient&&) noexcept;
    LockClient& operator=(LockClient&&) noexcept;
    ~LockClient();

    /// Whether this client's coordinator can take `options` as they are (checked after
    /// AcquireOptions::validate()). Redis takes every valid option. etcd keeps no fair line and
    /// no replica acknowledgement (each grant is committed by Raft before it is answered), and
    /// keeps leases in whole seconds of at least 2 s (docs/ETCD.md). The error names the field.
    /// acquire(), hold() and the async client throw std::invalid_argument for options that fail.
    std::expected<void, OptionError> supports(const AcquireOptions& options) const;

    /// One attempt with a fresh owner token.
    Result<Acquisition> try_acquire(const ResourceName& resource, const AcquireOptions& options);
    /// One attempt with a given owner token. If Redis already holds the lock for this token,
    /// returns the existing lease and fence unchanged (reacquired = true) without incrementing.
    Result<Acquisition> try_acquire(const ResourceName& resource, const OwnerToken& owner,
                                    const AcquireOptions& options);

    /// Attempts until acquired, `options.wait` has elapsed or `stop` is requested, sleeping
    /// with full-jitter backoff in between. One owner token for all attempts, so an attempt
    /// whose reply was lost is recovered by the next one. Transport errors are retried inside
    /// the wait; when the wait ends on an error, that error is returned (not "contended"). If
    /// the last attempt's outcome was unknown and the token was generated here (so the caller
    /// cannot retry with it), a best-effort release frees what Redis may have granted.
    Result<Acquisition> acquire(const ResourceName& resource, const AcquireOptions& options, std::stop_token stop = {});
    Result<Acquisition> acquire(const ResourceName& resource, const OwnerToken& owner, const AcquireOptions& options,
                                std::stop_token stop = {});

    /// Extends the lease to `lease` from now if `owner` still holds it and the max hold has
    /// not been reached (Redis decides both, from its own clock).
    Result<Renewal> renew(const ResourceName& resource, const OwnerToken& owner, milliseconds lease);

    /// Deletes the lock only if `owner` still holds it (compare-and-delete).
    Result<ReleaseStatus> release(const ResourceName& resource, const OwnerToken& owner);

    /// Like acquire(), and the lease is then renewed automatically by this client's keeper
    /// (one thread and one connection for all held leases, renewals pipelined) until it is
    /// released, destroyed or lost. The lease is registered with the keeper before the request
    /// is sent, so no granted lease exists that the keeper does not know about.
    Result<Holding> hold(const ResourceName& resource, const AcquireOptions& options);
    Result<Holding> hold(const ResourceName& resource, const AcquireOptions& options, KeepOptions keep,
                         std::stop_token stop = {});

    /// Counters of this client's keeper (all zero before the first hold()).
    KeeperStats keeper_stats() const;

    /// Reads the lock and its counter without changing anything.
    Result<LockInfo> inspect(const ResourceName& resource);

    const ClientOptions& options() const noexcept;

private:
    friend class detail::ClientGate;  // LockAdmin and AsyncLockClient share the client's state
    struct Impl;
    Result<Acquisition> acquire_with(const ResourceName& resource, const OwnerToken& owner, bool token_is_private,
                                     const AcquireOptions& options, std::stop_token stop);
    explicit LockClient(std::unique_ptr<Impl> impl) noexcept;
    std::unique_ptr<Impl> impl_;
};

}  // namespace fencelock

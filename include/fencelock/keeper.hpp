#pragma once
/// Kept leases: acquired through LockClient::hold(), renewed automatically by a keeper thread
/// shared by all leases of the client, and cancelled (stop token, callback, valid() == false)
/// the moment they can no longer be relied on.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string_view>
#include <system_error>

#include "fencelock/error.hpp"
#include "fencelock/options.hpp"
#include "fencelock/outcomes.hpp"
#include "fencelock/types.hpp"

namespace fencelock {

namespace detail {
struct KeptLease;
class Keeper;
struct ClientCore;
}  // namespace detail

struct LeaseLoss {
    ResourceName resource;
    FencingToken fence;
    LossReason reason;
};

struct KeepOptions {
    /// Time between renewals. Zero (the default) means lease / 3, so two renewals in a row can
    /// fail before the lease runs out. Must be shorter than the trusted part of the lease.
    milliseconds renew_every{0};
    /// Delay before retrying a renewal that failed or whose reply never came; never later than
    /// half the time left before safe_until. Default 100 ms.
    milliseconds retry_delay{100};
    /// Called once, on the keeper's timer thread, when the lease is lost: at its safe-until
    /// moment at the latest (plus scheduling delay), even while a renewal is still waiting
    /// for its reply. Keep it short: it delays the loss reports of other leases. Default none.
    std::function<void(const LeaseLoss&)> on_lost{};
    /// Called when the destructor's best-effort release fails (Redis error) or finds the lease
    /// held by someone else although it was not known to be lost. The failure is also logged
    /// to stderr. Default none.
    std::function<void(const ResourceName&, std::error_code)> on_release_error{};

    /// Checks the options against the lease they will keep.
    std::expected<void, OptionError> validate(milliseconds lease, double clock_drift_factor) const;
};

/// A lease kept alive by the client's keeper. Move-only; may be used and released from any
/// thread. Destroying it releases the lease (best effort; never throws).
class HeldLease {
public:
    HeldLease(HeldLease&&) noexcept;
    HeldLease& operator=(HeldLease&&) noexcept;
    ~HeldLease();

    const ResourceName& resource() const noexcept;
    const OwnerToken& owner() const noexcept;
    FencingToken fence() const noexcept;

    /// True while the lease is held and its local safe-until deadline has not passed. Once
    /// false, never true again.
    bool valid() const noexcept;
    /// Requested when the lease is lost; pass it to the work the lease protects.
    std::stop_token stop_token() const noexcept;
    /// The local deadline up to which the lease can be relied on (steady_clock).
    steady_time safe_until() const noexcept;
    /// Why the lease was lost, once it was.
    std::optional<LossReason> loss() const noexcept;
    /// Renewals Redis confirmed so far.
    std::uint64_t renewals() const noexcept;

    /// Stops renewing (waiting for a renewal already in flight), then deletes the lock if this
    /// owner still holds it. After this, valid() is false and the destructor does nothing.
    std::expected<ReleaseStatus, std::error_code> release();

private:
    friend struct detail::ClientCore;  // hold() in both clients
    HeldLease(std::shared_ptr<detail::KeptLease> state, std::shared_ptr<detail::Keeper> keeper) noexcept;
    std::shared_ptr<detail::KeptLease> state_;
    std::shared_ptr<detail::Keeper> keeper_;
};

/// Counters of a client's keeper, for tests, benchmarks and metrics.
struct KeeperStats {
    /// Pipelined round trips sent (each carries every renewal that was due).
    std::uint64_t batches = 0;
    std::uint64_t renewals_sent = 0;
    std::uint64_t renewals_confirmed = 0;
    /// Leases lost, by any reason.
    std::uint64_t leases_lost = 0;
    /// Worst delay between when a renewal was due and when it was sent (starvation, a slow
    /// batch ahead of it).
    std::chrono::microseconds max_send_lateness{0};
    /// Leases the keeper is renewing now.
    std::size_t leases_kept = 0;
    /// Clock probes sent at once, ahead of the probe interval, because a renewal's reply put
    /// its server's clock ahead of the last reading by more than the drift margin.
    std::uint64_t clock_probes_on_renewal = 0;
};

/// Result of LockClient::hold().
struct Holding {
    std::optional<HeldLease> lease;
    /// When not acquired: the current holder's remaining TTL at the last attempt.
    milliseconds holder_ttl{0};
    /// As Acquisition::attempts and Acquisition::unsuccessful_attempts.
    unsigned attempts = 0;
    unsigned unsuccessful_attempts = 0;

    bool acquired() const noexcept { return lease.has_value(); }
};

}  // namespace fencelock

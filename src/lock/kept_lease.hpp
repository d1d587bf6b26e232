#pragma once
// State of one kept lease, shared by its HeldLease handle and the keeper thread.
#include <atomic>
#include <mutex>
#include <stop_token>
#include <string>

#include "coordinator/renewal_channel.hpp"
#include "fencelock/keeper.hpp"
#include "lease/renewal.hpp"
#include "lease/renewal_schedule.hpp"

namespace fencelock::detail {

struct KeptLease {
    enum class State { pending, active, lost };

    KeptLease(ResourceName r, OwnerToken o, std::chrono::milliseconds lease_length, RenewalPolicy p, KeepOptions k,
              std::string address_, RenewDurability d)
        : resource(std::move(r)),
          owner(std::move(o)),
          lease(lease_length),
          policy(p),
          keep(std::move(k)),
          address(std::move(address_)),
          durability(d) {}

    const ResourceName resource;
    const OwnerToken owner;
    const std::chrono::milliseconds lease;
    const RenewalPolicy policy;
    const KeepOptions keep;
    /// Its lease as the keeper's renewal channel names it (RenewalChannel::lease_address).
    const std::string address;
    /// AcquireOptions::replicas: a renewal counts only once that many replicas acknowledged it.
    const RenewDurability durability;

    /// Its next renewal, for RenewalChannel::renew_batch (valid while the lease lives).
    RenewItem renewal() const noexcept { return {address, owner, lease, durability}; }

    std::atomic<std::uint64_t> fence{0};
    std::atomic<State> state{State::pending};
    std::atomic<bool> released{false};  ///< release() ran; the handle is done
    std::atomic<LossReason> reason{LossReason::expired};
    std::atomic<steady_time::rep> safe_until{0};  ///< steady_time ticks
    std::atomic<std::uint64_t> renewals{0};
    std::stop_source stop;

    steady_time acquired_at{};  ///< when it was granted (activate's granted_at); set once by activate()

    std::chrono::microseconds held_for(steady_time now) const noexcept {
        return std::chrono::duration_cast<std::chrono::microseconds>(now - acquired_at);
    }

    // Guarded by the keeper's mutex.
    steady_time next_renewal{};  ///< as planned in the keeper's schedule
    ScheduleSlot schedule;       ///< its place in the keeper's RenewalSchedule
    bool leaving = false;        ///< release() is taking it off the keeper
    bool loss_pending = false;   ///< marked lost; its stop token and on_lost have not finished

    steady_time deadline() const noexcept { return steady_time(steady_time::duration(safe_until.load())); }
    void set_deadline(steady_time t) noexcept { safe_until.store(t.time_since_epoch().count()); }
};

}  // namespace fencelock::detail

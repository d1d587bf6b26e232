#pragma once
// A client's state that its drivers share: its options, its coordinator and its keeper.
// LockClient::Impl is one (and adds only the blocking acquire loop); AsyncLockClient reaches it
// through ClientGate (client_gate.hpp), and LockAdmin only its coordinator.
#include <memory>
#include <mutex>

#include "coordinator/coordinator.hpp"
#include "fencelock/client.hpp"
#include "lease/acquire_loop.hpp"
#include "lock/lock_events.hpp"
#include "lock/renewal_keeper.hpp"

namespace fencelock::detail {

struct ClientCore {
    explicit ClientCore(ClientOptions o) : options(std::move(o)), coordinator(make_coordinator(options)) {}
    // The watch goes with the client (first, as it always did), though LockAdmin may keep the
    // coordinator for its pages.
    ~ClientCore() { coordinator->close_watch(); }
    ClientCore(const ClientCore&) = delete;
    ClientCore& operator=(const ClientCore&) = delete;

    // What the keeper keeps for a lease hold() is about to ask for.
    std::shared_ptr<KeptLease> kept_lease(const ResourceName& r, const OwnerToken& owner, const AcquireOptions& o,
                                          KeepOptions keep) {
        return make_kept_lease(*keeper_instance(), r, owner, o, std::move(keep), options.clock_drift_factor);
    }

    // hold()'s `on_granted`, in both clients: `keeper` starts renewing `state` from the grant,
    // and the caller gets the HeldLease (whose constructor only ClientCore may call).
    static auto held_lease_for(std::shared_ptr<Keeper> keeper, std::shared_ptr<KeptLease> state) {
        return [keeper = std::move(keeper), state = std::move(state)](Holding& out, const AcquireReply& reply,
                                                                      steady_time sent, steady_time granted_at) {
            keeper->activate(state, sent, reply.ttl, reply.fence, granted_at);
            out.lease.emplace(HeldLease(state, keeper));
        };
    }

    std::shared_ptr<Keeper> keeper_instance() {
        std::lock_guard lock(keeper_mutex);
        if (!keeper)
            keeper = make_keeper(coordinator, options.observer,
                                 ClockWatchTerms{options.clock_drift_factor, options.clock_probe_interval});
        return keeper;
    }

    void report(const AcquireStep& finish, const ResourceName& r, const OwnerToken& owner, const AcquireOptions& o,
                const AcquireLoop& loop, steady_time started) {
        report_acquire(options.observer.get(), finish, r, owner, o, loop, started);
    }

    ClientOptions options;
    std::shared_ptr<Coordinator> coordinator;
    std::mutex keeper_mutex;
    std::shared_ptr<Keeper> keeper;
};

}  // namespace fencelock::detail

#pragma once
// What only some coordinators do. The lease core's attempt policy reads it, so that a driver
// over a coordinator without one of these never asks for it (lease/attempt_policy.hpp); the
// coordinator seam reports it (coordinator/coordinator.hpp, Coordinator::capabilities()).

namespace fencelock::detail {

struct CoordinatorCapabilities {
    /// A release may hand the lease to a waiter in the same step (a direct grant).
    bool direct_grants = false;
    /// The coordinator keeps a fair (FIFO) line of waiters (AcquireOptions::fair).
    bool fair_line = false;
    /// Waiters hear releases (a watch), so none has to poll.
    bool release_watch = false;
    /// Coordinator::async_session() gives the asynchronous client an event loop; without one
    /// it runs the synchronous client on threads.
    bool async_loop = false;
    /// The leases expire by a server's clock that the keeper can read (RenewalChannel::read_clock)
    /// and must watch for forward steps (lease/server_clock_watch.hpp).
    bool server_clock = false;
};

}  // namespace fencelock::detail

#pragma once
#include <chrono>

// What only some coordinators do. The lease core's attempt policy reads it, so that a driver
// over a coordinator without one of these never asks for it (lease/attempt_policy.hpp); the
// coordinator seam reports it (coordinator/coordinator.hpp, Coordinator::capabilities()).

namespace fencelock::detail {

struct CoordinatorCapabilities {
    /// What messages call the coordinator ("Redis", "etcd").
    const char* name = "this coordinator";
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
    /// A grant can wait for replicas to acknowledge it (AcquireOptions::replicas).
    bool replica_acks = false;
    /// Leases are whole multiples of this (etcd: whole seconds); zero: any length.
    std::chrono::milliseconds lease_step{0};
    /// The shortest lease the coordinator keeps as asked (etcd raises shorter ones).
    std::chrono::milliseconds min_lease{0};
};

}  // namespace fencelock::detail

#pragma once
// The coordinator's event loop for one asynchronous client (AsyncLockClient): the seam's round
// trips with completions instead of a blocked thread, and the loop's timers, so that one loop
// thread drives any number of acquisitions (lock/async_acquire.hpp).
//
// Every completion and every task runs on the loop thread, between I/O turns and without a lock
// of the session: it may start the next call or post the next task, and it must not block
// (every operation of the client waits behind it). Each call reads its arguments before it
// returns; a callback owns what it captures.
//
// What stays with the driver: the client's local lines (lease/async_wait_lines.hpp), which name
// the successor a release vouches for and take the grant its reply reports, and the failover
// grace (Coordinator::grants_from), checked before an attempt and on its reply.
#include <chrono>
#include <functional>
#include <optional>

#include "coordinator/coordinator.hpp"
#include "fencelock/outcomes.hpp"
#include "fencelock/result.hpp"
#include "fencelock/types.hpp"
#include "lease/async_wait_lines.hpp"
#include "lease/replies.hpp"

namespace fencelock::detail {

class AsyncSession {
public:
    /// Called once, on the loop thread, with the call's outcome.
    template <typename T>
    using Done = std::move_only_function<void(Result<T>)>;
    using Task = std::move_only_function<void()>;

    virtual ~AsyncSession() = default;

    /// One acquisition attempt (Coordinator::attempt, with the same outcomes: a grant the
    /// replicas did not acknowledge comes back with `unreplicated` set).
    virtual void attempt(const AttemptRequest& request, Done<AcquireReply> done) = 0;
    /// Owner-checked renewal (Coordinator::renew).
    virtual void renew(const ResourceName& resource, const OwnerToken& owner, std::chrono::milliseconds lease,
                       Done<RenewReply> done) = 0;
    /// Compare-and-delete by the holder, as this client: `successor`, this client's next waiter
    /// vouched for as waiting, may be granted the lease, and the reply says so (`granted`, its
    /// `release_sent` set), for the driver to hand it over.
    virtual void release(const ResourceName& resource, const OwnerToken& owner,
                         const std::optional<AsyncWaitLines::Successor>& successor, Done<ReleaseReply> done) = 0;
    /// Gives up a waiter's place in the coordinator's line: true, or false when it had none.
    virtual void leave_line(const ResourceName& resource, const OwnerToken& owner, Done<bool> done) = 0;

    /// Runs `task` on the loop thread at `when` (or at its next turn, if that passed). False
    /// when the loop is stopping: the task is then destroyed without running.
    virtual bool at(steady_time when, Task task) = 0;
    /// Every task posted so far runs at the loop's next turn, whatever its time: sleeping
    /// acquisitions wake when their client closes.
    virtual void hurry() noexcept = 0;
    /// Whether the calling thread is the loop's.
    virtual bool on_loop_thread() const noexcept = 0;
};

}  // namespace fencelock::detail

#pragma once
// One acquisition on the event loop (AsyncLockClient): the pure acquire loop
// (lease/acquire_loop.hpp) carried out with the coordinator's asynchronous round trips and loop
// timers (coordinator/async_session.hpp) instead of a blocked thread, so one loop thread drives
// any number of acquisitions.
//
// What differs from LockClient's driver: the loop hears no release messages, only this client's
// own releases. So a waiting acquisition joins its client's local line (lease/async_wait_lines.hpp)
// and takes direct grants from this client's releases only (told by the release's reply, and
// renewed to the lease asked when its place bounded it); it waits calmly (until the holder's lease would end) only on a
// lease of this client, and otherwise polls with full-jitter backoff. Everything else is the same code: the attempt's
// rules (lease/attempt_policy.hpp) and the coordinator's call and reply, the failover grace before and after each
// attempt, lost replies retried with the same owner token, and giving up (leave_line, release of a lease an unknown
// outcome may have granted).
#include <atomic>
#include <functional>

#include "coordinator/async_session.hpp"
#include "coordinator/coordinator.hpp"
#include "fencelock/client.hpp"
#include "lease/acquire_loop.hpp"
#include "lease/async_wait_lines.hpp"

namespace fencelock::detail {

/// What every asynchronous operation of one client shares; it outlives them all.
struct AsyncLockContext {
    AsyncSession& session;     ///< the coordinator's event loop: round trips and timers
    Coordinator& coordinator;  ///< the failover grace, and grants for the synchronous client's waiters
    const ClientOptions& options;
    const std::atomic<bool>& closing;  ///< the client is being destroyed: give up at the next step
    AsyncWaitLines& lines;             ///< loop thread only; a line per resource name
};

/// Called once, on the loop thread: the finish step and the loop that counted the attempts.
using AcquireFinish = std::move_only_function<void(const AcquireStep& finish, const AcquireLoop& loop)>;

/// Compare-and-delete of `owner`'s lease on the loop, as this client: a grant the release made
/// to a waiter of this client is handed to it before `then` runs (lib/handoff.lua); one for a
/// waiter the local lines do not know goes to the synchronous client's (Coordinator::hand_over).
/// From any thread: called off the loop thread, it starts at the loop's next turn.
void release_on_loop(const AsyncLockContext& context, const ResourceName& resource, const OwnerToken& owner,
                     std::move_only_function<void(const Result<ReleaseStatus>&)> then);

/// Starts one acquisition of `resource` for `owner` (`token_is_private`: the caller never saw
/// it) at the loop's next turn. `options` are valid (require_valid).
void start_async_acquire(const AsyncLockContext& context, const ResourceName& resource, const OwnerToken& owner,
                         bool token_is_private, const AcquireOptions& options, AcquireFinish finish);

}  // namespace fencelock::detail

#pragma once
// One acquisition on the event loop (AsyncLockClient): the pure acquire loop
// (lock/acquire_loop.hpp) carried out with script calls and loop timers instead of a blocked
// thread, so one loop thread drives any number of acquisitions.
//
// What differs from LockClient's driver: a waiting acquisition polls with full-jitter backoff
// (the plan has no release notifications), so it never joins a local line nor takes a direct
// grant; a fair one still takes its place in Redis's fair line. Everything else is the same
// code: the attempt's script call and reply, the failover grace before and after each attempt,
// the replica WAIT in the same write, lost replies retried with the same owner token, and
// giving up (leave_line, release of a lease an unknown outcome may have granted).
#include <atomic>
#include <functional>

#include "fencelock/client.hpp"
#include "lock/acquire_loop.hpp"
#include "lock/calls/acquire_call.hpp"
#include "redis/async_loop.hpp"
#include "redis/topology.hpp"

namespace fencelock::detail {

/// What every asynchronous operation of one client shares; it outlives them all.
struct AsyncLockContext {
    AsyncLoop& loop;
    const ClientOptions& options;
    const HolderMeta& holder;
    const Topology& topology;          ///< the promoted master's failover grace
    const std::atomic<bool>& closing;  ///< the client is being destroyed: give up at the next step
};

/// Called once, on the loop thread: the finish step and the loop that counted the attempts.
using AcquireFinish = std::move_only_function<void(const AcquireStep& finish, const AcquireLoop& loop)>;

/// Starts one acquisition of `resource` for `owner` (`token_is_private`: the caller never saw
/// it) at the loop's next turn. `options` are valid (require_valid).
void start_async_acquire(const AsyncLockContext& context, const ResourceName& resource, const OwnerToken& owner,
                         bool token_is_private, const AcquireOptions& options, AcquireFinish finish);

}  // namespace fencelock::detail

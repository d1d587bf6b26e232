#pragma once
// One acquisition on the event loop (AsyncLockClient): the pure acquire loop
// (lease/acquire_loop.hpp) carried out with script calls and loop timers instead of a blocked
// thread, so one loop thread drives any number of acquisitions.
//
// What differs from LockClient's driver: the loop hears no release messages, only this client's
// own releases. So a waiting acquisition joins its client's local line (lease/async_wait_lines.hpp)
// and takes direct grants from this client's releases only (told by the release's reply, and
// renewed to the lease asked when its place bounded it); it waits calmly (until the holder's lease would end) only on a
// lease of this client, and otherwise polls with full-jitter backoff. Everything else is the same code: the attempt's
// script call and reply, the failover grace before and after each attempt, the replica WAIT in
// the same write, lost replies retried with the same owner token, and giving up (leave_line,
// release of a lease an unknown outcome may have granted).
#include <atomic>
#include <functional>

#include "coordinator/redis/calls/acquire_call.hpp"
#include "coordinator/redis/calls/grant_message.hpp"
#include "coordinator/redis/calls/renew_call.hpp"
#include "fencelock/client.hpp"
#include "lease/acquire_loop.hpp"
#include "lease/async_wait_lines.hpp"
#include "lease/capabilities.hpp"
#include "redis/async_loop.hpp"
#include "redis/async_script.hpp"
#include "redis/topology.hpp"

namespace fencelock::detail {

/// What every asynchronous operation of one client shares; it outlives them all.
struct AsyncLockContext {
    AsyncLoop& loop;
    const ClientOptions& options;
    const HolderMeta& holder;
    const Topology& topology;          ///< the promoted master's failover grace
    const std::atomic<bool>& closing;  ///< the client is being destroyed: give up at the next step
    AsyncWaitLines& lines;             ///< loop thread only
    /// A release's grant to a waiter of this client that is not in `lines` (a thread of the
    /// synchronous client underneath, which shares the client id): hands it over there.
    std::function<void(const std::string& channel, const GrantMessage& g)> on_foreign_grant{};
    CoordinatorCapabilities capabilities{};  ///< what the client's coordinator can do
};

/// Called once, on the loop thread: the finish step and the loop that counted the attempts.
using AcquireFinish = std::move_only_function<void(const AcquireStep& finish, const AcquireLoop& loop)>;

/// A renew script's reply from its batch (a transport error, or a batch that is not one reply:
/// protocol_error).
std::expected<RenewReply, std::error_code> decode_renew_then(const std::expected<BatchThen, std::error_code>& batch);

/// Compare-and-delete of `owner`'s lease on the loop, as this client: a grant the release made
/// to a waiter of this client is handed to it before `then` runs (lib/handoff.lua). From any
/// thread: called off the loop thread, it starts at the loop's next turn.
void release_on_loop(const AsyncLockContext& context, const ResourceName& resource, const OwnerToken& owner,
                     std::move_only_function<void(const Result<ReleaseStatus>&)> then);

/// Starts one acquisition of `resource` for `owner` (`token_is_private`: the caller never saw
/// it) at the loop's next turn. `options` are valid (require_valid).
void start_async_acquire(const AsyncLockContext& context, const ResourceName& resource, const OwnerToken& owner,
                         bool token_is_private, const AcquireOptions& options, AcquireFinish finish);

}  // namespace fencelock::detail

#pragma once
// The coordinator seam: what a lock driver (LockClient, AsyncLockClient, the keeper, LockAdmin)
// asks of the service that keeps the leases, at the grain of one round trip. The lease core
// (src/lease/) decides; a coordinator carries each decision out and answers with the core's
// reply types (lease/replies.hpp). Redis is the one implementation
// (coordinator/redis/redis_coordinator.hpp). What a second backend must provide is listed in
// docs/DESIGN.md, "The coordinator seam".
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <stop_token>
#include <string_view>
#include <vector>

#include "coordinator/renewal_channel.hpp"
#include "fencelock/admin_records.hpp"
#include "fencelock/lock_state.hpp"
#include "fencelock/options.hpp"
#include "fencelock/result.hpp"
#include "fencelock/types.hpp"
#include "lease/capabilities.hpp"
#include "lease/replies.hpp"
#include "lease/wait_line.hpp"

namespace fencelock::detail {

class AsyncSession;  // coordinator/async_session.hpp

/// One attempt's request: who asks for which resource, on what terms, and where a refusal
/// leaves it waiting (lease/attempt_policy.hpp decides the last three).
struct AttemptRequest {
    const ResourceName& resource;
    const OwnerToken& owner;
    const AcquireOptions& options;
    WaitPlace place = WaitPlace::none;
    LocalLine local_line = LocalLine::empty;
    DirectGrants direct = DirectGrants::refused;
};

/// A waiter's seat in the release watch of one resource, held while it waits.
class WatchSeat {
public:
    virtual ~WatchSeat() = default;
    /// Waits until the watch is set up (true), `until` passes or `stop` is requested (false).
    virtual bool subscribed(steady_time until, std::stop_token stop) = 0;
    /// Whether the watch is set up now.
    virtual bool subscribed_now() const = 0;
    /// How many of this client's waiters for the resource are ahead of this one.
    virtual std::size_t ahead() const = 0;
    /// Waits for a release (true) until `until` or `stop` (false).
    virtual bool wait(steady_time until, std::stop_token stop) = 0;
    /// A direct grant handed to this waiter, once.
    virtual std::optional<DirectGrant> take_grant() = 0;
    /// Gives up the turn a release woke it for, so the next local waiter gets it.
    virtual void pass_on() = 0;
    /// The waiter took the lease: leaving the seat wakes nobody.
    virtual void granted() noexcept = 0;
};

class Coordinator {
public:
    virtual ~Coordinator() = default;

    virtual CoordinatorCapabilities capabilities() const noexcept = 0;

    /// One acquisition attempt.
    virtual Result<AcquireReply> attempt(const AttemptRequest& request) = 0;
    /// Owner-checked renewal: a new TTL of `lease`, the fence unchanged, within max hold.
    virtual Result<RenewReply> renew(const ResourceName& resource, const OwnerToken& owner,
                                     std::chrono::milliseconds lease) = 0;
    /// Compare-and-delete by the holder. It may grant the lease to this client's own next
    /// waiter (`granted` in the reply), which hand_over() then gives it.
    virtual Result<ReleaseReply> release(const ResourceName& resource, const OwnerToken& owner) = 0;
    /// Gives this client's waiter the lease a release() of `resource` granted it, and wakes it.
    /// A waiter no longer in the line needs nothing: it either took the lease by its own
    /// attempt ("already ours") or is giving up, and giving up leaves the line, which deletes a
    /// lease handed to the leaver. Releasing it here could delete the lease of a waiter that
    /// just took it by its attempt.
    virtual void hand_over(const ResourceName& resource, const GrantMessage& grant) = 0;
    /// Compare-and-delete that serves nobody of this client: for a grant given back at once.
    virtual Result<ReleaseStatus> give_back(const ResourceName& resource, const OwnerToken& owner) = 0;
    /// Gives up a waiter's place in the coordinator's line: true, or false when it had none.
    virtual Result<bool> leave_line(const ResourceName& resource, const OwnerToken& owner) = 0;
    /// The lock's last fence, the server's clock and its holder.
    virtual Result<LockInfo> inspect(const ResourceName& resource) = 0;

    /// Joins this client's watch of `resource`'s releases; `terms` when the waiter takes direct
    /// grants (a release by this client may then name it).
    virtual std::unique_ptr<WatchSeat> watch(const ResourceName& resource, const OwnerToken& owner,
                                             std::optional<SuccessorTerms> terms) = 0;
    /// Whether threads of this client wait for `resource` in its local line.
    virtual bool has_local_waiters(const ResourceName& resource) = 0;
    /// Whether this client's watch of `resource` is set up now.
    virtual bool watching(const ResourceName& resource) = 0;

    /// Ends this client's release watch (its thread and connections) when the client goes,
    /// though LockAdmin may keep the coordinator for its pages. No thread may be waiting.
    virtual void close_watch() noexcept = 0;

    /// A new event loop for one asynchronous client (coordinator/async_session.hpp), or null
    /// when this coordinator cannot run one (capabilities().async_loop is false). It must not
    /// outlive the coordinator.
    virtual std::unique_ptr<AsyncSession> async_session() = 0;

    /// The moment grants may start: later than now inside a promoted master's failover grace.
    virtual steady_time grants_from() const noexcept = 0;

    /// The keeper's own line to the coordinator (renewal_channel.hpp): a new connection of its
    /// own, opened lazily; making it sends nothing.
    virtual std::unique_ptr<RenewalChannel> renewal_channel() = 0;

    /// Operators' pages (LockAdmin): held locks matching `glob`, at most `limit`.
    virtual Result<std::vector<HeldLock>> list_locks(std::string_view glob, std::size_t limit) = 0;
    /// Deletes a stuck lock and appends an audit entry, atomically (the fence untouched).
    virtual Result<ForceReleaseOutcome> force_release(const ResourceName& resource,
                                                      const ForceReleaseRequest& request) = 0;
    /// Audit entries, newest first, for one resource or all, at most `limit`.
    virtual Result<std::vector<AuditEntry>> audit_log(const std::optional<ResourceName>& resource,
                                                      std::size_t limit) = 0;
};

/// The coordinator `options.endpoint` names (today always Redis: one server, Sentinel or
/// Cluster). Its connections open lazily; creating it sends nothing.
std::shared_ptr<Coordinator> make_coordinator(const ClientOptions& options);

}  // namespace fencelock::detail

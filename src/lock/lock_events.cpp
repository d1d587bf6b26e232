#include "lock/lock_events.hpp"

#include "common/log.hpp"

namespace fencelock::detail {

void report_renew(LockObserver* observer, const ResourceName& resource, const OwnerToken& owner,
                  const std::expected<RenewReply, std::error_code>& reply, std::chrono::milliseconds lease,
                  bool kept) noexcept {
    if (observer == nullptr) return;
    const std::expected<RenewStatus, std::error_code> result =
        reply ? std::expected<RenewStatus, std::error_code>(reply->status) : std::unexpected(reply.error());
    observer->on_renew(RenewEvent{resource, owner, result, reply ? reply->fence : std::nullopt, lease, kept});
}

void report_acquire(LockObserver* observer, const AcquireStep& finish, const ResourceName& resource,
                    const OwnerToken& owner, const AcquireOptions& options, const AcquireLoop& loop,
                    steady_time started) noexcept {
    const bool acquired = finish.result == AcquireResult::acquired;
    const auto behind = acquired ? finish.grant.clock_behind : std::nullopt;
    if (behind)
        log_event("warn", "redis_clock_behind",
                  {{"resource", resource.str()},
                   {"fence", finish.grant.fence.value()},
                   {"behind_ms", std::chrono::duration_cast<std::chrono::milliseconds>(*behind).count()},
                   {"hint",
                    "the Redis server's clock is behind the fences it issued before (stepped back, or a "
                    "promoted replica's clock lags): fences may go backwards across a failover that loses "
                    "writes; fix the server's clock (docs/RUNBOOK.md, clock behind)"}});
    if (observer == nullptr) return;
    const auto took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
    AcquireEvent event{resource,
                       owner,
                       finish.result,
                       acquired ? std::optional(finish.grant.fence) : std::nullopt,
                       loop.attempts(),
                       took,
                       options.lease,
                       acquired ? std::error_code{} : finish.error,
                       loop.contended_attempts(),
                       loop.failed_attempts(),
                       loop.direct_grants()};
    event.clock_behind = behind;
    observer->on_acquire(event);
}

void report_release(LockObserver* observer, const ResourceName& resource, const OwnerToken& owner,
                    const std::expected<ReleaseStatus, std::error_code>& result,
                    std::optional<std::chrono::microseconds> held_for) noexcept {
    if (observer == nullptr) return;
    observer->on_release(ReleaseEvent{resource, owner, result, held_for});
}

}  // namespace fencelock::detail

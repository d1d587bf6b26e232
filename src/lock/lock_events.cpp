#include "lock/lock_events.hpp"

namespace fencelock::detail {

void report_renew(LockObserver* observer, const ResourceName& resource, const OwnerToken& owner,
                  const std::expected<RenewReply, std::error_code>& reply, std::chrono::milliseconds lease,
                  bool kept) noexcept {
    if (observer == nullptr) return;
    const std::expected<RenewStatus, std::error_code> result =
        reply ? std::expected<RenewStatus, std::error_code>(reply->status) : std::unexpected(reply.error());
    observer->on_renew(RenewEvent{resource, owner, result, reply ? reply->fence : std::nullopt, lease, kept});
}

void report_acquire(LockObserver* observer, AcquireResult result, const ResourceName& resource, const OwnerToken& owner,
                    const AcquireOptions& options, std::optional<FencingToken> fence, const AcquireLoop& loop,
                    steady_time started, std::error_code ec) noexcept {
    if (observer == nullptr) return;
    const auto took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
    observer->on_acquire(AcquireEvent{resource, owner, result, fence, loop.attempts(), took, options.lease, ec,
                                      loop.contended_attempts(), loop.failed_attempts(), loop.direct_grants()});
}

void report_release(LockObserver* observer, const ResourceName& resource, const OwnerToken& owner,
                    const std::expected<ReleaseStatus, std::error_code>& result,
                    std::optional<std::chrono::microseconds> held_for) noexcept {
    if (observer == nullptr) return;
    observer->on_release(ReleaseEvent{resource, owner, result, held_for});
}

}  // namespace fencelock::detail

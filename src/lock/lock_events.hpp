#pragma once
// Observer plumbing shared by the client and the keeper: each event is built in one place
// (no-ops without an observer).
#include <chrono>
#include <expected>
#include <optional>
#include <system_error>

#include "fencelock/observer.hpp"
#include "lease/acquire_loop.hpp"
#include "lease/replies.hpp"

namespace fencelock::detail {

void report_renew(LockObserver* observer, const ResourceName& resource, const OwnerToken& owner,
                  const std::expected<RenewReply, std::error_code>& reply, std::chrono::milliseconds lease,
                  bool kept) noexcept;

/// The end of one acquisition that started at `started`, as `loop` counted it; `finish` is its
/// finish step. A grant whose server clock was behind its counter is also logged (warn,
/// redis_clock_behind), observer or not.
void report_acquire(LockObserver* observer, const AcquireStep& finish, const ResourceName& resource,
                    const OwnerToken& owner, const AcquireOptions& options, const AcquireLoop& loop,
                    steady_time started) noexcept;

void report_release(LockObserver* observer, const ResourceName& resource, const OwnerToken& owner,
                    const std::expected<ReleaseStatus, std::error_code>& result,
                    std::optional<std::chrono::microseconds> held_for) noexcept;

}  // namespace fencelock::detail

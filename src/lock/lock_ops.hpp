#pragma once
// One protocol step each, on a given connection: the single place where keys, script arguments
// and reply decoding meet. LockClient and the lease keeper both call these.
#include <chrono>
#include <string>

#include "lock/protocol.hpp"
#include "fencelock/observer.hpp"
#include "redis/connection.hpp"

namespace fencelock::detail {

struct HolderMeta {
    std::string host;
    std::string pid;
    std::string label;
};

/// Where a refused attempt leaves its owner waiting (see acquire.lua): nowhere (a single
/// attempt), in the fair line, or among the sleepers that releases wake one at a time.
enum class WaitPlace { none, fair_line, sleepers };

std::expected<AcquireReply, std::error_code> acquire_once(Connection& c, std::string_view prefix,
                                                          const ResourceName& resource, const OwnerToken& owner,
                                                          const AcquireOptions& options, const HolderMeta& holder,
                                                          WaitPlace place);

std::expected<RenewReply, std::error_code> renew_once(Connection& c, std::string_view prefix,
                                                      const ResourceName& resource, const OwnerToken& owner,
                                                      std::chrono::milliseconds lease);

std::expected<ReleaseStatus, std::error_code> release_once(Connection& c, std::string_view prefix,
                                                           const ResourceName& resource, const OwnerToken& owner);

/// Gives up a waiter's place (fair line or sleepers): true, or false when it had none.
std::expected<bool, std::error_code> leave_line_once(Connection& c, std::string_view prefix,
                                                     const ResourceName& resource, const OwnerToken& owner);

/// How long a fair waiter's place in the line lasts without a new attempt.
std::chrono::milliseconds waiter_slot(const AcquireOptions& options);

/// Observer plumbing shared by the client and the keeper (no-ops without an observer).
RenewResult renew_result(RenewStatus status) noexcept;
void report_release(LockObserver* observer, const ResourceName& resource, const OwnerToken& owner,
                    const std::expected<ReleaseStatus, std::error_code>& result,
                    std::optional<std::chrono::microseconds> held_for) noexcept;

std::expected<LockInfo, std::error_code> inspect_once(Connection& c, std::string_view prefix,
                                                      const ResourceName& resource);

}  // namespace fencelock::detail

#pragma once
// Redis behind the coordinator seam: one server, a Sentinel-managed master or a Cluster. The
// scripts (scripts/*.lua) keep the leases; each has one codec in calls/. Releases are heard on
// sharded pub/sub (release_notifier.hpp), and a promoted master's failover grace comes from the
// topology (redis/topology.hpp).
#include <memory>
#include <mutex>
#include <string>

#include "coordinator/coordinator.hpp"
#include "coordinator/redis/calls/lease_meta.hpp"
#include "coordinator/redis/release_notifier.hpp"
#include "redis/connection_pool.hpp"
#include "redis/hiredis_connection.hpp"

namespace fencelock::detail {

class RedisCoordinator final : public Coordinator {
public:
    explicit RedisCoordinator(const ClientOptions& options);

    CoordinatorCapabilities capabilities() const noexcept override;
    Result<AcquireReply> attempt(const AttemptRequest& request) override;
    Result<RenewReply> renew(const ResourceName& resource, const OwnerToken& owner,
                             std::chrono::milliseconds lease) override;
    Result<ReleaseReply> release(const ResourceName& resource, const OwnerToken& owner) override;
    void hand_over(const ResourceName& resource, const GrantMessage& grant) override;
    Result<ReleaseStatus> give_back(const ResourceName& resource, const OwnerToken& owner) override;
    Result<bool> leave_line(const ResourceName& resource, const OwnerToken& owner) override;
    Result<LockInfo> inspect(const ResourceName& resource) override;
    std::unique_ptr<WatchSeat> watch(const ResourceName& resource, const OwnerToken& owner,
                                     std::optional<SuccessorTerms> terms) override;
    bool has_local_waiters(const ResourceName& resource) override;
    bool watching(const ResourceName& resource) override;
    void close_watch() noexcept override;
    std::unique_ptr<AsyncSession> async_session() override;  // redis_async_session.cpp
    steady_time grants_from() const noexcept override;
    std::unique_ptr<RenewalChannel> renewal_channel() override;  // redis_renewal_channel.cpp
    Result<std::vector<HeldLock>> list_locks(std::string_view glob, std::size_t limit) override;
    Result<ForceReleaseOutcome> force_release(const ResourceName& resource,
                                              const ForceReleaseRequest& request) override;
    Result<std::vector<AuditEntry>> audit_log(const std::optional<ResourceName>& resource, std::size_t limit) override;

private:
    /// The release watch, created by the first waiter.
    ReleaseNotifier& notifier();
    /// This client's next waiter for `channel` that a release may name (alive longer than the
    /// release can take: the command timeout), if any.
    std::optional<WaitLine::Named> local_successor(const std::string& channel);
    /// Hands a grant that a release by this client made to its waiter, if still in the line.
    void hand_to_waiter(const std::string& channel, const GrantMessage& grant);
    bool has_waiters(const std::string& channel);

    const std::string prefix_;
    const std::chrono::milliseconds command_timeout_;
    const bool release_notifications_;
    ConnectionSettings settings_;
    std::shared_ptr<ConnectionPool> pool_;
    HolderMeta holder_;
    std::mutex notifier_mutex_;
    std::unique_ptr<ReleaseNotifier> notifier_;  // created by the first waiter
};

}  // namespace fencelock::detail

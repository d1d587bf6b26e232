#pragma once
// etcd behind the coordinator seam (docs/ETCD.md). A lease is a key of its own,
// `<p>fencelock/lock/<R>/<owner>`, attached to an etcd lease granted for it; an attempt puts it
// in one transaction only when R's range is empty, so the holder is the one key there and its
// create revision, a Raft-committed revision of the whole cluster that never goes back, is the
// fence. Renewal keeps the etcd lease alive and then checks that the key is still there; release
// deletes it by owner; max hold is enforced here (lease_book.hpp); waiters hear deletes through an
// etcd Watch (etcd_release_watch.hpp). What Redis has and etcd does not (a server clock to read,
// direct grants, a fair line, replica acknowledgement, leases shorter than etcd's minimum or not
// whole seconds) the capabilities say, and the lease core refuses those options before anything
// is sent.
#include <memory>
#include <mutex>
#include <string>

#include "coordinator/async_session.hpp"
#include "coordinator/coordinator.hpp"
#include "coordinator/etcd/etcd_keys.hpp"
#include "coordinator/etcd/etcd_release_watch.hpp"
#include "coordinator/etcd/etcd_rpc.hpp"
#include "coordinator/etcd/lease_book.hpp"

namespace fencelock::detail::etcd {

/// etcd's shortest lease with its default timings (1.5 x the election timeout, rounded up to
/// whole seconds): it raises a shorter TTL to this.
inline constexpr std::chrono::milliseconds min_lease{2000};

class EtcdCoordinator final : public Coordinator {
public:
    explicit EtcdCoordinator(const ClientOptions& options);

    CoordinatorCapabilities capabilities() const noexcept override;
    Result<AcquireReply> attempt(const AttemptRequest& request) override;
    Result<RenewReply> renew(const ResourceName& resource, const OwnerToken& owner,
                             std::chrono::milliseconds lease) override;
    Result<ReleaseReply> release(const ResourceName& resource, const OwnerToken& owner) override;
    void hand_over(const ResourceName&, const GrantMessage&) override {}
    Result<ReleaseStatus> give_back(const ResourceName& resource, const OwnerToken& owner) override;
    Result<bool> leave_line(const ResourceName&, const OwnerToken&) override { return false; }
    Result<LockInfo> inspect(const ResourceName& resource) override;
    std::unique_ptr<WatchSeat> watch(const ResourceName& resource, const OwnerToken& owner,
                                     std::optional<SuccessorTerms> terms) override;
    bool has_local_waiters(const ResourceName& resource) override;
    bool watching(const ResourceName& resource) override;
    void close_watch() noexcept override;
    std::unique_ptr<AsyncSession> async_session() override { return nullptr; }
    steady_time grants_from() const noexcept override { return steady_time::min(); }
    std::unique_ptr<RenewalChannel> renewal_channel() override;  // etcd_renewal_channel.cpp
    Result<std::vector<HeldLock>> list_locks(std::string_view glob, std::size_t limit) override;  // etcd_admin.cpp
    Result<ForceReleaseOutcome> force_release(const ResourceName& resource,
                                              const ForceReleaseRequest& request) override;  // etcd_admin.cpp
    Result<std::vector<AuditEntry>> audit_log(const std::optional<ResourceName>& resource,
                                              std::size_t limit) override;  // etcd_admin.cpp

private:
    /// The holder of `resource` (the first key of its range by create revision), if any, with
    /// its lease's remaining and granted TTL.
    struct Holder {
        std::string key;
        std::string owner;
        std::int64_t fence = 0;
        std::int64_t lease_id = 0;
        std::chrono::milliseconds ttl{0};
        std::chrono::milliseconds granted{0};
        std::optional<LeaseValue> value;
    };
    Result<std::optional<Holder>> holder_of(const ResourceName& resource);
    /// The same-owner retry: `mine`, this owner's key, found by an attempt; renewed and
    /// returned as a grant with its fence, or refused when its lease is gone.
    Result<AcquireReply> adopt(const AttemptRequest& r, const std::string& key, const mvccpb::KeyValue& mine,
                               steady_time sent);
    /// What inspect and list show of `holder`.
    static HolderState state_of(const Holder& holder);
    /// Adds the TTLs of `holder`'s etcd lease; false when the lease is gone (the key with it).
    Result<bool> read_ttl(Holder& holder);

    const RpcSettings settings_;
    const EtcdKeys keys_;
    const LeaseValue holder_meta_;
    const std::chrono::milliseconds command_timeout_;
    const bool release_notifications_;
    EtcdRpc rpc_;
    std::shared_ptr<LeaseBook> book_ = std::make_shared<LeaseBook>();
    std::mutex watch_mutex_;
    std::unique_ptr<EtcdReleaseWatch> watch_;  // made by the first waiter
};

}  // namespace fencelock::detail::etcd

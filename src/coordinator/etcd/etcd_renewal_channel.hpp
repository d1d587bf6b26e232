#pragma once
// The etcd coordinator's renewals (Coordinator::renew and the keeper's RenewalChannel). A batch
// is two round trips (a third, first, for leases another process granted): every lease's etcd
// lease kept alive on one KeepAlive stream, then read-only transactions (128 reads each, etcd's
// limit) that check each key is still there on the same lease, in the keep-alives' Raft term. The order is what
// makes a renewal safe: a key seen after its lease was kept alive stays at least a TTL from
// that keep-alive (only a force-release deletes it sooner), so the reply's TTL is a lower bound.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "coordinator/etcd/etcd_keys.hpp"
#include "coordinator/etcd/etcd_rpc.hpp"
#include "coordinator/etcd/lease_book.hpp"
#include "coordinator/renewal_channel.hpp"

namespace fencelock::detail::etcd {

/// Renews the leases at `keys` (lease keys), one reply per key, in order; a transport failure
/// fails them all alike. A lease whose max hold ends within `command_timeout` is not kept alive
/// (max_hold_exceeded): no keep-alive may land past it.
std::vector<Result<RenewReply>> renew_leases(EtcdRpc& rpc, LeaseBook& book, std::span<const std::string> keys,
                                             std::chrono::milliseconds command_timeout);

class EtcdRenewalChannel final : public RenewalChannel {
public:
    EtcdRenewalChannel(RpcSettings settings, EtcdKeys keys, std::shared_ptr<LeaseBook> book)
        : command_timeout_(settings.command_timeout),
          rpc_(std::move(settings)),
          keys_(std::move(keys)),
          book_(std::move(book)) {}

    std::string lease_address(const ResourceName& resource) const override { return keys_.address(resource); }
    /// Every renewal goes to the cluster (its leader): one lane.
    bool one_lane() const noexcept override { return true; }
    std::optional<LaneRoute> lane_of(std::string_view) override { return std::nullopt; }
    RenewBatch renew_batch(std::span<const RenewItem> items) override;
    /// Never asked: etcd has no clock to read (capabilities().server_clock is false).
    std::optional<ServerClockWatch::Reading> read_clock(std::optional<std::string_view>) override {
        return std::nullopt;
    }

private:
    const std::chrono::milliseconds command_timeout_;
    EtcdRpc rpc_;
    const EtcdKeys keys_;
    std::shared_ptr<LeaseBook> book_;
};

}  // namespace fencelock::detail::etcd

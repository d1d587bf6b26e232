#pragma once
// The keeper's renewal channel to Redis (coordinator/renewal_channel.hpp): its own multiplexed
// connection to the coordinator's endpoint; a batch of renewals is one pipeline of renew.lua
// calls (split per node by a cluster connection), followed in the same write by one WAIT when a
// lease asks for replicas (replica_ack.hpp). A lease's lane is its key's slot's master as the
// connection's slot map last said (master_hint); a single server or Sentinel's master is one
// lane. The clock is read with CLIENT ID and TIME, or on a cluster node with the keyed
// clock_probe.lua (a keyed script cannot ask CLIENT ID: the run_id tells its origin). A lease's
// address is its lock key.
#include <memory>
#include <string>

#include "coordinator/renewal_channel.hpp"
#include "redis/connection.hpp"
#include "redis/hiredis_connection.hpp"

namespace fencelock::detail {

class RedisRenewalChannel final : public RenewalChannel {
public:
    /// A channel whose connection `settings` describe (opened lazily), for keys under `key_prefix`.
    RedisRenewalChannel(const ConnectionSettings& settings, std::string key_prefix);

    std::string lease_address(const ResourceName& resource) const override;
    bool one_lane() const noexcept override { return one_lane_; }
    std::optional<LaneRoute> lane_of(std::string_view address) override;
    RenewBatch renew_batch(std::span<const RenewItem> items) override;
    std::optional<ServerClockWatch::Reading> read_clock(std::optional<std::string_view> sample) override;

private:
    std::unique_ptr<Connection> connection_;
    const std::string prefix_;
    const bool one_lane_;  ///< not a cluster connection: no slot map
};

}  // namespace fencelock::detail

#include "coordinator/redis/redis_renewal_channel.hpp"

#include <charconv>
#include <functional>

#include "coordinator/redis/calls/renew_call.hpp"
#include "coordinator/redis/keys.hpp"
#include "coordinator/redis/redis_coordinator.hpp"
#include "coordinator/redis/replica_ack.hpp"
#include "coordinator/redis/scripts.hpp"
#include "redis/cluster_connection.hpp"
#include "redis/multiplexed_connection.hpp"

namespace fencelock::detail {
namespace {

ReplicaAck ack_for(RenewDurability durability) noexcept { return {durability.replicas, durability.timeout}; }

bool decimal(const Reply& r, std::int64_t& out) {
    const auto [end, ec] = std::from_chars(r.str.data(), r.str.data() + r.str.size(), out);
    return ec == std::errc{} && end == r.str.data() + r.str.size();
}

}  // namespace

RedisRenewalChannel::RedisRenewalChannel(const ConnectionSettings& settings, std::string key_prefix)
    : connection_(make_endpoint_connection(settings, make_multiplexed_connection)),
      prefix_(std::move(key_prefix)),
      one_lane_(slot_routes(*connection_) == nullptr) {}

std::string RedisRenewalChannel::lease_address(const ResourceName& resource) const {
    return make_keys(prefix_, resource).lock;
}

// master_hint does no I/O: the keeper's timer thread never waits for the network.
std::optional<LaneRoute> RedisRenewalChannel::lane_of(std::string_view address) {
    const auto master = master_hint(*connection_, address);
    if (!master) return std::nullopt;
    return LaneRoute{master->host + ":" + std::to_string(master->port)};
}

RenewBatch RedisRenewalChannel::renew_batch(std::span<const RenewItem> items) {
    std::vector<std::string> leases;
    std::vector<ScriptCall> calls;
    leases.reserve(items.size());  // the calls point into these: no reallocation
    calls.reserve(items.size());
    ReplicaAck ack;  // one WAIT per round trip: the most any of its leases asks for
    for (const RenewItem& item : items) {
        leases.push_back(lease_argument(item.lease));  // a few digits: no allocation
        calls.push_back(renew_call(item.address, item.owner, leases.back()));
        ack = combine(ack, ack_for(item.durability));
    }
    const AcknowledgedBatch batch = detail::renew_batch(*connection_, calls, ack);
    RenewBatch out;
    out.replies.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
        Result<RenewReply> reply = decode_renew_result(batch.results, i);
        if (reply && reply->server_time)
            out.server_time = std::max(out.server_time.value_or(*reply->server_time), *reply->server_time);
        // A renewal fewer replicas acknowledged than its lease asked for is not a confirmation:
        // what a promoted replica would have is the lease as the last acknowledged one left it.
        if (reply && reply->status == RenewStatus::renewed)
            if (const std::error_code e = replication_shortfall(ack_for(items[i].durability), batch.acknowledged))
                reply = std::unexpected(e);
        out.replies.push_back(std::move(reply));
    }
    return out;
}

std::optional<ServerClockWatch::Reading> RedisRenewalChannel::read_clock(std::optional<std::string_view> sample) {
    std::int64_t seconds = 0, micros = 0;
    const auto sent = std::chrono::steady_clock::now();
    if (one_lane_) {
        static const std::vector<std::vector<std::string_view>> commands{{"CLIENT", "ID"}, {"TIME"}};
        const auto replies = connection_->pipeline(commands);
        const auto received = std::chrono::steady_clock::now();
        if (!replies || replies->size() != 2) return std::nullopt;
        const Reply& id = (*replies)[0];
        const Reply& time = (*replies)[1];
        if (id.kind != Reply::Kind::integer || time.kind != Reply::Kind::array || time.elements.size() != 2 ||
            !decimal(time.elements[0], seconds) || !decimal(time.elements[1], micros))
            return std::nullopt;
        return ServerClockWatch::Reading{sent, received, std::chrono::microseconds(seconds * 1'000'000 + micros),
                                         id.integer};
    }
    if (!sample) return std::nullopt;  // a cluster node is reached by a key
    const ScriptCall call{{*sample}, {}};
    const auto reply = run_script(*connection_, scripts::clock_probe, call);
    const auto received = std::chrono::steady_clock::now();
    if (!reply || reply->kind != Reply::Kind::array || reply->elements.size() != 3 ||
        !decimal(reply->elements[0], seconds) || !decimal(reply->elements[1], micros))
        return std::nullopt;
    const auto origin = static_cast<std::int64_t>(std::hash<std::string>{}(reply->elements[2].str));
    return ServerClockWatch::Reading{sent, received, std::chrono::microseconds(seconds * 1'000'000 + micros), origin};
}

std::unique_ptr<RenewalChannel> RedisCoordinator::renewal_channel() {
    return std::make_unique<RedisRenewalChannel>(settings_, prefix_);
}

}  // namespace fencelock::detail

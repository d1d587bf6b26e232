#include "coordinator/redis/calls/renew_call.hpp"

#include <string>

#include "coordinator/redis/calls/reply_fields.hpp"
#include "coordinator/redis/keys.hpp"
#include "coordinator/redis/scripts.hpp"

namespace fencelock::detail {
namespace {

constexpr std::int64_t not_owner = 0;
constexpr std::int64_t renewed = 1;
constexpr std::int64_t max_hold_exceeded = 2;

}  // namespace

ScriptCall renew_call(std::string_view lock_key, const OwnerToken& owner, std::string_view lease_ms) {
    return ScriptCall{{lock_key}, {owner.str(), lease_ms}};
}

std::string lease_argument(std::chrono::milliseconds lease) { return std::to_string(lease.count()); }

OwnedScriptCall renew_script_call(std::string_view prefix, const ResourceName& resource, const OwnerToken& owner,
                                  std::chrono::milliseconds lease) {
    const std::string lock = make_keys(prefix, resource).lock;
    const std::string lease_ms = lease_argument(lease);
    const ScriptCall call = renew_call(lock, owner, lease_ms);  // the one place ARGV's order is written
    return {{call.keys.begin(), call.keys.end()}, {call.args.begin(), call.args.end()}};
}

std::expected<RenewReply, std::error_code> decode_renew(const Reply& reply) {
    std::int64_t flag = 0, ttl = 0;
    if (!is_array(reply, 1) || !as_int(reply.elements[0], flag)) return malformed_reply();
    RenewReply out;
    const auto server_time = [&](std::size_t at) -> bool {
        if (reply.elements.size() == at) return true;
        std::int64_t ms = 0;
        if (reply.elements.size() != at + 1 || !as_int(reply.elements[at], ms)) return false;
        out.server_time = std::chrono::milliseconds(ms);
        return true;
    };
    if (flag == not_owner) {
        if (!server_time(1)) return malformed_reply();
        return out;
    }
    if (flag != renewed && flag != max_hold_exceeded) return malformed_reply();
    // The fence comes first: a lease hash missing it truncates the reply right after the flag.
    FencingToken fence{0};
    if (reply.elements.size() < 2 || !as_fence(reply.elements[1], fence)) return corrupt_key();
    out.fence = fence;
    if (flag == max_hold_exceeded) {
        out.status = RenewStatus::max_hold_exceeded;
        return out;
    }
    if (reply.elements.size() < 3 || !as_int(reply.elements[2], ttl) || !server_time(3)) return malformed_reply();
    out.status = RenewStatus::renewed;
    out.ttl = std::chrono::milliseconds(ttl);
    return out;
}

RenewBatchResults renew_batch(Connection& c, std::span<const ScriptCall> calls) {
    return run_script_batch(c, scripts::renew, calls);
}

AcknowledgedBatch renew_batch(Connection& c, std::span<const ScriptCall> calls, ReplicaAck ack) {
    if (!ack.on()) return {renew_batch(c, calls)};
    const WaitCommand wait(ack);
    const auto wait_argv = wait.argv();
    auto batch = run_script_batch_then(c, scripts::renew, calls, wait_argv);
    if (!batch) return {std::unexpected(batch.error()), std::unexpected(batch.error())};
    return {std::move(batch->results), decode_wait(batch->then)};
}

std::expected<RenewReply, std::error_code> decode_renew_result(const RenewBatchResults& results, std::size_t i) {
    if (!results) return std::unexpected(results.error());
    if (i >= results->size()) return malformed_reply();
    const auto& result = (*results)[i];
    if (!result) return std::unexpected(result.error());
    return decode_renew(*result);
}

std::expected<RenewReply, std::error_code> renew_once(Connection& c, std::string_view prefix,
                                                      const ResourceName& resource, const OwnerToken& owner,
                                                      std::chrono::milliseconds lease) {
    const OwnedScriptCall owned = renew_script_call(prefix, resource, owner, lease);
    const ScriptCall call = owned.view();
    return decode_renew_result(renew_batch(c, std::span(&call, 1)), 0);
}

}  // namespace fencelock::detail

#include "coordinator/redis/replica_ack.hpp"

#include <algorithm>

#include "coordinator/redis/calls/reply_fields.hpp"

namespace fencelock::detail {

ReplicaAck replica_ack(const AcquireOptions& options) noexcept {
    if (options.replicas == 0) return {};
    return {options.replicas, options.replica_timeout};
}

ReplicaAck combine(ReplicaAck a, ReplicaAck b) noexcept {
    if (!a.on()) return b;
    if (!b.on()) return a;
    return {std::max(a.replicas, b.replicas), std::max(a.timeout, b.timeout)};
}

WaitCommand::WaitCommand(ReplicaAck ack)
    : replicas_(std::to_string(ack.replicas)), timeout_(std::to_string(ack.timeout.count())) {}

std::expected<unsigned, std::error_code> decode_wait(const Reply& reply) {
    if (reply.kind == Reply::Kind::error) return std::unexpected(error_from_reply(reply.str));
    if (reply.kind != Reply::Kind::integer || reply.integer < 0) return malformed_reply();
    return static_cast<unsigned>(std::min<long long>(reply.integer, 1'000'000));
}

std::error_code replication_shortfall(ReplicaAck ack, const std::expected<unsigned, std::error_code>& acknowledged) {
    if (!ack.on()) return {};
    if (!acknowledged) return acknowledged.error();
    if (*acknowledged < ack.replicas) return make_error_code(errc::not_replicated);
    return {};
}

}  // namespace fencelock::detail

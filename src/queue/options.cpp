// Validation of the queue's option aggregates: each names the offending field.
#include <string>

#include "fencelock/queue.hpp"

namespace fencelock {
namespace {

std::unexpected<OptionError> bad(std::string field, std::string message) {
    return std::unexpected(OptionError{std::move(field), std::move(message)});
}

}  // namespace

std::expected<void, OptionError> RetryPolicy::validate(std::string_view prefix) const {
    const std::string p(prefix);
    if (base <= milliseconds::zero()) return bad(p + ".base", "must be positive");
    if (cap < base) return bad(p + ".cap", "must be at least base");
    if (jitter < milliseconds::zero()) return bad(p + ".jitter", "must not be negative");
    return {};
}

std::expected<void, OptionError> RetryPolicies::validate() const {
    if (auto ok = contention.validate("retry.contention"); !ok) return ok;
    if (auto ok = business.validate("retry.business"); !ok) return ok;
    if (auto ok = infrastructure.validate("retry.infrastructure"); !ok) return ok;
    if (max_business_attempts < 1) return bad("retry.max_business_attempts", "must be at least 1");
    return {};
}

std::expected<void, OptionError> ProcessorOptions::validate() const {
    const AcquireOptions acquire{
        .lease = lease, .max_hold = max_hold, .replicas = replicas, .replica_timeout = replica_timeout};
    if (auto ok = acquire.validate(); !ok) return ok;
    return retry.validate();
}

std::expected<void, InvalidName> validate_queue_name(std::string_view name) {
    if (name.empty() || name.size() > 200) return std::unexpected(InvalidName{"queue name must be 1..200 bytes"});
    for (char c : name) {
        if (c <= ' ' || c > '~')
            return std::unexpected(InvalidName{"queue name must be printable ASCII without spaces"});
        if (c == '{' || c == '}')
            return std::unexpected(InvalidName{"queue name must not contain braces (it is the keys' hash tag)"});
    }
    return {};
}

std::expected<void, OptionError> QueueOptions::validate() const {
    if (auto ok = validate_queue_name(queue); !ok) return bad("queue", ok.error().message);
    if (endpoint.uses_etcd())
        return bad("endpoint", "the queue lives in Redis Streams: name a Redis server (etcd:// keeps locks only)");
    if (key_prefix.find_first_of("{}") != std::string::npos) return bad("key_prefix", "must not contain braces");
    if (connect_timeout <= milliseconds::zero()) return bad("connect_timeout", "must be positive");
    if (command_timeout <= milliseconds::zero()) return bad("command_timeout", "must be positive");
    return {};
}

std::expected<void, OptionError> WorkerOptions::validate() const {
    if (concurrency < 1 || concurrency > 1024) return bad("concurrency", "must be 1..1024");
    if (auto ok = processing.validate(); !ok) return ok;
    if (visibility_timeout < milliseconds(30)) return bad("visibility_timeout", "must be at least 30ms");
    if (heartbeat_every < milliseconds::zero()) return bad("heartbeat_every", "must not be negative");
    if (heartbeat_every > milliseconds::zero() && heartbeat_every * 3 > visibility_timeout)
        return bad("heartbeat_every", "must be at most a third of visibility_timeout");
    if (block < milliseconds(1)) return bad("block", "must be at least 1ms");
    if (promote_every < milliseconds(1)) return bad("promote_every", "must be at least 1ms");
    if (shutdown_grace < milliseconds::zero()) return bad("shutdown_grace", "must not be negative");
    if (max_deliveries < 1) return bad("max_deliveries", "must be at least 1");
    if (consumer_name.find_first_of(" \t\r\n") != std::string::npos)
        return bad("consumer_name", "must not contain whitespace");
    return {};
}

std::uint64_t QueueStats::counter(std::string_view name) const noexcept {
    for (const auto& [n, v] : counters)
        if (n == name) return v;
    return 0;
}

}  // namespace fencelock

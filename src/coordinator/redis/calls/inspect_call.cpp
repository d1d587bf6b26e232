#include "coordinator/redis/calls/inspect_call.hpp"

#include <optional>

#include "coordinator/redis/calls/lease_meta.hpp"
#include "coordinator/redis/calls/reply_fields.hpp"
#include "coordinator/redis/keys.hpp"
#include "coordinator/redis/scripts.hpp"

namespace fencelock::detail {
namespace {

using std::chrono::milliseconds;

// Positions in the reply before the lease hash's field/value pairs.
constexpr std::size_t last_fence_at = 0, now_ms_at = 1, pttl_at = 2, fields_from = 3;

}  // namespace

std::expected<LockInfo, std::error_code> decode_inspect(const Reply& reply) {
    std::int64_t now = 0, pttl = 0;
    LockInfo info;
    if (!is_array(reply, fields_from) || (reply.elements.size() - fields_from) % 2 != 0) return malformed_reply();
    if (!as_fence(reply.elements[last_fence_at], info.last_fence)) return corrupt_key();
    if (!as_int(reply.elements[now_ms_at], now) || !as_int(reply.elements[pttl_at], pttl)) return malformed_reply();
    info.server_time = std::chrono::system_clock::time_point(milliseconds(now));
    if (reply.elements.size() == fields_from) return info;  // not held

    HolderState h;
    h.ttl = milliseconds(pttl);
    // A lease of this version keeps its acquisition, first lease, max hold and holder in `meta`,
    // and renewed_ms / renewals / lease_ms only once renewed (lib/lease.lua); an earlier
    // version's hash has each in a field of its own, and max_hold_until_ms.
    std::int64_t acquired = now, renewals = 0;
    std::optional<std::int64_t> renewed, until, lease;
    std::optional<LeaseMeta> meta;
    for (std::size_t i = fields_from; i + 1 < reply.elements.size(); i += 2) {
        const std::string_view field = reply.elements[i].str;
        const Reply& value = reply.elements[i + 1];
        bool ok = true;
        if (field == "owner") h.owner = value.str;
        else if (field == "fence") ok = as_fence(value, h.fence);
        else if (field == "meta") ok = (meta = parse_lease_meta(value.str)).has_value();
        else if (field == "acquired_ms") ok = as_int(value, acquired);
        else if (field == "renewed_ms") ok = as_int(value, renewed.emplace());
        else if (field == "max_hold_until_ms") ok = as_int(value, until.emplace());
        else if (field == "lease_ms") ok = as_int(value, lease.emplace());
        else if (field == "renewals") ok = as_int(value, renewals);
        else if (field == "host") h.host = value.str;
        else if (field == "pid") ok = as_int(value, h.pid);
        else if (field == "label") h.label = value.str;
        if (!ok) return corrupt_key();
    }
    if (meta) {
        acquired = meta->acquired_ms;
        until = meta->acquired_ms + meta->max_hold_ms;
        if (!lease) lease = meta->lease_ms;
        h.pid = meta->pid;
        h.host = std::move(meta->host);
        h.label = std::move(meta->label);
    }
    if (h.owner.empty()) return corrupt_key();
    const std::int64_t hold_until = until.value_or(now);
    h.held_for = milliseconds(now - acquired);
    h.since_renew = milliseconds(now - renewed.value_or(acquired));
    h.max_hold_left = milliseconds(hold_until > now ? hold_until - now : 0);
    h.lease = milliseconds(lease.value_or(0));
    h.renewals = static_cast<std::uint64_t>(renewals);
    info.holder = std::move(h);
    return info;
}

ScriptCall inspect_call(std::string_view lock_key, std::string_view fence_key) {
    return ScriptCall{{lock_key, fence_key}, {}};
}

std::expected<std::vector<std::expected<Reply, std::error_code>>, std::error_code> inspect_batch(
    Connection& c, std::span<const ScriptCall> calls) {
    return run_script_batch(c, scripts::inspect, calls);
}

// A batch of one, so the KEYS are listed in one place (inspect_call).
std::expected<LockInfo, std::error_code> inspect_once(Connection& c, std::string_view prefix,
                                                      const ResourceName& resource) {
    const auto keys = make_keys(prefix, resource);
    const ScriptCall call = inspect_call(keys.lock, keys.fence);
    auto results = inspect_batch(c, std::span(&call, 1));
    if (!results) return std::unexpected(results.error());
    if (results->size() != 1) return malformed_reply();
    if (!results->front()) return std::unexpected(results->front().error());
    return decode_inspect(*results->front());
}

}  // namespace fencelock::detail

#include "lock/protocol.hpp"

#include <charconv>
#include <string_view>

namespace fencelock::detail {
namespace {

using std::chrono::milliseconds;

std::unexpected<std::error_code> malformed() { return std::unexpected(make_error_code(errc::protocol_error)); }

bool is_shape(const Reply& r, std::size_t min_size) {
    return r.kind == Reply::Kind::array && r.elements.size() >= min_size;
}

bool as_int(const Reply& r, std::int64_t& out) {
    if (r.kind == Reply::Kind::integer) {
        out = r.integer;
        return true;
    }
    if (r.kind != Reply::Kind::string) return false;
    auto [end, ec] = std::from_chars(r.str.data(), r.str.data() + r.str.size(), out);
    return ec == std::errc{} && end == r.str.data() + r.str.size();
}

bool as_fence(const Reply& r, FencingToken& out) {
    auto fence = parse_fence(r);
    if (fence) out = *fence;
    return fence.has_value();
}

}  // namespace

std::optional<FencingToken> parse_fence(const Reply& reply) {
    std::int64_t v = 0;
    if (!as_int(reply, v) || v < 0) return std::nullopt;
    return FencingToken(static_cast<std::uint64_t>(v));
}

std::expected<AcquireReply, std::error_code> decode_acquire(const Reply& reply) {
    std::int64_t flag = 0, ttl = 0, reacquired = 0;
    if (!is_shape(reply, 1) || !as_int(reply.elements[0], flag)) return malformed();
    AcquireReply out;
    if (flag == 0) {
        std::int64_t queued = 0;
        const auto n = reply.elements.size();
        if ((n != 2 && n != 3) || !as_int(reply.elements[1], ttl)) return malformed();
        if (n == 3 && (!as_int(reply.elements[2], queued) || queued != 1)) return malformed();
        out.ttl = milliseconds(ttl);
        out.queued = queued == 1;
        return out;
    }
    if (flag != 1) return malformed();
    // A lease hash missing its fence makes Lua truncate the reply table at the nil.
    if (reply.elements.size() != 4 || !as_fence(reply.elements[1], out.fence))
        return std::unexpected(make_error_code(errc::corrupt_key));
    if (!as_int(reply.elements[2], ttl) || !as_int(reply.elements[3], reacquired)) return malformed();
    out.acquired = true;
    out.ttl = milliseconds(ttl);
    out.reacquired = reacquired == 1;
    return out;
}

std::expected<RenewReply, std::error_code> decode_renew(const Reply& reply) {
    std::int64_t flag = 0, ttl = 0;
    if (!is_shape(reply, 1) || !as_int(reply.elements[0], flag)) return malformed();
    RenewReply out;
    if (flag == 0) return out;  // not_owner
    if (flag != 1 && flag != 2) return malformed();
    // The fence comes first: a lease hash missing it truncates the reply right after the flag.
    FencingToken fence{0};
    if (reply.elements.size() < 2 || !as_fence(reply.elements[1], fence))
        return std::unexpected(make_error_code(errc::corrupt_key));
    out.fence = fence;
    if (flag == 2) {
        out.status = RenewStatus::max_hold_exceeded;
        return out;
    }
    if (reply.elements.size() != 3 || !as_int(reply.elements[2], ttl)) return malformed();
    out.status = RenewStatus::renewed;
    out.ttl = milliseconds(ttl);
    return out;
}

std::expected<ReleaseStatus, std::error_code> decode_release(const Reply& reply) {
    if (reply.kind != Reply::Kind::integer || reply.integer < 0 || reply.integer > 1) return malformed();
    return reply.integer == 1 ? ReleaseStatus::released : ReleaseStatus::not_owner;
}

std::expected<LockInfo, std::error_code> decode_inspect(const Reply& reply) {
    std::int64_t now = 0, pttl = 0;
    LockInfo info;
    if (!is_shape(reply, 3) || (reply.elements.size() - 3) % 2 != 0) return malformed();
    if (!as_fence(reply.elements[0], info.last_fence)) return std::unexpected(make_error_code(errc::corrupt_key));
    if (!as_int(reply.elements[1], now) || !as_int(reply.elements[2], pttl)) return malformed();
    if (reply.elements.size() == 3) return info;  // not held

    HolderState h;
    h.ttl = milliseconds(pttl);
    std::int64_t acquired = now, renewed = now, until = now, lease = 0, renewals = 0;
    for (std::size_t i = 3; i + 1 < reply.elements.size(); i += 2) {
        const std::string_view field = reply.elements[i].str;
        const Reply& value = reply.elements[i + 1];
        bool ok = true;
        if (field == "owner") h.owner = value.str;
        else if (field == "fence") ok = as_fence(value, h.fence);
        else if (field == "acquired_ms") ok = as_int(value, acquired);
        else if (field == "renewed_ms") ok = as_int(value, renewed);
        else if (field == "max_hold_until_ms") ok = as_int(value, until);
        else if (field == "lease_ms") ok = as_int(value, lease);
        else if (field == "renewals") ok = as_int(value, renewals);
        else if (field == "host") h.host = value.str;
        else if (field == "pid") ok = as_int(value, h.pid);
        else if (field == "label") h.label = value.str;
        if (!ok) return std::unexpected(make_error_code(errc::corrupt_key));
    }
    if (h.owner.empty()) return std::unexpected(make_error_code(errc::corrupt_key));
    h.held_for = milliseconds(now - acquired);
    h.since_renew = milliseconds(now - renewed);
    h.max_hold_left = milliseconds(until > now ? until - now : 0);
    h.lease = milliseconds(lease);
    h.renewals = static_cast<std::uint64_t>(renewals);
    info.holder = std::move(h);
    return info;
}

steady_time safe_until(steady_time sent, std::chrono::milliseconds ttl, double drift_factor) {
    auto trusted = std::chrono::duration_cast<std::chrono::microseconds>(ttl) * (1.0 - drift_factor);
    return sent + std::chrono::duration_cast<steady_time::duration>(trusted);
}

}  // namespace fencelock::detail

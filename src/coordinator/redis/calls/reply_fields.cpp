#include "coordinator/redis/calls/reply_fields.hpp"

#include <charconv>

namespace fencelock::detail {

bool is_array(const Reply& r, std::size_t min_size) {
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

std::optional<FencingToken> parse_fence(const Reply& reply) {
    std::int64_t v = 0;
    if (!as_int(reply, v) || v < 0) return std::nullopt;
    return FencingToken(static_cast<std::uint64_t>(v));
}

bool as_fence(const Reply& r, FencingToken& out) {
    auto fence = parse_fence(r);
    if (fence) out = *fence;
    return fence.has_value();
}

}  // namespace fencelock::detail

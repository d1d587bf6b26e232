#include "coordinator/redis/calls/grant_message.hpp"

#include <charconv>
#include <cstdint>

namespace fencelock::detail {
namespace {

constexpr std::string_view prefix = "grant ";
// A grant's TTL is at most a lease (limits::lease, 24 h): anything longer is not a grant.
constexpr std::uint64_t max_ttl_ms = 86'400'000;

// The next space-separated field of `rest`, consumed; empty when there is none.
std::string_view next_field(std::string_view& rest) {
    const auto end = rest.find(' ');
    const std::string_view field = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
    return field;
}

bool whole_number(std::string_view s, std::uint64_t& out) {
    if (s.empty()) return false;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc{} && end == s.data() + s.size();
}

}  // namespace

bool is_grant_message(std::string_view payload) { return payload.starts_with(prefix); }

std::optional<GrantMessage> decode_grant_message(std::string_view payload) {
    if (!is_grant_message(payload)) return std::nullopt;
    std::string_view rest = payload.substr(prefix.size());
    const auto owner = next_field(rest);
    const auto fence = next_field(rest);
    const auto ttl = next_field(rest);
    std::uint64_t fence_value = 0, ttl_ms = 0;
    if (owner.empty() || !rest.empty() || !whole_number(fence, fence_value) || !whole_number(ttl, ttl_ms) ||
        ttl_ms == 0 || ttl_ms > max_ttl_ms)
        return std::nullopt;
    return GrantMessage{std::string(owner),
                        {FencingToken{fence_value}, std::chrono::milliseconds(static_cast<std::int64_t>(ttl_ms))}};
}

}  // namespace fencelock::detail

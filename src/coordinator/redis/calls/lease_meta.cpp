#include "coordinator/redis/calls/lease_meta.hpp"

#include <algorithm>
#include <charconv>

namespace fencelock::detail {
namespace {

// Reads one space-ended whole number off the front of `text`.
bool take_int(std::string_view& text, std::int64_t& out) {
    const auto space = text.find(' ');
    if (space == std::string_view::npos) return false;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + space, out);
    if (ec != std::errc{} || end != text.data() + space) return false;
    text.remove_prefix(space + 1);
    return true;
}

}  // namespace

std::string holder_text(const HolderMeta& holder) {
    std::string host = holder.host;
    std::ranges::replace(host, ' ', '_');
    return holder.pid + ' ' + host + ' ' + holder.label;
}

std::optional<LeaseMeta> parse_lease_meta(std::string_view text) {
    LeaseMeta m;
    if (!take_int(text, m.acquired_ms) || !take_int(text, m.lease_ms) || !take_int(text, m.max_hold_ms) ||
        !take_int(text, m.pid))
        return std::nullopt;
    const auto space = text.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    m.host = text.substr(0, space);
    m.label = text.substr(space + 1);
    return m;
}

}  // namespace fencelock::detail

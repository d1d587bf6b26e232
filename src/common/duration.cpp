#include "fencelock/duration.hpp"

#include "fencelock/limits.hpp"

#include <charconv>
#include <cstdint>
#include <limits>

namespace fencelock {
namespace {

struct Unit {
    std::string_view suffix;
    std::int64_t ms;
};
// Longest suffix first so "ms" is not read as "m" followed by garbage.
constexpr Unit units[] = {{"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}};

}  // namespace

std::expected<std::chrono::milliseconds, DurationError> parse_duration(std::string_view text) {
    auto fail = [&](std::string why) {
        return std::unexpected(DurationError{"invalid duration '" + std::string(text) + "': " + why});
    };
    if (text.empty()) return fail("empty");
    if (text.front() == '-') return fail("must be positive");
    std::size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    if (digits == 0) return fail("expected a whole number followed by a unit (ms, s, m, h)");
    std::string_view suffix = text.substr(digits);
    if (suffix.empty()) return fail("missing unit (ms, s, m, h), e.g. 250ms or 30s");
    const Unit* unit = nullptr;
    for (const Unit& u : units)
        if (suffix == u.suffix) unit = &u;
    if (unit == nullptr) return fail("unknown unit '" + std::string(suffix) + "' (use ms, s, m, h)");
    std::int64_t count = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + digits, count);
    if (ec != std::errc{} || end != text.data() + digits) return fail("number out of range");
    if (count == 0) return fail("must be greater than zero");
    // Longer than any option allows, and far from overflowing a steady_clock deadline.
    if (count > limits::duration.count() / unit->ms)
        return fail("too large (at most " + format_duration(limits::duration) + ")");
    return std::chrono::milliseconds(count * unit->ms);
}

std::string format_duration(std::chrono::milliseconds d) {
    const std::int64_t ms = d.count();
    for (auto it = std::rbegin(units); it != std::rend(units); ++it)
        if (ms != 0 && ms % it->ms == 0) return std::to_string(ms / it->ms) + std::string(it->suffix);
    return std::to_string(ms) + "ms";
}

}  // namespace fencelock

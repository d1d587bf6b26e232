#include "demo/time_axis.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace fencelock::demo {
namespace {

constexpr std::int64_t ms_ns = 1'000'000, s_ns = 1'000'000'000;

// Digits after the point that `step` needs in `unit`: 0 for 1 s or 200 ms, 1 for 0.5 s.
int decimals(std::int64_t step, std::int64_t unit) {
    int d = 0;
    for (std::int64_t scale = unit; step % scale != 0 && d < 9; scale /= 10) ++d;
    return d;
}

}  // namespace

TimeAxis make_time_axis(std::int64_t span_ns, int max_ticks) {
    TimeAxis axis;
    axis.span_ns = std::max<std::int64_t>(1, span_ns);
    max_ticks = std::max(1, max_ticks);
    // The smallest 1-2-5 step that needs no more than max_ticks intervals.
    constexpr std::int64_t multiples[] = {1, 2, 5};
    axis.step_ns = 0;
    for (std::int64_t power = 1; axis.step_ns == 0; power *= 10)
        for (std::int64_t m : multiples)
            if (axis.step_ns == 0 && axis.span_ns / (m * power) <= max_ticks) axis.step_ns = m * power;
    const bool seconds = axis.span_ns >= 2 * s_ns;
    const std::int64_t unit = seconds ? s_ns : ms_ns;
    const int digits = decimals(axis.step_ns, unit);
    for (std::int64_t t = 0; t <= axis.span_ns; t += axis.step_ns)
        axis.ticks.push_back({t, fmt::format("{:.{}f} {}", static_cast<double>(t) / static_cast<double>(unit), digits,
                                             seconds ? "s" : "ms")});
    return axis;
}

}  // namespace fencelock::demo

#pragma once
// The timeline's time axis: round tick steps (1, 2 or 5 times a power of ten) with units, so a
// reader can tell how long a pause or a lease was. Pure: unit-tested without a browser.
#include <cstdint>
#include <string>
#include <vector>

namespace fencelock::demo {

struct Tick {
    std::int64_t at_ns = 0;  ///< time since the run started
    std::string label;       ///< "0 s", "1.5 s", "200 ms"
};

struct TimeAxis {
    std::int64_t span_ns = 1;  ///< the axis covers [0, span_ns]: every run is drawn on this scale
    std::int64_t step_ns = 1;
    std::vector<Tick> ticks;  ///< from 0 up to span_ns, every step_ns
};

/// The axis for `span_ns` (the longest run) with at most `max_ticks` intervals; milliseconds
/// below two seconds, seconds from there.
TimeAxis make_time_axis(std::int64_t span_ns, int max_ticks = 12);

}  // namespace fencelock::demo

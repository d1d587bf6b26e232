#pragma once
// A self-contained HTML page with one SVG timeline per run: who held which record when, with
// fences, pauses, crashes and lost leases, and each write's outcome in its own colour and shape:
// accepted, rejected as stale, or accepted and then lost (overwritten). Every run is drawn on
// the same time scale, the longest run's, so equal widths mean equal durations.
#include <string>
#include <vector>

#include "demo/history.hpp"

namespace fencelock::demo {

struct TimelineRun {
    std::string title;  ///< "with fencing" / "without fencing"
    History history;
    Report report;  ///< its lost_ids are the operations marked as lost updates
};

/// The colours of the outcome legend; the screenshot test looks for them in the rendered page.
inline constexpr const char* accepted_colour = "#2ca02c";
inline constexpr const char* rejected_colour = "#d62728";
inline constexpr const char* lost_colour = "#c000c0";

std::string render_timeline(const std::vector<TimelineRun>& runs);

}  // namespace fencelock::demo

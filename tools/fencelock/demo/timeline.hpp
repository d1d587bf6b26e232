#pragma once
// A self-contained HTML page with one SVG timeline per run: who held which record when, with
// fences, pauses, crashes and lost leases, and each write's outcome in its own colour and shape:
// accepted, rejected as stale, or accepted and then lost (overwritten), and the stale write behind
// each lost update marked as its culprit. Fences show on hover only. Every run is drawn
// on the same time scale, the longest run's, so equal widths mean equal durations; every label
// is kept inside its drawing.
#include <string>
#include <vector>

#include "demo/events.hpp"

namespace fencelock::demo {

struct TimelineRun {
    std::string title;  ///< "with fencing" / "without fencing"
    History history;
    Report report;  ///< its lost_ids are marked as lost updates, its overwrites' culprits as culprits
};

/// The colours of the outcome legend; the screenshot test looks for them in the rendered page.
inline constexpr const char* accepted_colour = "#2ca02c";
inline constexpr const char* rejected_colour = "#d62728";
inline constexpr const char* lost_colour = "#c000c0";
/// The mark of a culprit: the stale write behind a lost update.
inline constexpr const char* culprit_colour = "#1a1a1a";

/// The whole page: the legend, then one drawing per run.
std::string render_timeline(const std::vector<TimelineRun>& runs);

}  // namespace fencelock::demo

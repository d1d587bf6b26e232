#pragma once
// A self-contained HTML page with one SVG timeline per run: who held which record when, with
// fences, pauses, crashes, lost leases and rejected stale writes marked.
#include <string>
#include <vector>

#include "demo/history.hpp"

namespace fencelock::demo {

struct TimelineRun {
    std::string title;  ///< "with fencing" / "without fencing"
    History history;
    Report report;
};

std::string render_timeline(const std::vector<TimelineRun>& runs);

}  // namespace fencelock::demo

#include "demo/timeline.hpp"

#include "demo/failover_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <set>

namespace fencelock::demo {
namespace {

constexpr int width = 1100, left = 70, row_height = 26, top = 30;
const char* const palette[] = {"#4e79a7", "#59a14f", "#9c755f", "#76b7b2", "#b07aa1", "#edc948"};

std::string escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '&': out += "&amp;"; break;
            case '"': out += "&quot;"; break;
            default: out += c;
        }
    }
    return out;
}

struct Scale {
    std::int64_t t0, t1;
    double x(std::int64_t t) const {
        return left + static_cast<double>(t - t0) / static_cast<double>(std::max<std::int64_t>(1, t1 - t0)) *
                          (width - left - 20);
    }
};

std::string render_run(const TimelineRun& run) {
    const History& h = run.history;
    std::int64_t t0 = std::numeric_limits<std::int64_t>::max(), t1 = 0;
    int workers = 0;
    std::set<std::string> records;
    for (const auto& op : h.operations) {
        t0 = std::min(t0, op.acquired_ns);
        t1 = std::max(t1, op.end_ns);
        workers = std::max(workers, op.worker + 1);
        records.insert(op.record);
    }
    for (const auto& f : h.faults) t1 = std::max(t1, f.end_ns);
    if (t1 <= t0) return "<p>(no operations)</p>";
    const Scale s{t0, t1};
    const int height = top + (workers + 1) * row_height + 30;
    auto row_y = [](int worker) { return top + worker * row_height; };
    auto color = [&](const std::string& record) {
        auto index = std::distance(records.begin(), records.find(record));
        return palette[static_cast<std::size_t>(index) % std::size(palette)];
    };

    std::string svg = fmt::format("<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{}' font-family='sans-serif' font-size='11'>\n", width, height);
    for (int w = 0; w < workers; ++w)
        svg += fmt::format("<text x='4' y='{}'>worker {}</text><line x1='{}' x2='{}' y1='{}' y2='{}' stroke='#ddd'/>\n",
                           row_y(w) + 16, w, left, width - 20, row_y(w) + row_height - 2, row_y(w) + row_height - 2);
    for (const auto& f : h.faults) {
        const double x0 = s.x(f.start_ns), x1 = std::max(s.x(f.end_ns), x0 + 2);
        if (f.target == failover_target) {  // cut, kill, promoted: a line through every row
            svg += fmt::format("<line x1='{0:.1f}' x2='{0:.1f}' y1='{1}' y2='{2}' stroke='#e15759' stroke-dasharray='4 3'/>"
                               "<text x='{0:.1f}' y='{3}' fill='#e15759' text-anchor='middle'>{4}<title>failover: {4}</title></text>\n",
                               x0, top, top + workers * row_height, top - 6, escape(f.kind));
            continue;
        }
        if (f.target == "redis") {
            svg += fmt::format("<rect x='{:.1f}' y='{}' width='{:.1f}' height='{}' fill='#e15759' opacity='0.15'><title>Redis paused</title></rect>\n",
                               x0, top, x1 - x0, workers * row_height);
            continue;
        }
        const int w = std::atoi(f.target.c_str() + 1);
        if (f.kind == "kill")
            svg += fmt::format("<text x='{:.1f}' y='{}' font-size='16' fill='black'>&#10006;<title>worker {} killed (SIGKILL)</title></text>\n",
                               x0 - 5, row_y(w) + 18, w);
        else
            svg += fmt::format("<rect x='{:.1f}' y='{}' width='{:.1f}' height='{}' fill='#bab0ac' opacity='0.6'><title>worker {} paused (SIGSTOP)</title></rect>\n",
                               x0, row_y(w) + 2, x1 - x0, row_height - 6, w);
    }
    for (const auto& op : h.operations) {
        if (op.result == "contended") continue;
        const double x0 = s.x(op.acquired_ns), x1 = std::max(s.x(op.end_ns), x0 + 1.5);
        const int y = row_y(op.worker);
        svg += fmt::format("<rect x='{:.1f}' y='{}' width='{:.1f}' height='{}' fill='{}' opacity='0.85'><title>{} fence {} {}: {}</title></rect>\n",
                           x0, y + 6, x1 - x0, row_height - 14, color(op.record), escape(op.record), op.fence,
                           escape(op.id), escape(op.result));
        if (x1 - x0 > 28)
            svg += fmt::format("<text x='{:.1f}' y='{}' fill='white' font-size='9'>{}</text>\n", x0 + 2, y + 16, op.fence);
        if (op.result == "stale")
            svg += fmt::format("<text x='{:.1f}' y='{}' fill='#e15759' font-weight='bold' font-size='14'>&#8856;<title>stale write rejected: {} fence {}</title></text>\n",
                               s.x(op.write_ns) - 5, y + 18, escape(op.record), op.fence);
    }
    for (const auto& loss : h.losses)
        svg += fmt::format("<text x='{:.1f}' y='{}' fill='#f28e2b' font-size='13'>&#9650;<title>lease lost ({}): {} fence {}</title></text>\n",
                           s.x(loss.at_ns) - 5, row_y(loss.worker) + 6, escape(loss.reason), escape(loss.record), loss.fence);
    const double seconds = static_cast<double>(t1 - t0) / 1e9;
    svg += fmt::format("<text x='{}' y='{}'>0 s</text><text x='{}' y='{}' text-anchor='end'>{:.1f} s</text>\n", left,
                       height - 8, width - 20, height - 8, seconds);
    std::string legend;
    for (const auto& r : records)
        legend += fmt::format("<span style='background:{};color:white;padding:1px 6px;margin-right:4px'>{}</span>", color(r), escape(r));
    const Report& rep = run.report;
    return fmt::format(
        "<h2>{}</h2><p>{} attempted, {} accepted, <b>{} stale rejected</b>, <b>{} lost updates</b>, {} duplicates, "
        "{} leases lost, {} pauses, {} kills</p><p>{} &nbsp; <span style='color:#e15759'>&#8856;</span> stale write "
        "rejected &nbsp; <span style='color:#f28e2b'>&#9650;</span> lease lost &nbsp; &#10006; crash &nbsp; grey: "
        "paused &nbsp; red band: Redis paused &nbsp; dashed red: failover (cut, kill, promoted)</p>\n{}</svg>\n",
        escape(run.title), rep.attempted, rep.accepted, rep.stale_rejected, rep.lost_updates, rep.duplicates,
        rep.leases_lost, rep.pauses, rep.kills, legend, svg);
}

}  // namespace

std::string render_timeline(const std::vector<TimelineRun>& runs) {
    std::string html =
        "<!doctype html><html><head><meta charset='utf-8'><title>fencelock demo timeline</title></head>"
        "<body style='font-family:sans-serif'><h1>fencelock demo</h1><p>Each bar is one read-modify-write under "
        "a lease (hover for record, fence and outcome).</p>\n";
    for (const auto& run : runs) html += render_run(run);
    return html + "</body></html>\n";
}

}  // namespace fencelock::demo

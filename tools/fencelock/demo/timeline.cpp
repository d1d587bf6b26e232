#include "demo/timeline.hpp"

#include "demo/failover_report.hpp"
#include "demo/time_axis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <set>

namespace fencelock::demo {
namespace {

constexpr int width = 1100, left = 70, right = 20, row_height = 34, top = 22, axis_height = 36;
// Records are told apart by a thin stripe under each bar; these colours stay clear of the
// outcome colours, which carry the story.
const char* const record_palette[] = {"#4e79a7", "#9c755f", "#76b7b2", "#edc948", "#ff9da7", "#86bcb6"};
constexpr const char* no_write_colour = "#c7c7c7";
constexpr const char* lease_lost_colour = "#f28e2b";
constexpr const char* pause_colour = "#bab0ac";
constexpr const char* redis_pause_colour = "#a0cbe8";
constexpr const char* failover_colour = "#555555";

std::string escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '&': out += "&amp;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

enum class Outcome { accepted, rejected, lost, no_write };

Outcome outcome_of(const Operation& op, const Report& report) {
    if (op.result == "stale") return Outcome::rejected;
    if (op.result != "applied") return Outcome::no_write;
    return report.lost_ids.contains(op.id) ? Outcome::lost : Outcome::accepted;
}

// The shapes, shared by the legend and the plot so the two always match. `y` is a row's top.
std::string bar(double x0, double x1, int y, Outcome o, const std::string& tooltip) {
    const double w = std::max(x1 - x0, 1.5);
    switch (o) {
        case Outcome::rejected:  // hollow: nothing reached the record
            return fmt::format(
                "<rect x='{:.1f}' y='{}' width='{:.1f}' height='10' fill='white' stroke='{}' "
                "stroke-width='1.5'><title>{}</title></rect>\n",
                x0, y + 14, w, rejected_colour, tooltip);
        case Outcome::lost:
            return fmt::format(
                "<rect x='{:.1f}' y='{}' width='{:.1f}' height='10' fill='{}' stroke='black' "
                "stroke-width='1'><title>{}</title></rect>\n",
                x0, y + 14, w, lost_colour, tooltip);
        case Outcome::accepted:
        case Outcome::no_write:
            return fmt::format(
                "<rect x='{:.1f}' y='{}' width='{:.1f}' height='10' fill='{}'><title>{}</title></rect>\n", x0, y + 14,
                w, o == Outcome::accepted ? accepted_colour : no_write_colour, tooltip);
    }
    return {};
}

// Where a write's outcome needs a second look: the moment a stale write hit the store (a red
// square with a white cross) or a lost update was acknowledged (a magenta diamond).
struct Mark {
    Outcome outcome;  ///< rejected or lost
    double x;
    int y;  ///< the row's top
    std::string tooltip;
};

std::string shape(const Mark& m) {
    if (m.outcome == Outcome::rejected)
        return fmt::format(
            "<g class='mark-rejected'><title>{}</title><rect x='{:.1f}' y='{}' width='12' height='12' "
            "fill='{}'/><path d='M{:.1f} {} l8 8 m0 -8 l-8 8' stroke='white' stroke-width='2'/></g>\n",
            m.tooltip, m.x - 6, m.y + 13, rejected_colour, m.x - 4, m.y + 15);
    return fmt::format(
        "<g class='mark-lost'><title>{}</title><path d='M{:.1f} {} l8 8 l-8 8 l-8 -8 z' fill='{}' "
        "stroke='black' stroke-width='1'/></g>\n",
        m.tooltip, m.x, m.y + 11, lost_colour);
}

// Marks of one row closer than a label's width share one label above them ("LOST", "3 LOST",
// "2 REJECTED", "1 LOST 2 REJECTED"), in the lost colour when the cluster lost anything.
std::string marks_with_labels(std::vector<Mark> marks) {
    constexpr double label_gap = 48;
    std::sort(marks.begin(), marks.end(),
              [](const Mark& a, const Mark& b) { return std::pair(a.y, a.x) < std::pair(b.y, b.x); });
    std::string svg;
    for (std::size_t first = 0, next = 0; first < marks.size(); first = next) {
        std::size_t lost = 0, rejected = 0;
        for (next = first; next < marks.size() && marks[next].y == marks[first].y &&
                           (next == first || marks[next].x - marks[next - 1].x < label_gap);
             ++next) {
            svg += shape(marks[next]);
            ++(marks[next].outcome == Outcome::lost ? lost : rejected);
        }
        auto part = [](std::size_t n, const char* word) {
            return n == 0 ? std::string() : n == 1 ? std::string(word) : fmt::format("{} {}", n, word);
        };
        std::string label = part(lost, "LOST");
        if (lost > 0 && rejected > 0)
            label = fmt::format("{} LOST {} REJECTED", lost, rejected);
        else if (rejected > 0)
            label = part(rejected, "REJECTED");
        svg += fmt::format(
            "<text x='{:.1f}' y='{}' fill='{}' font-size='10' font-weight='bold' text-anchor='middle'>{}</text>\n",
            (marks[first].x + marks[next - 1].x) / 2, marks[first].y + 10, lost > 0 ? lost_colour : rejected_colour,
            label);
    }
    return svg;
}

// An orange triangle under the bar, pointing at the moment the keeper saw the lease go.
std::string lease_lost_mark(double x, int y, const std::string& tooltip) {
    return fmt::format("<path d='M{:.1f} {} l4 7 l-8 0 z' fill='{}'><title>{}</title></path>\n", x, y + 27,
                       lease_lost_colour, tooltip);
}

std::string legend() {
    std::string svg =
        "<svg xmlns='http://www.w3.org/2000/svg' width='1100' height='36' font-family='sans-serif' font-size='12'>\n";
    int x = 4;
    auto label = [&](const char* text, int advance) {
        svg += fmt::format("<text x='{}' y='26'>{}</text>\n", x, text);
        x += advance;
    };
    svg += bar(x, x + 30, 0, Outcome::accepted, "accepted write");
    x += 36, label("write accepted", 120);
    svg += bar(x, x + 30, 0, Outcome::rejected, "rejected write") +
           marks_with_labels({{Outcome::rejected, x + 24.0, 0, "stale write rejected"}});
    x += 36, label("stale write rejected (fencing)", 210);
    svg += bar(x, x + 30, 0, Outcome::lost, "lost update") +
           marks_with_labels({{Outcome::lost, x + 24.0, 0, "lost update"}});
    x += 40, label("lost update: acknowledged, then overwritten", 300);
    svg += bar(x, x + 30, 0, Outcome::no_write, "no write");
    x += 36, label("no write (lease lost first)", 190);
    svg += lease_lost_mark(x + 4, -8, "lease lost");
    x += 14, label("lease lost", 80);
    return svg + "</svg>\n";
}

struct Extent {
    std::int64_t t0 = std::numeric_limits<std::int64_t>::max(), t1 = std::numeric_limits<std::int64_t>::min();
    int workers = 0;
};

Extent extent_of(const History& h) {
    Extent e;
    auto time = [&](std::int64_t from, std::int64_t to) {
        e.t0 = std::min(e.t0, from);
        e.t1 = std::max(e.t1, to);
    };
    for (const auto& op : h.operations) {
        time(op.acquired_ns, op.end_ns);
        e.workers = std::max(e.workers, op.worker + 1);
    }
    for (const auto& f : h.faults) time(f.start_ns, f.end_ns);
    for (const auto& l : h.losses) time(l.at_ns, l.at_ns);
    return e;
}

// One scale for every run: time since the run's own start, over the longest run's span.
struct Scale {
    std::int64_t t0, span;
    double x(std::int64_t t) const {
        return left + static_cast<double>(t - t0) / static_cast<double>(span) * (width - left - right);
    }
};

std::string axis(const Scale& s, const TimeAxis& a, int plot_bottom, std::int64_t run_ns) {
    std::string svg =
        fmt::format("<line x1='{0}' x2='{1}' y1='{2}' y2='{2}' stroke='black'/>\n", left, width - right, plot_bottom);
    for (const auto& tick : a.ticks) {
        const double x = s.x(s.t0 + tick.at_ns);
        svg += fmt::format(
            "<line x1='{0:.1f}' x2='{0:.1f}' y1='{1}' y2='{2}' stroke='#eee'/>"
            "<line x1='{0:.1f}' x2='{0:.1f}' y1='{2}' y2='{3}' stroke='black'/>"
            "<text x='{0:.1f}' y='{4}' text-anchor='middle'>{5}</text>\n",
            x, top, plot_bottom, plot_bottom + 5, plot_bottom + 17, tick.label);
    }
    svg += fmt::format(
        "<text x='4' y='{}'>time</text><text x='{}' y='{}' text-anchor='end' fill='#666'>time since the "
        "run started (both runs on one scale)</text>\n",
        plot_bottom + 17, width - right, plot_bottom + 31);
    if (run_ns < a.span_ns) {
        const double x = s.x(s.t0 + run_ns);
        svg += fmt::format(
            "<line x1='{0:.1f}' x2='{0:.1f}' y1='{1}' y2='{2}' stroke='#999' stroke-dasharray='2 2'/>"
            "<text x='{0:.1f}' y='{3}' fill='#999' text-anchor='end'>run ended&#160;</text>\n",
            x, top, plot_bottom, top - 4);
    }
    return svg;
}

std::string faults(const History& h, const Scale& s, int workers) {
    auto row_y = [](int worker) { return top + worker * row_height; };
    std::string svg;
    for (const auto& f : h.faults) {
        const double x0 = s.x(f.start_ns), x1 = std::max(s.x(f.end_ns), x0 + 2);
        if (f.target == failover_target) {  // cut, kill, promoted: a line through every row
            svg += fmt::format(
                "<line x1='{0:.1f}' x2='{0:.1f}' y1='{1}' y2='{2}' stroke='{5}' stroke-dasharray='4 3'/>"
                "<text x='{0:.1f}' y='{3}' fill='{5}' text-anchor='middle'>{4}<title>failover: {4}</title></text>\n",
                x0, top, top + workers * row_height, top - 6, escape(f.kind), failover_colour);
        } else if (f.target == "redis") {
            svg += fmt::format(
                "<rect x='{:.1f}' y='{}' width='{:.1f}' height='{}' fill='{}' opacity='0.35'><title>Redis "
                "paused</title></rect>\n",
                x0, top, x1 - x0, workers * row_height, redis_pause_colour);
        } else if (const int w = std::atoi(f.target.c_str() + 1); f.kind == "kill") {
            svg += fmt::format(
                "<text x='{:.1f}' y='{}' font-size='16' fill='black'>&#10006;<title>worker {} killed "
                "(SIGKILL)</title></text>\n",
                x0 - 5, row_y(w) + 26, w);
        } else {
            svg += fmt::format(
                "<rect x='{:.1f}' y='{}' width='{:.1f}' height='{}' fill='{}' opacity='0.6'><title>worker {} paused "
                "(SIGSTOP)</title></rect>\n",
                x0, row_y(w) + 4, x1 - x0, row_height - 6, pause_colour, w);
        }
    }
    return svg;
}

std::string render_run(const TimelineRun& run, const TimeAxis& time_axis) {
    const History& h = run.history;
    const Extent e = extent_of(h);
    if (e.t1 <= e.t0) return "<h2>" + escape(run.title) + "</h2><p>(no operations)</p>\n";
    const Scale s{e.t0, time_axis.span_ns};
    const int plot_bottom = top + e.workers * row_height;
    auto row_y = [](int worker) { return top + worker * row_height; };
    std::set<std::string> records;
    for (const auto& op : h.operations) records.insert(op.record);
    auto record_colour = [&](const std::string& record) {
        const auto index = std::distance(records.begin(), records.find(record));
        return record_palette[static_cast<std::size_t>(index) % std::size(record_palette)];
    };

    std::string svg = fmt::format(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{}' font-family='sans-serif' font-size='11'>\n",
        width, plot_bottom + axis_height);
    for (int w = 0; w < e.workers; ++w)
        svg += fmt::format(
            "<text x='4' y='{0}'>worker {1}</text><line x1='{2}' x2='{4}' y1='{3}' y2='{3}' stroke='#ddd'/>\n",
            row_y(w) + 23, w, left, row_y(w) + row_height, width - right);
    svg += axis(s, time_axis, plot_bottom, e.t1 - e.t0) + faults(h, s, e.workers);
    std::string marks;  // drawn last, over the bars of other operations
    std::vector<Mark> outcomes;
    for (const auto& op : h.operations) {
        if (op.result == "contended") continue;
        const Outcome o = outcome_of(op, run.report);
        const double x0 = s.x(op.acquired_ns), x1 = s.x(op.end_ns);
        const int y = row_y(op.worker);
        const std::string what = fmt::format("{} fence {} {}", escape(op.record), op.fence, escape(op.id));
        svg += bar(x0, x1, y, o, what + ": " + escape(op.result));
        svg += fmt::format("<rect x='{:.1f}' y='{}' width='{:.1f}' height='3' fill='{}'/>\n", x0, y + 24,
                           std::max(x1 - x0, 1.5), record_colour(op.record));
        if (x1 - x0 > 28 && o != Outcome::rejected)
            svg +=
                fmt::format("<text x='{:.1f}' y='{}' fill='white' font-size='9'>{}</text>\n", x0 + 2, y + 22, op.fence);
        if (o == Outcome::rejected) outcomes.push_back({o, s.x(op.write_ns), y, "stale write rejected: " + what});
        if (o == Outcome::lost)
            outcomes.push_back(
                {o, s.x(op.write_ns), y, "lost update: " + what + " was acknowledged, then overwritten"});
    }
    marks += marks_with_labels(std::move(outcomes));
    for (const auto& loss : h.losses)
        marks += lease_lost_mark(
            s.x(loss.at_ns), row_y(loss.worker),
            fmt::format("lease lost ({}): {} fence {}", escape(loss.reason), escape(loss.record), loss.fence));
    std::string key;
    for (const auto& r : records)
        key += fmt::format("<span style='border-bottom:3px solid {};margin-right:8px'>{}</span>", record_colour(r),
                           escape(r));
    const Report& rep = run.report;
    return fmt::format(
        "<h2>{}</h2><p>{} attempted, {} accepted, <b>{} stale writes rejected</b>, <b>{} lost updates</b>, {} "
        "duplicates, {} leases lost, {} pauses, {} kills</p><p>records: {} &nbsp; &#10006; crash &nbsp; grey band: "
        "worker paused &nbsp; blue band: Redis paused &nbsp; dashed: failover (cut, kill, promoted)</p>\n{}{}</svg>\n",
        escape(run.title), rep.attempted, rep.accepted, rep.stale_rejected, rep.lost_updates, rep.duplicates,
        rep.leases_lost, rep.pauses, rep.kills, key, svg, marks);
}

}  // namespace

std::string render_timeline(const std::vector<TimelineRun>& runs) {
    std::int64_t longest = 1;
    for (const auto& run : runs) {
        const Extent e = extent_of(run.history);
        if (e.t1 > e.t0) longest = std::max(longest, e.t1 - e.t0);
    }
    const TimeAxis time_axis = make_time_axis(longest);
    std::string html =
        "<!doctype html><html><head><meta charset='utf-8'><title>fencelock demo "
        "timeline</title><style>body{font-family:"
        "sans-serif;margin:8px}h1{font-size:20px;margin:4px 0}h2{font-size:16px;margin:10px 0 2px}p{margin:2px 0}"
        "</style></head><body><h1>fencelock demo</h1><p>Each bar is one read-modify-write under a lease, from "
        "acquiring it to the end of the write (hover for record, fence and outcome).</p>\n" +
        legend();
    for (const auto& run : runs) html += render_run(run, time_axis);
    return html + "</body></html>\n";
}

}  // namespace fencelock::demo

#include "demo/timeline.hpp"

#include "demo/failover_report.hpp"
#include "demo/time_axis.hpp"
#include "demo/timeline_shapes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>

namespace fencelock::demo {
namespace {

using namespace detail;

// The drawing of a run: one row per worker under room for the fault labels, then the time axis.
constexpr int row_height = 34, top = 22, axis_height = 36;
// The least room left of the plot (worker names) and right of it (the last tick's label).
constexpr int min_left = 70, min_right = 20;
// Records are told apart by a thin stripe under each bar; these colours stay clear of the
// outcome colours, which carry the story.
const char* const record_palette[] = {"#4e79a7", "#9c755f", "#76b7b2", "#edc948", "#ff9da7", "#86bcb6"};
constexpr const char* pause_colour = "#bab0ac";
constexpr const char* redis_pause_colour = "#a0cbe8";
constexpr const char* failover_colour = "#555555";

// The plot's margins, the same for every run so that they share one time scale: room for the
// longest worker name on the left and half the last tick's label on the right.
struct Layout {
    int left = min_left, right = min_right;
};

Layout make_layout(int workers, const TimeAxis& axis) {
    Layout l;
    const double name = text_width(fmt::format("worker {}", std::max(0, workers - 1)), 11);
    l.left = std::max(min_left, static_cast<int>(std::ceil(edge_gap + name + 8)));
    if (!axis.ticks.empty())
        l.right =
            std::max(min_right, static_cast<int>(std::ceil(text_width(axis.ticks.back().label, 11) / 2 + edge_gap)));
    return l;
}

Outcome outcome_of(const Operation& op, const Report& report, const std::set<std::string>& culprits) {
    if (op.result == "stale") return Outcome::rejected;
    if (op.result != "applied") return Outcome::no_write;
    if (report.lost_ids.contains(op.id)) return Outcome::lost;
    return culprits.contains(op.id) ? Outcome::culprit : Outcome::accepted;
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
    Layout layout;
    double x(std::int64_t t) const {
        return layout.left +
               static_cast<double>(t - t0) / static_cast<double>(span) * (drawing_width - layout.left - layout.right);
    }
};

std::string axis(const Scale& s, const TimeAxis& a, int plot_bottom, std::int64_t run_ns) {
    const int left = s.layout.left, right_end = drawing_width - s.layout.right;
    std::string svg =
        fmt::format("<line x1='{0}' x2='{1}' y1='{2}' y2='{2}' stroke='black'/>\n", left, right_end, plot_bottom);
    for (const auto& tick : a.ticks) {
        const double x = s.x(s.t0 + tick.at_ns);
        svg += fmt::format(
            "<line x1='{0:.1f}' x2='{0:.1f}' y1='{1}' y2='{2}' stroke='#eee'/>"
            "<line x1='{0:.1f}' x2='{0:.1f}' y1='{2}' y2='{3}' stroke='black'/>",
            x, top, plot_bottom, plot_bottom + 5);
        svg += label({.x = x, .y = plot_bottom + 17, .text = tick.label, .anchor = Anchor::middle});
    }
    svg += label({.x = edge_gap, .y = plot_bottom + 17, .text = "time"});
    svg += label({.x = static_cast<double>(right_end),
                  .y = plot_bottom + 31,
                  .text = "time since the run started (both runs on one scale)",
                  .anchor = Anchor::end,
                  .fill = "#666"});
    if (run_ns < a.span_ns) {
        const double x = s.x(s.t0 + run_ns);
        svg += fmt::format("<line x1='{0:.1f}' x2='{0:.1f}' y1='{1}' y2='{2}' stroke='#999' stroke-dasharray='2 2'/>",
                           x, top, plot_bottom);
        svg += label({.x = x - 2, .y = top - 4, .text = "run ended", .anchor = Anchor::end, .fill = "#999"});
    }
    return svg;
}

std::string faults(const History& h, const Scale& s, int workers) {
    auto row_y = [](int worker) { return top + worker * row_height; };
    std::string svg;
    for (const auto& f : h.faults) {
        const double x0 = s.x(f.start_ns), x1 = std::max(s.x(f.end_ns), x0 + 2);
        if (f.target == failover_target) {  // cut, kill, promoted: a line through every row
            svg +=
                fmt::format("<line x1='{0:.1f}' x2='{0:.1f}' y1='{1}' y2='{2}' stroke='{3}' stroke-dasharray='4 3'/>",
                            x0, top, top + workers * row_height, failover_colour);
            svg += label({.x = x0,
                          .y = top - 6,
                          .text = f.kind,
                          .anchor = Anchor::middle,
                          .fill = failover_colour,
                          .tooltip = "failover: " + escape(f.kind)});
        } else if (f.target == "redis") {
            svg += fmt::format(
                "<rect x='{:.1f}' y='{}' width='{:.1f}' height='{}' fill='{}' opacity='0.35'><title>Redis "
                "paused</title></rect>\n",
                x0, top, x1 - x0, workers * row_height, redis_pause_colour);
        } else if (const int w = std::atoi(f.target.c_str() + 1); f.kind == "kill") {
            svg += label({.x = x0,
                          .y = row_y(w) + 26,
                          .text = "\u2716",
                          .anchor = Anchor::middle,
                          .font_size = 16,
                          .tooltip = fmt::format("worker {} killed (SIGKILL)", w)});
        } else {
            svg += fmt::format(
                "<rect x='{:.1f}' y='{}' width='{:.1f}' height='{}' fill='{}' opacity='0.6'><title>worker {} paused "
                "(SIGSTOP)</title></rect>\n",
                x0, row_y(w) + 4, x1 - x0, row_height - 6, pause_colour, w);
        }
    }
    return svg;
}

std::string describe(const Operation& op) {
    return fmt::format("{} fence {} {}", escape(op.record), op.fence, escape(op.id));
}

// The lost updates and their culprits: each lost update's mark says what overwrote it and which
// of the two was the stale write, each culprit's says what it did, and a dashed line joins each
// lost update to the write that overwrote it.
struct Damage {
    std::map<std::string, const Operation*> by_id;  ///< the accepted writes
    std::map<std::string, Overwrite> of_lost;       ///< lost id -> its overwrite
    std::map<std::string, std::vector<Overwrite>> by_culprit;
};

Damage damage_of(const History& h, const Report& report) {
    Damage d;
    for (const auto& op : h.operations)
        if (op.result == "applied") d.by_id.emplace(op.id, &op);
    for (const auto& o : report.overwrites) {
        if (!d.by_id.contains(o.lost_id) || !d.by_id.contains(o.overwriter_id)) continue;
        d.of_lost.emplace(o.lost_id, o);
        d.by_culprit[o.culprit_id].push_back(o);
    }
    return d;
}

std::string id_and_fence(const Operation& op) { return fmt::format("{} (fence {})", escape(op.id), op.fence); }

std::string lost_tooltip(const Operation& op, const Damage& d) {
    std::string text = "lost update: " + describe(op) + " was acknowledged, then overwritten";
    const auto o = d.of_lost.find(op.id);
    if (o == d.of_lost.end()) return text;
    const Operation& by = *d.by_id.at(o->second.overwriter_id);
    text += fmt::format(" by {}, whose worker had read the record before it; ", id_and_fence(by));
    return text + (o->second.culprit_id == op.id
                       ? "the stale write was this one: its lease had already passed to " + escape(by.id) + "'s worker"
                       : "the stale write was " + escape(by.id) + ", from a lease older than this one's");
}

std::string culprit_tooltip(const Operation& op, const std::vector<Overwrite>& caused, const Damage& d) {
    std::string text = "culprit: " + describe(op) + ", a stale write the store accepted", newer;
    std::size_t overwritten = 0;
    for (const Overwrite& o : caused) {
        if (o.lost_id == op.id) {  // it was the lost update: a newer holder wrote over it
            text += fmt::format(
                "; its lease had passed to {}, whose worker read the record before this write "
                "and then overwrote it",
                id_and_fence(*d.by_id.at(o.overwriter_id)));
        } else {
            newer += (newer.empty() ? "" : ", ") + id_and_fence(*d.by_id.at(o.lost_id));
            ++overwritten;
        }
    }
    if (overwritten == 1) text += "; it overwrote " + newer + ", written under a newer lease, without having read it";
    if (overwritten > 1)
        text += fmt::format("; it overwrote {} updates written under newer leases without having read them: {}",
                            overwritten, newer);
    return text;
}

std::string render_run(const TimelineRun& run, const TimeAxis& time_axis, const Layout& layout) {
    const History& h = run.history;
    const Extent e = extent_of(h);
    if (e.t1 <= e.t0) return "<h2>" + escape(run.title) + "</h2><p>(no operations)</p>\n";
    const Scale s{e.t0, time_axis.span_ns, layout};
    const int plot_bottom = top + e.workers * row_height;
    const int height = plot_bottom + axis_height;
    auto row_y = [](int worker) { return top + worker * row_height; };
    std::set<std::string> records;
    for (const auto& op : h.operations) records.insert(op.record);
    auto record_colour = [&](const std::string& record) {
        const auto index = std::distance(records.begin(), records.find(record));
        return record_palette[static_cast<std::size_t>(index) % std::size(record_palette)];
    };
    const Damage damage = damage_of(h, run.report);
    std::set<std::string> culprits;
    for (const auto& [id, caused] : damage.by_culprit) culprits.insert(id);

    std::string svg = fmt::format(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{0}' height='{1}' viewBox='0 0 {0} {1}' "
        "font-family='sans-serif' font-size='11'>\n",
        drawing_width, height);
    for (int w = 0; w < e.workers; ++w) {
        svg += label({.x = edge_gap, .y = row_y(w) + 23, .text = fmt::format("worker {}", w)});
        svg += fmt::format("<line x1='{0}' x2='{1}' y1='{2}' y2='{2}' stroke='#ddd'/>\n", layout.left,
                           drawing_width - layout.right, row_y(w) + row_height);
    }
    svg += axis(s, time_axis, plot_bottom, e.t1 - e.t0) + faults(h, s, e.workers);
    std::string links;  // overwriter to lost update, under the marks
    std::vector<Mark> marks;
    for (const auto& op : h.operations) {
        if (op.result == "contended") continue;
        const Outcome o = outcome_of(op, run.report, culprits);
        const double x0 = s.x(op.acquired_ns), x1 = s.x(op.end_ns);
        const int y = row_y(op.worker);
        // The fence is in the tooltip only: a number inside a bar is clipped or unreadable.
        svg += bar(x0, x1, y, o, describe(op) + ": " + escape(op.result));
        svg += fmt::format("<rect x='{:.1f}' y='{}' width='{:.1f}' height='3' fill='{}'/>\n", x0, y + 24,
                           std::max(x1 - x0, 1.5), record_colour(op.record));
        if (o == Outcome::rejected) marks.push_back({o, s.x(op.write_ns), y, "stale write rejected: " + describe(op)});
        if (o == Outcome::lost) marks.push_back({o, s.x(op.write_ns), y, lost_tooltip(op, damage)});
        if (const auto c = damage.by_culprit.find(op.id); c != damage.by_culprit.end())  // beside a lost mark
            marks.push_back({Outcome::culprit, s.x(op.write_ns) + (o == Outcome::lost ? 14 : 0), y,
                             culprit_tooltip(op, c->second, damage)});
        if (const auto l = damage.of_lost.find(op.id); l != damage.of_lost.end()) {
            const Operation& by = *damage.by_id.at(l->second.overwriter_id);
            links += fmt::format(
                "<line class='overwrite-link' x1='{:.1f}' y1='{}' x2='{:.1f}' y2='{}' stroke='{}' "
                "stroke-width='1.5' stroke-dasharray='3 2'><title>{} overwrote {}</title></line>\n",
                s.x(by.write_ns), row_y(by.worker) + 19, s.x(op.write_ns), y + 19, culprit_colour, escape(by.id),
                escape(op.id));
        }
    }
    std::string overlay = links + marks_with_labels(std::move(marks));  // over the bars of other operations
    for (const auto& loss : h.losses)
        overlay += lease_lost_mark(
            s.x(loss.at_ns), row_y(loss.worker),
            fmt::format("lease lost ({}): {} fence {}", escape(loss.reason), escape(loss.record), loss.fence));
    std::string key;
    for (const auto& r : records)
        key += fmt::format("<span style='border-bottom:3px solid {};margin-right:8px'>{}</span>", record_colour(r),
                           escape(r));
    const Report& rep = run.report;
    const std::string behind =
        rep.lost_updates == 0
            ? ""
            : fmt::format(" ({} stale writes the store accepted behind them, marked CULPRIT)", culprits.size());
    return fmt::format(
        "<h2>{}</h2><p>{} attempted, {} accepted, <b>{} stale writes rejected</b>, <b>{} lost updates</b>{}, {} "
        "duplicates, {} leases lost, {} pauses, {} kills</p><p>records: {} &nbsp; &#10006; crash &nbsp; grey band: worker paused &nbsp; blue band: "
        "Redis paused &nbsp; dashed: failover (cut, kill, promoted) &nbsp; hover a bar for its record, fence and "
        "outcome</p>\n{}{}</svg>\n",
        escape(run.title), rep.attempted, rep.accepted, rep.stale_rejected, rep.lost_updates, behind, rep.duplicates,
        rep.leases_lost, rep.pauses, rep.kills, key, svg, overlay);
}

}  // namespace

std::string render_timeline(const std::vector<TimelineRun>& runs) {
    std::int64_t longest = 1;
    int workers = 1;
    for (const auto& run : runs) {
        const Extent e = extent_of(run.history);
        if (e.t1 > e.t0) longest = std::max(longest, e.t1 - e.t0);
        workers = std::max(workers, e.workers);
    }
    const TimeAxis time_axis = make_time_axis(longest);
    const Layout layout = make_layout(workers, time_axis);
    std::string html =
        "<!doctype html><html><head><meta charset='utf-8'><title>fencelock demo "
        "timeline</title><style>body{font-family:"
        "sans-serif;margin:8px}h1{font-size:20px;margin:4px 0}h2{font-size:16px;margin:10px 0 2px}p{margin:2px 0}"
        "</style></head><body><h1>fencelock demo</h1><p>Each bar is one read-modify-write under a lease, from "
        "acquiring it to the end of the write (hover for record, fence and outcome).</p>\n" +
        legend();
    for (const auto& run : runs) html += render_run(run, time_axis, layout);
    return html + "</body></html>\n";
}

}  // namespace fencelock::demo

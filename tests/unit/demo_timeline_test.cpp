// The demo timeline's drawing decisions on hand-written histories: one time scale for every run,
// ticks with units, a mark on every lost update and every rejected write, the culprit of each
// lost update, fences on hover only, and no label outside its drawing.
#include <gtest/gtest.h>

#include "demo/events.hpp"
#include "demo/time_axis.hpp"
#include "demo/timeline.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

namespace fencelock::demo {
namespace {

constexpr std::int64_t ms = 1'000'000, s = 1'000'000'000;

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

std::vector<std::string> labels(const TimeAxis& axis) {
    std::vector<std::string> out;
    for (const auto& t : axis.ticks) out.push_back(t.label);
    return out;
}

TEST(DemoTimeAxis, RoundStepsWithUnits) {
    const TimeAxis eight = make_time_axis(8 * s + 300 * ms);
    EXPECT_EQ(eight.step_ns, 1 * s);
    EXPECT_EQ(labels(eight), (std::vector<std::string>{"0 s", "1 s", "2 s", "3 s", "4 s", "5 s", "6 s", "7 s", "8 s"}));
    const TimeAxis half = make_time_axis(2 * s + 500 * ms, 6);  // 0.2 s would need 12 intervals
    EXPECT_EQ(half.step_ns, 500 * ms);
    EXPECT_EQ(labels(half), (std::vector<std::string>{"0.0 s", "0.5 s", "1.0 s", "1.5 s", "2.0 s", "2.5 s"}));
    const TimeAxis short_run = make_time_axis(700 * ms);
    EXPECT_EQ(short_run.step_ns, 100 * ms);
    EXPECT_EQ(short_run.ticks.back().label, "700 ms");
    EXPECT_EQ(short_run.ticks.size(), 8u);
    EXPECT_EQ(make_time_axis(25 * s).step_ns, 2 * s);
    EXPECT_EQ(make_time_axis(26 * s).step_ns, 5 * s);
}

Operation op(int worker, std::string record, std::uint64_t fence, std::string id, std::int64_t from, std::int64_t to,
             std::string result, std::string based_on = "") {
    return {worker,
            std::move(record),
            fence,
            std::move(id),
            from,
            (from + to) / 2,
            to,
            std::move(result),
            std::move(based_on)};
}

TEST(DemoTimeline, ReportNamesTheLostUpdates) {
    History h;
    h.operations = {op(0, "r0", 1, "w0-1", 0, 2, "applied"), op(1, "r0", 2, "w1-1", 1, 3, "applied"),
                    op(0, "r0", 3, "w0-2", 4, 5, "stale")};
    const Report r = make_report(h, {{"r0", "w1-1"}});
    EXPECT_EQ(r.lost_ids, (std::set<std::string>{"w0-1"}));
    EXPECT_EQ(r.lost_updates, 1u);
}

TEST(DemoTimeline, MarksEachLostUpdateAndRejectedWrite) {
    TimelineRun run{"without fencing", {}, {}};
    run.history.operations = {
        op(0, "r0", 1, "w0-1", 0, 2 * s, "applied"), op(1, "r0", 2, "w1-1", 1 * s, 3 * s, "applied"),
        op(1, "r0", 3, "w1-2", 3 * s, 4 * s, "applied"), op(0, "r0", 4, "w0-2", 4 * s, 5 * s, "stale")};
    run.report = make_report(run.history, {{"r0", "w1-1"}});  // w0-1 and w1-2 overwritten
    const std::string html = render_timeline({run});
    // One of each in the legend, then one per operation.
    EXPECT_EQ(count(html, "class='mark-lost'"), 1 + 2u);
    EXPECT_EQ(count(html, "class='mark-rejected'"), 1 + 1u);
    EXPECT_NE(html.find("lost update: r0 fence 1 w0-1 was acknowledged, then overwritten"), std::string::npos);
    EXPECT_NE(html.find("lost update: r0 fence 3 w1-2"), std::string::npos);
    EXPECT_EQ(html.find("lost update: r0 fence 2"), std::string::npos) << "w1-1 survived";
    EXPECT_NE(html.find(lost_colour), std::string::npos);
    EXPECT_NE(html.find(accepted_colour), std::string::npos);
    EXPECT_NE(html.find(rejected_colour), std::string::npos);
}

TEST(DemoTimeline, MarksCloseTogetherShareOneLabel) {
    TimelineRun run{"without fencing", {}, {}};
    // a to d build on each other; e had read the record before any of them and destroyed all four.
    run.history.operations = {op(1, "r0", 1, "a", 1000 * ms, 1010 * ms, "applied"),
                              op(1, "r0", 2, "b", 1020 * ms, 1030 * ms, "applied", "a"),
                              op(1, "r0", 3, "c", 1040 * ms, 1050 * ms, "applied", "b"),
                              op(1, "r0", 4, "d", 9 * s, 10 * s, "applied", "c"),
                              op(0, "r0", 5, "e", 0, 10 * s, "applied"),
                              op(1, "r0", 6, "f", 9400 * ms, 9600 * ms, "stale")};
    run.report = make_report(run.history, {{"r0", "e"}});
    const std::string html = render_timeline({run});
    EXPECT_EQ(count(html, "class='mark-lost'"), 1 + 4u) << "every lost update keeps its diamond";
    EXPECT_EQ(count(html, ">3 LOST</text>"), 1u);
    EXPECT_EQ(count(html, ">1 LOST 1 REJECTED</text>"), 1u) << "d and f, written at the same moment";
    EXPECT_EQ(count(html, ">LOST</text>"), 1u) << "the legend's";
    EXPECT_EQ(count(html, ">REJECTED</text>"), 1u) << "the legend's";
    EXPECT_EQ(count(html, ">CULPRIT</text>"), 2u) << "the legend's and e's";
}

// Keeps what lies outside <title> elements: the text a reader sees without hovering.
std::string without_tooltips(const std::string& html) {
    std::string out;
    std::size_t at = 0;
    for (auto open = html.find("<title>"); open != std::string::npos; open = html.find("<title>", at)) {
        out += html.substr(at, open - at);
        at = html.find("</title>", open);
        if (at == std::string::npos) return out;
        at += 8;
    }
    return out + html.substr(at);
}

TEST(DemoTimeline, MarksTheStaleWriteBehindEachLostUpdateAsItsCulprit) {
    TimelineRun run{"without fencing", {}, {}};
    run.history.operations = {
        // r0: w1's b and w2's c build on a; w0's x, from an older lease, had read "a" before them
        // and was written late: accepted, it destroyed b and c. d builds on x.
        op(0, "r0", 1, "a", 0, 1 * s, "applied"), op(1, "r0", 3, "b", 2 * s, 3 * s, "applied", "a"),
        op(2, "r0", 4, "c", 3 * s, 4 * s, "applied", "b"), op(0, "r0", 2, "x", 1 * s, 6 * s, "applied", "a"),
        op(1, "r0", 5, "d", 6 * s, 7 * s, "applied", "x"),
        // r1: w3's s was written (at 2.5 s) after its lease had passed to w2's n, whose worker had
        // read the record before (n wrote at 5 s): s, accepted, is the lost update and the culprit.
        op(3, "r1", 6, "s", 0, 5 * s, "applied"), op(2, "r1", 7, "n", 2 * s, 8 * s, "applied")};
    run.report = make_report(run.history, {{"r0", "a x d"}, {"r1", "n"}});
    const std::string html = render_timeline({run});
    EXPECT_EQ(count(html, "class='mark-culprit'"), 1 + 2u) << "the legend's, x's and s's";
    EXPECT_NE(html.find("culprit: the stale write behind a lost update"), std::string::npos) << "a legend entry";
    EXPECT_NE(html.find("culprit: r0 fence 2 x, a stale write the store accepted; it overwrote 2 updates written "
                        "under newer leases without having read them: b (fence 3), c (fence 4)<"),
              std::string::npos)
        << html;
    EXPECT_NE(html.find("lost update: r0 fence 3 b was acknowledged, then overwritten by x (fence 2), whose worker "
                        "had read the record before it; the stale write was x, from a lease older than this one's"),
              std::string::npos);
    EXPECT_NE(html.find("lost update: r0 fence 4 c was acknowledged, then overwritten by x (fence 2)"),
              std::string::npos);
    EXPECT_NE(html.find("culprit: r1 fence 6 s, a stale write the store accepted; its lease had passed to n (fence 7), "
                        "whose worker read the record before this write and then overwrote it"),
              std::string::npos);
    EXPECT_NE(html.find("lost update: r1 fence 6 s was acknowledged, then overwritten by n (fence 7), whose worker had "
                        "read the record before it; the stale write was this one"),
              std::string::npos);
    EXPECT_EQ(count(html, "class='overwrite-link'"), 3u) << "x to b, x to c, n to s";
    EXPECT_EQ(html.find("culprit: r0 fence 5 d"), std::string::npos) << "d destroyed nothing";
    EXPECT_EQ(html.find("culprit: r1 fence 7 n"), std::string::npos) << "n held the newer lease";
    EXPECT_NE(html.find("<b>3 lost updates</b> (2 stale writes the store accepted behind them"), std::string::npos);
    EXPECT_EQ(count(html, ">1 LOST 1 CULPRIT</text>"), 1u) << "s";
    // x's bar is outlined in the culprit's colour; so is the legend's swatch, and no other bar
    // (s's is drawn as lost).
    EXPECT_EQ(count(html, fmt::format("stroke='{}' stroke-width='2'>", culprit_colour)), 1 + 1u);

    // The same history with fencing: nothing lost, nothing to blame.
    run.report = make_report(run.history, {{"r0", "a b c x d"}, {"r1", "s n"}});
    const std::string fenced = render_timeline({run});
    EXPECT_EQ(count(fenced, "class='mark-culprit'"), 1u) << "the legend's only";
    EXPECT_NE(fenced.find("<b>0 lost updates</b>, 0 duplicates"), std::string::npos) << "no culprits to speak of";

    // One lost update, one culprit: said in the singular.
    run.history.operations.resize(2);  // a and b
    run.history.operations.push_back(op(3, "r0", 2, "y", 1 * s, 5 * s, "applied", "a"));
    run.report = make_report(run.history, {{"r0", "a y"}});  // b lost to y, from an older lease
    EXPECT_NE(render_timeline({run}).find("; it overwrote b (fence 3), written under a newer lease, without having "
                                          "read it<"),
              std::string::npos);
}

TEST(DemoTimeline, FencesShowOnHoverOnly) {
    TimelineRun run{"failover, fencelock fences", {}, {}};
    run.history.operations = {op(0, "r0", 1796128988888108, "a", 0, 4 * s, "applied"),
                              op(1, "r0", 1796128990251334, "b", 4 * s, 9 * s, "stale")};
    run.report = make_report(run.history, {{"r0", "a"}});
    const std::string html = render_timeline({run});
    for (const char* fence : {"1796128988888108", "1796128990251334"}) {
        EXPECT_NE(html.find(fence), std::string::npos) << fence << " in a tooltip";
        EXPECT_EQ(without_tooltips(html).find(fence), std::string::npos) << fence << " drawn outside a tooltip";
    }
}

// The clipping check, written apart from the renderer's own layout: every <text> in an <svg>,
// its extent estimated from its characters (entities and UTF-8 sequences count one each) at
// 0.6 em a character (0.7 em bold), must lie inside the svg's viewBox.
struct TextBox {
    std::string text;
    double x0, x1, top, bottom;
};

std::string attribute(const std::string& tag, const std::string& name) {
    const auto at = tag.find(" " + name + "='");
    if (at == std::string::npos) return {};
    const auto from = at + name.size() + 3;
    return tag.substr(from, tag.find('\'', from) - from);
}

std::vector<std::string> labels_outside_the_viewbox(const std::string& html, std::size_t& checked) {
    std::vector<std::string> clipped;
    for (auto svg = html.find("<svg"); svg != std::string::npos; svg = html.find("<svg", svg + 1)) {
        const std::string svg_tag = html.substr(svg, html.find('>', svg) - svg);
        double vx = 0, vy = 0, vw = 0, vh = 0;
        if (std::sscanf(attribute(svg_tag, "viewBox").c_str(), "%lf %lf %lf %lf", &vx, &vy, &vw, &vh) != 4) {
            clipped.push_back("an svg without a viewBox: " + svg_tag);
            continue;
        }
        const double svg_font = std::atof(attribute(svg_tag, "font-size").c_str());
        const auto end = html.find("</svg>", svg);
        for (auto t = html.find("<text", svg); t < end; t = html.find("<text", t + 1)) {
            const auto close = html.find('>', t);
            const std::string tag = html.substr(t, close - t);
            std::string content = without_tooltips(html.substr(close + 1, html.find("</text>", close) - close - 1));
            std::size_t chars = 0;
            for (std::size_t i = 0; i < content.size(); ++i) {
                if (content[i] == '&') i = content.find(';', i);
                if ((content[i] & 0xC0) != 0x80) ++chars;
            }
            const std::string size = attribute(tag, "font-size");
            const double font = size.empty() ? svg_font : std::atof(size.c_str());
            const double w = static_cast<double>(chars) * font * (attribute(tag, "font-weight") == "bold" ? 0.7 : 0.6);
            const std::string anchor = attribute(tag, "text-anchor");
            const double x = std::atof(attribute(tag, "x").c_str()), y = std::atof(attribute(tag, "y").c_str());
            const double x0 = anchor == "middle" ? x - w / 2 : anchor == "end" ? x - w : x;
            ++checked;
            if (x0 < vx || x0 + w > vx + vw || y - font < vy || y + font * 0.25 > vy + vh)
                clipped.push_back(fmt::format("'{}' spans x {:.1f}..{:.1f}, y {:.1f}..{:.1f} in {} {} {} {}", content,
                                              x0, x0 + w, y - font, y + font * 0.25, vx, vy, vw, vh));
        }
    }
    return clipped;
}

TEST(DemoTimeline, TheClippingCheckSeesAClippedLabel) {
    std::size_t checked = 0;
    const auto clipped = labels_outside_the_viewbox(
        "<svg width='100' height='40' viewBox='0 0 100 40' font-size='10'>"
        "<text x='50' y='20' text-anchor='middle'>fits</text><text x='95' y='20'>clipped<title>a long tooltip "
        "is not drawn</title></text><text x='50' y='5'>high</text></svg>",
        checked);
    EXPECT_EQ(checked, 3u);
    ASSERT_EQ(clipped.size(), 2u);
    EXPECT_EQ(clipped[0].rfind("'clipped' spans x 95.0..137.0", 0), 0u) << clipped[0];
    EXPECT_EQ(clipped[1].rfind("'high'", 0), 0u) << clipped[1];
}

TEST(DemoTimeline, NoLabelIsClipped) {
    // Labels at every edge: 32 workers, marks and kills at the first and the last moment, a
    // failover drawn at both ends, a shorter run that ends early, and a run timed in ms.
    TimelineRun crowded{"without fencing", {}, {}}, shorter{"with fencing", {}, {}}, brief{"short", {}, {}};
    for (int w = 0; w < 32; ++w)
        crowded.history.operations.push_back(
            op(w, "r" + std::to_string(w % 7), 1796128988888108 + w, "w" + std::to_string(w), 0, 25 * s, "applied"));
    crowded.history.operations.push_back(op(31, "r0", 9, "first", 0, 10 * ms, "applied"));
    crowded.history.operations.push_back(op(31, "r0", 10, "last", 25 * s - 10 * ms, 25 * s, "stale"));
    crowded.history.operations.push_back(op(0, "r0", 11, "late", 25 * s - 20 * ms, 25 * s, "applied"));
    crowded.history.faults = {{"kill", "w0", 0, 0},
                              {"kill", "w31", 25 * s, 25 * s},
                              {"promoted", "failover", 0, 0},
                              {"promoted", "failover", 25 * s, 25 * s},
                              {"pause", "redis", 1 * s, 2 * s},
                              {"pause", "w3", 3 * s, 4 * s}};
    crowded.history.losses = {{31, "r0", 9, 25 * s, "expired"}};
    crowded.report = make_report(crowded.history, {{"r0", "late"}});  // "first" lost, "late" its culprit
    ASSERT_FALSE(crowded.report.overwrites.empty());
    shorter.history.operations = {op(0, "r0", 1, "a", 0, 1 * s, "applied")};
    brief.history.operations = {op(0, "r0", 1, "a", 0, 690 * ms, "applied"), op(1, "r0", 2, "b", 0, 10 * ms, "stale")};
    brief.report = make_report(brief.history, {{"r0", ""}});

    for (const auto& runs : {std::vector{crowded, shorter}, std::vector{brief}}) {
        const std::string html = render_timeline(runs);
        std::size_t checked = 0;
        const auto clipped = labels_outside_the_viewbox(html, checked);
        EXPECT_GT(checked, 20u);
        EXPECT_TRUE(clipped.empty()) << ::testing::PrintToString(clipped);
    }
}

TEST(DemoTimeline, BothRunsShareTheLongerRunsScale) {
    TimelineRun longer{"with fencing", {}, {}}, shorter{"without fencing", {}, {}};
    longer.history.operations = {op(0, "r0", 1, "a", 100 * s, 110 * s, "applied")};
    shorter.history.operations = {op(0, "r0", 1, "b", 500 * s, 505 * s, "applied")};
    const std::string html = render_timeline({longer, shorter});
    // Each run starts at x = 70; the 10 s run ends at the right edge (1080), the 5 s run halfway.
    EXPECT_NE(html.find("<rect x='70.0' y='36' width='1010.0'"), std::string::npos) << html;
    EXPECT_NE(html.find("<rect x='70.0' y='36' width='505.0'"), std::string::npos) << html;
    // Both axes run to 10 s, ticked every second; the shorter run says where it ended.
    EXPECT_EQ(count(html, ">10 s</text>"), 2u);
    EXPECT_EQ(count(html, ">5 s</text>"), 2u);
    EXPECT_EQ(count(html, "run ended"), 1u);
}

}  // namespace
}  // namespace fencelock::demo

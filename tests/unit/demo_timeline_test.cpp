// The demo timeline's drawing decisions on hand-written histories: one time scale for every run,
// ticks with units, and a mark on every lost update and every rejected write.
#include <gtest/gtest.h>

#include "demo/history.hpp"
#include "demo/time_axis.hpp"
#include "demo/timeline.hpp"

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
             std::string result) {
    return {worker, std::move(record), fence, std::move(id), from, (from + to) / 2, to, std::move(result)};
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
    run.history.operations = {op(1, "r0", 1, "a", 1000 * ms, 1010 * ms, "applied"),
                              op(1, "r0", 2, "b", 1020 * ms, 1030 * ms, "applied"),
                              op(1, "r0", 3, "c", 1040 * ms, 1050 * ms, "applied"),
                              op(1, "r0", 4, "d", 9 * s, 10 * s, "applied"),
                              op(0, "r0", 5, "e", 0, 10 * s, "applied"),
                              op(1, "r0", 6, "f", 9400 * ms, 9600 * ms, "stale")};
    run.report = make_report(run.history, {{"r0", "e"}});
    const std::string html = render_timeline({run});
    EXPECT_EQ(count(html, "class='mark-lost'"), 1 + 4u) << "every lost update keeps its diamond";
    EXPECT_EQ(count(html, ">3 LOST</text>"), 1u);
    EXPECT_EQ(count(html, ">1 LOST 1 REJECTED</text>"), 1u) << "d and f, written at the same moment";
    EXPECT_EQ(count(html, ">LOST</text>"), 1u) << "the legend's";
    EXPECT_EQ(count(html, ">REJECTED</text>"), 1u) << "the legend's";
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

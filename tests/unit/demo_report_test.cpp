// The demo's report arithmetic on hand-written histories.
#include <gtest/gtest.h>

#include "demo/history.hpp"
#include "demo/timeline.hpp"

namespace fencelock::demo {
namespace {

Operation op(int worker, std::string record, std::uint64_t fence, std::string id, std::string result) {
    return {worker, std::move(record), fence, std::move(id), 1, result == "aborted" || result == "contended" ? 0 : 2, 3,
            std::move(result)};
}

TEST(DemoReport, CountsLostUpdatesAndDuplicates) {
    History h;
    h.operations = {op(0, "r0", 1, "w0-1", "applied"), op(1, "r0", 2, "w1-1", "applied"),
                    op(0, "r0", 1, "w0-2", "stale"),   op(2, "r1", 1, "w2-1", "applied"),
                    op(2, "r1", 2, "w2-2", "aborted"), op(1, "r1", 0, "w1-2", "contended")};
    h.losses = {{2, "r1", 2, 5, "expired"}};
    h.faults = {{"pause", "w2", 1, 4}, {"kill", "w1", 6, 6}, {"pause", "redis", 7, 9}};
    // w0-1 was acknowledged but overwritten (lost); w2-1 appears twice (one duplicate).
    const std::map<std::string, std::string> final_values{{"r0", "w1-1"}, {"r1", "w2-1 w2-1"}};
    const Report r = make_report(h, final_values);
    EXPECT_EQ(r.attempted, 4u);
    EXPECT_EQ(r.accepted, 3u);
    EXPECT_EQ(r.stale_rejected, 1u);
    EXPECT_EQ(r.lost_updates, 1u);
    EXPECT_EQ(r.duplicates, 1u);
    EXPECT_EQ(r.leases_lost, 1u);
    EXPECT_EQ(r.aborted, 1u);
    EXPECT_EQ(r.contended, 1u);
    EXPECT_EQ(r.pauses, 2u);
    EXPECT_EQ(r.kills, 1u);
}

TEST(DemoReport, CleanRunHasNoDamage) {
    History h;
    h.operations = {op(0, "r0", 1, "w0-1", "applied"), op(1, "r0", 2, "w1-1", "applied")};
    const Report r = make_report(h, {{"r0", "w0-1 w1-1"}});
    EXPECT_EQ(r.lost_updates, 0u);
    EXPECT_EQ(r.duplicates, 0u);
    EXPECT_EQ(r.accepted, 2u);
}

TEST(DemoReport, HistoryLinesRoundTrip) {
    History in;
    in.operations = {op(3, "rec \"x\"", 42, "w3-9", "stale")};
    in.losses = {{3, "rec", 42, 77, "not_owner"}};
    in.faults = {{"kill", "w3", 5, 5}};
    History out;
    EXPECT_TRUE(parse_history_line(to_json_line(in.operations[0]), out));
    EXPECT_TRUE(parse_history_line(to_json_line(in.losses[0]), out));
    EXPECT_TRUE(parse_history_line(to_json_line(in.faults[0]), out));
    EXPECT_FALSE(parse_history_line("{\"type\":\"op\"}", out));
    EXPECT_FALSE(parse_history_line("not json", out));
    ASSERT_EQ(out.operations.size(), 1u);
    EXPECT_EQ(out.operations[0].record, "rec \"x\"");
    EXPECT_EQ(out.operations[0].fence, 42u);
    EXPECT_EQ(out.losses[0].reason, "not_owner");
    EXPECT_EQ(out.faults[0].target, "w3");
}

TEST(DemoTimeline, MarksRejectionsPausesAndCrashesAndEscapesNames) {
    TimelineRun run{"with fencing", {}, {}};
    run.history.operations = {op(0, "<r0>", 1, "w0-1", "applied"), op(1, "<r0>", 2, "w1-1", "stale")};
    run.history.faults = {{"pause", "w0", 1, 2}, {"kill", "w1", 2, 2}, {"pause", "redis", 1, 3}};
    run.history.losses = {{0, "<r0>", 1, 2, "expired"}};
    const std::string html = render_timeline({run});
    EXPECT_NE(html.find("<svg"), std::string::npos);
    EXPECT_NE(html.find("stale write rejected: &lt;r0&gt; fence 2"), std::string::npos);
    EXPECT_NE(html.find("worker 0 paused"), std::string::npos);
    EXPECT_NE(html.find("worker 1 killed"), std::string::npos);
    EXPECT_NE(html.find("Redis paused"), std::string::npos);
    EXPECT_NE(html.find("lease lost (expired)"), std::string::npos);
    EXPECT_EQ(html.find("<r0>"), std::string::npos) << "record names must be escaped";
}

}  // namespace
}  // namespace fencelock::demo

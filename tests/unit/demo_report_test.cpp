// The demo's report arithmetic on hand-written histories.
#include <gtest/gtest.h>

#include <tuple>

#include "demo/events.hpp"
#include "demo/failover_report.hpp"
#include "demo/timeline.hpp"

namespace fencelock::demo {
namespace {

Operation op(int worker, std::string record, std::uint64_t fence, std::string id, std::string result,
             std::string based_on = "") {
    return {worker,
            std::move(record),
            fence,
            std::move(id),
            1,
            result == "aborted" || result == "contended" ? 0 : 2,
            3,
            std::move(result),
            std::move(based_on)};
}

// An applied write: its lease acquired at `acquired`, sent at `sent`, acknowledged at `acked`, on
// top of `based_on` (the last update in what it read).
Operation write(std::string record, std::string id, std::string based_on, std::int64_t acquired, std::int64_t sent,
                std::int64_t acked, std::uint64_t fence = 1) {
    return {0, std::move(record), fence, std::move(id), acquired, sent, acked, "applied", std::move(based_on)};
}

using Overwrites = std::vector<std::tuple<std::string, std::string, std::string>>;  // lost, overwriter, culprit

Overwrites overwrites(const Report& r) {
    Overwrites out;
    for (const auto& o : r.overwrites) out.emplace_back(o.lost_id, o.overwriter_id, o.culprit_id);
    return out;
}

TEST(DemoReport, NamesTheWriteThatOverwroteEachLostUpdateAndTheStaleOneOfThePair) {
    History h;
    h.operations = {// r0: a; b and c build on it; x's lease came before b's, x read "a" only and wrote "a x"
                    // late, destroying b and c: x is the stale write. d builds on x. a's acknowledgement came
                    // late (its worker paused after the commit), after b was sent: not b's overwriter, since
                    // b builds on it.
                    write("r0", "a", "", 0, 10, 35), write("r0", "b", "a", 20, 30, 40),
                    write("r0", "c", "b", 45, 50, 60), write("r0", "x", "a", 12, 70, 80),
                    write("r0", "d", "x", 85, 90, 100),
                    // r1: f, from an older lease, had read the empty record before e landed. r1's, not r0's x.
                    write("r1", "e", "", 70, 71, 72), write("r1", "f", "", 60, 75, 78),
                    // r2: s's lease lapsed before its write; n took the lease and read the record before s's
                    // write landed, then wrote over it. s is both the lost update and the stale write.
                    write("r2", "s", "", 10, 50, 55), write("r2", "n", "", 30, 60, 65),
                    // r3: g was overwritten by a write the history does not show (its worker was killed
                    // before logging it): nothing is invented.
                    write("r3", "g", "", 5, 10, 20)};
    const Report r = make_report(h, {{"r0", "a x d"}, {"r1", "f"}, {"r2", "n"}, {"r3", "unlogged"}});
    EXPECT_EQ(r.lost_ids, (std::set<std::string>{"b", "c", "e", "g", "s"}));
    EXPECT_EQ(overwrites(r), (Overwrites{{"b", "x", "x"}, {"c", "x", "x"}, {"e", "f", "f"}, {"s", "n", "s"}}));
}

TEST(DemoReport, TheFirstWriteAcknowledgedAfterALostUpdateThatDidNotSeeItOverwroteIt) {
    History h;
    // Both y and z read the record before l landed; y's write reached the store first.
    h.operations = {write("r0", "l", "", 9, 10, 20), write("r0", "z", "", 3, 25, 40), write("r0", "y", "", 5, 22, 30)};
    const Report r = make_report(h, {{"r0", "z"}});
    EXPECT_EQ(overwrites(r), (Overwrites{{"l", "y", "y"}, {"y", "z", "z"}}));
    // With fencing nothing is lost, so nothing is to blame.
    EXPECT_TRUE(make_report(h, {{"r0", "l y z"}}).overwrites.empty());
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

// A failover history: leases before the kill at t = 100, then leases after it, with `fences`.
History failover_history(std::vector<std::uint64_t> before, std::vector<std::uint64_t> after) {
    History h;
    h.faults = {{kill_kind, failover_target, 100, 100}, {promoted_kind, failover_target, 150, 150}};
    int n = 0;
    for (auto fence : before) h.operations.push_back(write("r0", "b" + std::to_string(++n), "", 40, 50, 60, fence));
    for (auto fence : after) h.operations.push_back(write("r0", "a" + std::to_string(++n), "", 190, 200, 210, fence));
    return h;
}

TEST(DemoFailoverReport, APlainCounterWentBackAndReissuedFences) {
    const History h = failover_history({20, 21, 22}, {18, 19, 20, 21, 22, 23});
    const FailoverReport r = make_failover_report(h, make_report(h, {}), 17, FenceSource::incr_counter);
    EXPECT_EQ(r.counter_before, 22u);
    EXPECT_EQ(r.counter_regression, 5);
    EXPECT_EQ(r.first_fence_after, 18u);
    EXPECT_EQ(r.fences_issued_twice, 3u) << "20, 21 and 22";
    EXPECT_EQ(fences_after_failover(r), "went back by 5");
    EXPECT_EQ(fences_after_failover(make_failover_report(h, make_report(h, {}), 22, FenceSource::incr_counter)),
              "did not go back");
}

TEST(DemoFailoverReport, ClockBasedFencesContinueFromThePromotedMastersClock) {
    // The replica had replicated the counter up to ...251334; the new master's first fence is its
    // clock, above every fence issued before: its counter is behind, but no fence goes back.
    const History h = failover_history({1796128988251334, 1796128988888108}, {1796128990606975, 1796128990706975});
    const FailoverReport r = make_failover_report(h, make_report(h, {}), 1796128988251334, FenceSource::redis_clock);
    EXPECT_EQ(r.first_fence_after, 1796128990606975u);
    EXPECT_EQ(r.fences_issued_twice, 0u);
    EXPECT_EQ(fences_after_failover(r), "clock-based, no fence reissued");
    EXPECT_EQ(fences_after_failover(r).find("went back"), std::string::npos);

    // A promoted master whose clock lags the old one's by more than the failover took: said so.
    const History lagging = failover_history({1000, 2000}, {1500, 1600});
    EXPECT_EQ(
        fences_after_failover(make_failover_report(lagging, make_report(lagging, {}), 1000, FenceSource::redis_clock)),
        "clock-based, 500 us behind");
    const History repeated = failover_history({1000, 2000}, {2000, 2100});
    EXPECT_EQ(fences_after_failover(
                  make_failover_report(repeated, make_report(repeated, {}), 1000, FenceSource::redis_clock)),
              "clock-based, 1 reissued");
}

TEST(DemoReport, HistoryLinesRoundTrip) {
    History in;
    in.operations = {op(3, "rec \"x\"", 42, "w3-9", "stale", "w1-4")};
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
    EXPECT_EQ(out.operations[0].based_on, "w1-4");
    // A line from before based_on was recorded still reads: the write built on nothing known.
    EXPECT_TRUE(parse_history_line(R"({"type":"op","worker":1,"record":"r","fence":2,"id":"w1-1","acquired_ns":1,)"
                                   R"("write_ns":2,"end_ns":3,"result":"applied"})",
                                   out));
    ASSERT_EQ(out.operations.size(), 2u);
    EXPECT_EQ(out.operations[1].based_on, "");
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

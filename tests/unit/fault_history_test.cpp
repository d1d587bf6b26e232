// The checker must be able to fail: hand-written histories that do and do not violate each
// property, the recorder's round trip (including a torn line), and the in-test target.
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "faults/fault_history.hpp"
#include "faults/json_lines.hpp"
#include "faults/target.hpp"
#include "faults/worker.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;

AcceptedWrite w(std::uint64_t seq, std::string r, std::uint64_t fence, std::string key = {}) {
    return {seq, std::move(r), fence, {}, std::move(key)};
}

// An op that ended ok, with a fence, from a to b.
Op done(OpKind kind, std::string p, std::string r, std::uint64_t fence, std::int64_t a, std::int64_t b) {
    Op op;
    op.process = std::move(p);
    op.kind = kind;
    op.resource = std::move(r);
    op.fence = fence;
    op.invoke_ns = a;
    op.complete_ns = b;
    op.outcome = Outcome::ok;
    return op;
}

Op hold(std::string p, std::string r, std::uint64_t fence, std::int64_t a, std::int64_t b) {
    return done(OpKind::hold, std::move(p), std::move(r), fence, a, b);
}

Op write(std::string p, std::string r, std::string key, Outcome o, std::int64_t a = 0, std::int64_t b = 1) {
    Op op;
    op.process = std::move(p);
    op.kind = OpKind::write;
    op.resource = std::move(r);
    op.key = std::move(key);
    op.outcome = o;
    op.invoke_ns = a;
    op.complete_ns = o == Outcome::invoke ? 0 : b;
    return op;
}

Op acquired(std::string p, std::string r, std::uint64_t fence, std::int64_t a, std::int64_t b, std::string note = {}) {
    Op op = done(OpKind::acquire, std::move(p), std::move(r), fence, a, b);
    op.note = std::move(note);
    return op;
}

Op fenced_write(std::string p, std::string r, std::string key, std::uint64_t fence, std::int64_t a) {
    Op op = write(std::move(p), std::move(r), std::move(key), Outcome::ok, a, a + 1);
    op.fence = fence;
    return op;
}

TEST(FenceOrder, IncreasingPerResourceIsFine) {
    std::vector<AcceptedWrite> log{w(1, "a", 1), w(2, "b", 1), w(3, "a", 5), w(4, "b", 2)};
    EXPECT_TRUE(check_fence_order(log).empty());
}

TEST(FenceOrder, StaleAndRepeatedFencesAreReported) {
    std::vector<AcceptedWrite> log{w(1, "a", 3), w(2, "a", 2), w(3, "a", 3), w(4, "a", 4)};
    const auto v = check_fence_order(log);
    ASSERT_EQ(v.size(), 2u);
    EXPECT_NE(v[0].find("accepted fence 2"), std::string::npos) << v[0];
    EXPECT_EQ(count_stale_accepted(log), 2u);
}

TEST(Exclusion, BackToBackAndOtherResourcesAreFine) {
    std::vector<Op> ops{hold("A", "r", 1, 0, 100), hold("B", "r", 2, 100, 200), hold("C", "s", 1, 50, 150)};
    EXPECT_TRUE(check_exclusion(ops).empty());
}

TEST(Exclusion, OverlapIsReportedEvenAcrossANestedHold) {
    // C overlaps A although B (which started between them) ended before C began.
    std::vector<Op> ops{hold("A", "r", 1, 0, 1000), hold("B", "r", 2, 10, 20), hold("C", "r", 3, 500, 600)};
    EXPECT_EQ(check_exclusion(ops).size(), 2u);  // B inside A, C inside A
}

TEST(FinalState, AcknowledgedWritesPresentExactlyOnce) {
    std::vector<Op> ops{write("A", "r", "a1", Outcome::ok), write("B", "r", "b1", Outcome::ok),
                        write("C", "r", "c1", Outcome::fail), write("D", "r", "d1", Outcome::unknown)};
    EXPECT_TRUE(check_final_state(ops, {{"r", "a1,b1"}}, append_list_model()).empty());
    EXPECT_TRUE(check_final_state(ops, {{"r", "a1,b1,d1"}}, append_list_model()).empty())
        << "an unknown write may have happened";
}

TEST(FinalState, LostDuplicatedPhantomAndUnexplainedAreReported) {
    std::vector<Op> ops{write("A", "r", "a1", Outcome::ok), write("B", "r", "b1", Outcome::ok),
                        write("C", "r", "c1", Outcome::fail), write("D", "r", "d1", Outcome::unknown)};
    EXPECT_EQ(check_final_state(ops, {{"r", "b1"}}, append_list_model()).size(), 1u) << "a1 lost";
    EXPECT_EQ(check_final_state(ops, {{"r", "a1,b1,a1"}}, append_list_model()).size(), 1u) << "a1 twice";
    EXPECT_EQ(check_final_state(ops, {{"r", "a1,b1,c1"}}, append_list_model()).size(), 1u) << "failed c1 applied";
    EXPECT_EQ(check_final_state(ops, {{"r", "a1,b1,d1,d1"}}, append_list_model()).size(), 1u) << "d1 twice";
    EXPECT_EQ(check_final_state(ops, {{"r", "a1,b1,zz"}}, append_list_model()).size(), 1u) << "zz unexplained";
    EXPECT_EQ(check_final_state(ops, {}, append_list_model()).size(), 2u) << "resource missing: a1, b1 lost";
}

TEST(FinalState, ARetriedKeyCountsOnce) {
    // A job whose first write had an unknown outcome and whose retry was acknowledged.
    std::vector<Op> ops{write("A", "r", "j1", Outcome::unknown), write("A", "r", "j1", Outcome::ok)};
    EXPECT_TRUE(check_final_state(ops, {{"r", "j1"}}, append_list_model()).empty());
    EXPECT_EQ(check_final_state(ops, {{"r", "j1,j1"}}, append_list_model()).size(), 1u);
}

TEST(Idempotency, OneEffectPerKey) {
    std::vector<AcceptedWrite> fine{w(1, "r", 1, "k1"), w(2, "r", 2, "k2"), w(3, "r", 3, "")};
    EXPECT_TRUE(check_idempotency(fine).empty());
    std::vector<AcceptedWrite> twice{w(1, "r", 1, "k1"), w(2, "s", 2, "k1")};
    EXPECT_EQ(check_idempotency(twice).size(), 1u);
}

TEST(Completion, EveryOpEndsWithinTheBound) {
    std::vector<Op> fine{write("A", "r", "a", Outcome::ok, 0, 5'000'000), write("B", "r", "b", Outcome::unknown, 0, 1),
                         hold("C", "r", 1, 0, 60'000'000'000)};
    EXPECT_TRUE(check_completion(fine, 10ms).empty()) << "holds are exempt; unknown is an ending";
    std::vector<Op> bad{write("A", "r", "a", Outcome::invoke), write("B", "r", "b", Outcome::fail, 0, 20'000'000)};
    EXPECT_EQ(check_completion(bad, 10ms).size(), 2u);
}

TEST(Check, ReportCountsEveryProperty) {
    History h;
    h.ops = {hold("A", "r", 1, 0, 100), hold("B", "r", 2, 50, 150), write("A", "r", "a", Outcome::ok),
             write("B", "r", "b", Outcome::invoke)};
    h.accepted = {w(1, "r", 2, "b"), w(2, "r", 1, "a"), w(3, "r", 3, "a")};
    h.final_values = {{"r", "a"}};
    const Report r = check(h, {.completion_bound = 1s});
    EXPECT_EQ(r.fence_order.size(), 1u);
    EXPECT_EQ(r.stale_accepted, 1u);
    EXPECT_EQ(r.exclusion.size(), 1u);
    EXPECT_EQ(r.idempotency.size(), 1u);
    EXPECT_EQ(r.completion.size(), 1u);
    EXPECT_TRUE(r.final_state.empty());
    EXPECT_EQ(r.total(), 4u);
    EXPECT_EQ(r.all().size(), 4u);
}

TEST(UniqueFence, OneFencePerGrantAndARetryIsTheSameGrant) {
    std::vector<Op> fine{acquired("A", "r", 1, 0, 1), acquired("A", "r", 1, 2, 3, "reacquired"),
                         acquired("B", "r", 2, 4, 5), acquired("C", "s", 1, 0, 1)};
    EXPECT_TRUE(check_unique_fences(fine).empty());
}

TEST(UniqueFence, AFenceIssuedAgainAfterAFailoverIsReported) {
    // B got 11 before the failover (lost with the old master), C got 11 again after it; D's
    // plain second grant of 12 in one process is no retry either.
    std::vector<Op> ops{acquired("B", "r", 11, 0, 1), acquired("C", "r", 11, 10, 11), acquired("D", "r", 12, 20, 21),
                        acquired("D", "r", 12, 30, 31)};
    const auto v = check_unique_fences(ops);
    ASSERT_EQ(v.size(), 2u);
    EXPECT_NE(v[0].find("fence 11 issued to B acquire#0 fence 11 and to C"), std::string::npos) << v[0];
}

TEST(LeaseOrder, WritesInLeaseOrderAreFine) {
    // Even with a rejected (so absent) write in between and a concurrent pair of grants.
    std::vector<Op> ops{acquired("A", "r", 5, 0, 10),  fenced_write("A", "r", "a", 5, 11),
                        acquired("B", "r", 7, 20, 30), fenced_write("B", "r", "b", 7, 31),
                        acquired("C", "r", 9, 25, 40), fenced_write("C", "r", "c", 9, 41),
                        acquired("D", "s", 1, 0, 1),   fenced_write("D", "s", "d", 1, 50)};
    std::vector<AcceptedWrite> log{w(1, "r", 5, "a"), w(2, "r", 9, "c"), w(3, "r", 7, "b"), w(4, "s", 1, "d")};
    EXPECT_TRUE(check_lease_order(ops, log).empty()) << "B and C were granted concurrently: no order";
}

TEST(LeaseOrder, AnOlderLeasesWriteAcceptedAfterANewerOnesIsReported) {
    // X got fence 15 before a failover; Y got 13 after it and wrote first; the store saw the
    // fences increase (13, 15), the leases did not.
    std::vector<Op> ops{acquired("X", "r", 15, 0, 10), acquired("Y", "r", 13, 100, 110),
                        fenced_write("Y", "r", "y", 13, 120), fenced_write("X", "r", "x", 15, 200)};
    std::vector<AcceptedWrite> log{w(1, "r", 13, "y"), w(2, "r", 15, "x")};
    EXPECT_TRUE(check_fence_order(log).empty());
    const auto v = check_lease_order(ops, log);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_NE(v[0].find("write #2 of X acquire#0 fence 15 accepted after write #1 of Y"), std::string::npos) << v[0];
    EXPECT_EQ(check({.ops = ops, .accepted = log, .final_values = {}}, {.leases = true}).lease_order.size(), 1u);
    EXPECT_TRUE(check({.ops = ops, .accepted = log, .final_values = {}}).lease_order.empty()) << "off by default";
}

TEST(LeaseOrder, UntraceableWritesAreLeftOut) {
    std::vector<Op> ops{fenced_write("Q", "r", "q", 3, 0), acquired("Y", "r", 2, 100, 110),
                        fenced_write("Y", "r", "y", 2, 120)};
    std::vector<AcceptedWrite> log{w(1, "r", 2, "y"), w(2, "r", 3, "q")};
    EXPECT_TRUE(check_lease_order(ops, log).empty());
}

TEST(Exclusion, HoldsBegunWhileReplicationWasCutCanBeLeftOut) {
    std::vector<Op> ops{hold("A", "r", 1, 0, 100), hold("X", "r", 15, 200, 900), hold("C", "r", 11, 500, 600),
                        acquired("X", "r", 15, 150, 199)};
    EXPECT_EQ(check_exclusion(ops).size(), 1u);
    const auto kept = without_holds_begun_in(ops, 150, 400);
    EXPECT_EQ(kept.size(), 3u) << "only X's hold goes; its acquire op stays";
    EXPECT_TRUE(check_exclusion(kept).empty());
}

class TempDir : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/fencelock-history-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir = tmpl;
    }
    void TearDown() override { std::filesystem::remove_all(dir); }
    std::filesystem::path dir;
};

using RecorderTest = TempDir;

TEST_F(RecorderTest, RoundTripsOpsAndIgnoresATornLine) {
    {
        Recorder a("A", dir / "a.jsonl");
        const auto id = a.invoke(OpKind::write, "r \"quoted\"", 7, "x,y", "y");
        a.complete(id, Outcome::fail, 0, {}, "stale");
        a.hold("r", 7, 10, 20);
        a.invoke(OpKind::acquire, "r");  // never completed
    }
    { std::ofstream(dir / "a.jsonl", std::ios::app) << "{\"p\":\"A\",\"id\":9,\"ev\":\"inv"; }
    Recorder b("B", dir / "b.jsonl");
    b.complete(b.invoke(OpKind::read, "r"), Outcome::ok, 0, "x");

    const auto ops = load_ops(dir);
    ASSERT_EQ(ops.size(), 4u);
    EXPECT_EQ(ops[0].resource, "r \"quoted\"");
    EXPECT_EQ(ops[0].outcome, Outcome::fail);
    EXPECT_EQ(ops[0].fence, 7u);
    EXPECT_EQ(ops[0].value, "x,y");
    EXPECT_EQ(ops[0].note, "stale");
    EXPECT_EQ(ops[1].kind, OpKind::hold);
    EXPECT_EQ(ops[1].complete_ns, 20);
    EXPECT_EQ(ops[2].outcome, Outcome::invoke);
    EXPECT_EQ(ops[3].process, "B");
    EXPECT_EQ(ops[3].value, "x");
}

TEST(JsonLine, ParsesWhatItDumps) {
    JsonLine l;
    l.set("s", std::string("a\"b\\c\n\x01")).set("n", std::int64_t{-42});
    auto back = JsonLine::parse(l.dump());
    ASSERT_TRUE(back);
    EXPECT_EQ(back->str("s"), "a\"b\\c\n\x01");
    EXPECT_EQ(back->num("n"), -42);
    EXPECT_FALSE(JsonLine::parse("{\"a\":1"));
    EXPECT_FALSE(JsonLine::parse("{\"a\":[1]}"));
}

using TargetTest = TempDir;

TEST_F(TargetTest, FencedRegisterRejectsStaleAndDuplicateWrites) {
    auto t = FileRegister::create(dir, true);
    EXPECT_EQ(t->write("r", "a", 2, "a").status, TargetStatus::applied);
    EXPECT_EQ(t->write("r", "b", 1, "b").status, TargetStatus::stale);
    EXPECT_EQ(t->write("r", "c", 2, "c").status, TargetStatus::stale) << "equal fence is stale";
    EXPECT_EQ(t->write("r", "a", 3, "a").status, TargetStatus::duplicate);
    EXPECT_EQ(t->write("r", "a,d", 3, "d").status, TargetStatus::applied);
    EXPECT_EQ(t->read("r"), "a,d");
    EXPECT_EQ(t->last_fence("r"), 3u);
    EXPECT_EQ(t->accepted().size(), 2u);
    auto reopened = FileRegister::open(dir);
    EXPECT_TRUE(reopened->fencing());
    EXPECT_EQ(reopened->read("r"), "a,d");
}

TEST_F(TargetTest, UnfencedRegisterAcceptsEverythingAndTheCheckerNotices) {
    auto t = FileRegister::create(dir, false);
    Recorder rec("A", dir / "h.jsonl");
    RmwWorker worker(rec, *t);
    EXPECT_EQ(worker.write("r", "", "new", 5), TargetStatus::applied);
    EXPECT_EQ(worker.write("r", "", "old", 4), TargetStatus::applied);  // a stale write overwrites
    const Report r = check(collect(*t, load_ops_file(dir / "h.jsonl")));
    EXPECT_EQ(r.stale_accepted, 1u);
    EXPECT_EQ(r.final_state.size(), 1u) << "new was lost";
}

TEST_F(TargetTest, ConcurrentWritersAreSerialized) {
    auto t = FileRegister::create(dir, true);
    std::vector<std::jthread> threads;
    for (int i = 0; i < 4; ++i)
        threads.emplace_back([&, i] {
            auto mine = FileRegister::open(dir);
            for (int k = 1; k <= 25; ++k) (void)mine->write("r", "v", static_cast<std::uint64_t>(k * 4 + i), "");
        });
    threads.clear();
    const auto log = t->accepted();
    EXPECT_TRUE(check_fence_order(log).empty());
    for (std::size_t i = 0; i < log.size(); ++i) EXPECT_EQ(log[i].seq, i + 1);
}

}  // namespace
}  // namespace fencelock::faults

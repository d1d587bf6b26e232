// The linearizability checker must pass what is linearizable, reorder concurrent ops to find
// it, treat a lost reply as "may or may not have happened", and flag each negative control:
// overlapping holds, a stale fence accepted, a read that misses an acknowledged write, an
// element added twice, a lost update. Hand-made histories, one resource "r" unless named.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "faults/linearizability.hpp"

namespace fencelock::faults {
namespace {

Op make(OpKind kind, std::string p, std::int64_t a, std::int64_t b, Outcome o = Outcome::ok) {
    static std::uint64_t next_id = 1;
    Op op;
    op.process = std::move(p);
    op.id = next_id++;
    op.kind = kind;
    op.resource = "r";
    op.invoke_ns = a;
    op.complete_ns = o == Outcome::invoke ? 0 : b;
    op.outcome = o;
    return op;
}

Op hold(std::string p, std::uint64_t fence, std::int64_t a, std::int64_t b) {
    Op op = make(OpKind::hold, std::move(p), a, b);
    op.fence = fence;
    return op;
}

Op acquire(std::string p, std::uint64_t fence, std::int64_t a, std::int64_t b) {
    Op op = make(OpKind::acquire, std::move(p), a, b);
    op.fence = fence;
    return op;
}

// A read-modify-write's write: `value` is the whole list written, `key` the element appended.
Op write(std::string p, std::uint64_t fence, std::string key, std::string value, std::int64_t a, std::int64_t b,
         Outcome o = Outcome::ok) {
    Op op = make(OpKind::write, std::move(p), a, b, o);
    op.fence = fence;
    op.key = std::move(key);
    op.value = std::move(value);
    return op;
}

Op read(std::string p, std::string value, std::int64_t a, std::int64_t b) {
    Op op = make(OpKind::read, std::move(p), a, b);
    op.value = std::move(value);
    return op;
}

History history(std::vector<Op> ops, std::map<std::string, std::string> finals = {}) {
    History h;
    h.ops = std::move(ops);
    h.final_values = std::move(finals);
    return h;
}

// The verdict of `model` on resource `resource`; skipped when the model had nothing to check.
const ModelResult* model_of(const LinearizabilityReport& report, std::string_view model,
                            const std::string& resource = "r") {
    for (const auto& r : report.resources)
        if (r.resource == resource)
            for (const auto& m : r.models)
                if (m.model == model) return &m;
    return nullptr;
}

LinVerdict verdict(const LinearizabilityReport& report, std::string_view model) {
    const ModelResult* m = model_of(report, model);
    return m ? m->verdict : LinVerdict::skipped;
}

constexpr std::string_view mutex = MutexModel::name, reg = FencedRegisterModel::name, set = SetModel::name;

// ---- mutex --------------------------------------------------------------------------------

TEST(LinearizabilityMutex, BackToBackHoldsAreLinearizable) {
    const auto r = check_linearizability(history({hold("A", 1, 0, 10), hold("B", 2, 10, 20), hold("C", 3, 25, 30)}));
    EXPECT_EQ(verdict(r, mutex), LinVerdict::ok);
    EXPECT_EQ(r.count(LinVerdict::ok), 1u);
    EXPECT_EQ(r.headline(), "linearizable: 1 resources ok (mutex 1)");
}

TEST(LinearizabilityMutex, ALockTakesEffectInsideItsAcquire) {
    // B's acquire returned at 12, after A's hold ended at 10: B's lock fits in [10, 12].
    const auto r = check_linearizability(history({acquire("B", 2, 0, 12), hold("A", 1, 0, 10), hold("B", 2, 12, 20)}));
    EXPECT_EQ(verdict(r, mutex), LinVerdict::ok);
}

TEST(LinearizabilityMutex, OverlappingHoldsAreFlagged) {
    const auto r = check_linearizability(history({hold("A", 1, 0, 10), hold("B", 2, 5, 15)}));
    ASSERT_EQ(verdict(r, mutex), LinVerdict::violation);
    const auto v = r.violations();
    ASSERT_EQ(v.size(), 1u);
    EXPECT_NE(v[0].find("the mutex is held by"), std::string::npos) << v[0];
    EXPECT_NE(r.headline().find("1 NOT linearizable"), std::string::npos) << r.headline();
}

TEST(LinearizabilityMutex, AHoldInsideAnotherIsFlagged) {
    const auto r =
        check_linearizability(history({hold("A", 1, 0, 1000), hold("B", 2, 10, 20), hold("C", 3, 2000, 2100)}));
    EXPECT_EQ(verdict(r, mutex), LinVerdict::violation);
}

TEST(LinearizabilityMutex, ResourcesAreCheckedApart) {
    Op other = hold("B", 1, 5, 15);
    other.resource = "s";
    const auto r = check_linearizability(history({hold("A", 1, 0, 10), other}));
    EXPECT_EQ(r.count(LinVerdict::ok), 2u);
    EXPECT_EQ(r.only("s").resources.size(), 1u);
}

// ---- fenced register ----------------------------------------------------------------------

TEST(LinearizabilityRegister, ConcurrentWritesAreReorderedByFence) {
    // B (fence 2) was called first, but A (fence 1) must have taken effect first: the reads
    // see a, then b.
    const auto r = check_linearizability(history(
        {write("B", 2, "b", "b", 0, 10), write("A", 1, "a", "a", 2, 12), read("C", "b", 13, 14)}, {{"r", "b"}}));
    EXPECT_EQ(verdict(r, reg), LinVerdict::ok);
    EXPECT_GT(model_of(r, reg)->states, 0u);
}

TEST(LinearizabilityRegister, AStaleFenceAcceptedIsFlagged) {
    const auto r = check_linearizability(history({write("A", 2, "a", "a", 0, 1), write("B", 1, "b", "b", 2, 3)}));
    ASSERT_EQ(verdict(r, reg), LinVerdict::violation);
    EXPECT_NE(model_of(r, reg)->detail.find("fence 1 is not above the last accepted fence 2"), std::string::npos)
        << model_of(r, reg)->detail;
}

TEST(LinearizabilityRegister, AReadThatMissesAnAcknowledgedWriteIsFlagged) {
    const auto r = check_linearizability(history({write("A", 1, "a", "a", 0, 1), read("B", "", 2, 3)}));
    EXPECT_EQ(verdict(r, reg), LinVerdict::violation);
    EXPECT_EQ(verdict(r, set), LinVerdict::violation);
}

TEST(LinearizabilityRegister, AnUnknownWriteMayHaveTakenEffect) {
    const auto taken = check_linearizability(history(
        {write("A", 1, "a", "a", 0, 1, Outcome::unknown), read("B", "", 2, 3), read("B", "a", 5, 6)}, {{"r", "a"}}));
    EXPECT_EQ(verdict(taken, reg), LinVerdict::ok) << "it took effect late, between the reads";
    EXPECT_EQ(verdict(taken, set), LinVerdict::ok);
    const auto not_taken = check_linearizability(
        history({write("A", 1, "a", "a", 0, 0, Outcome::invoke), read("B", "", 5, 6)}, {{"r", ""}}));
    EXPECT_EQ(verdict(not_taken, reg), LinVerdict::ok) << "or never";
    EXPECT_EQ(verdict(not_taken, set), LinVerdict::ok);
}

TEST(LinearizabilityRegister, AFailedWriteIsLeftOut) {
    const auto r = check_linearizability(
        history({write("A", 2, "a", "a", 0, 1), write("B", 1, "b", "a,b", 2, 3, Outcome::fail)}, {{"r", "a"}}));
    EXPECT_EQ(verdict(r, reg), LinVerdict::ok);
    EXPECT_EQ(verdict(r, set), LinVerdict::ok);
}

TEST(LinearizabilityRegister, UnfencedWritesDoNotFitAndAreSkipped) {
    const auto r = check_linearizability(history({write("A", 0, "a", "a", 0, 1)}, {{"r", "a"}}));
    ASSERT_NE(model_of(r, reg), nullptr);
    EXPECT_EQ(verdict(r, reg), LinVerdict::skipped);
    EXPECT_NE(model_of(r, reg)->detail.find("without a fence"), std::string::npos);
    EXPECT_EQ(verdict(r, set), LinVerdict::ok) << "the set model still runs";
    EXPECT_EQ(r.notes().size(), 1u);
}

TEST(LinearizabilityRegister, AWriteWithoutARecordedValueMatchesAnyRead) {
    // The queue's handler writes inside its transaction and records no value.
    const auto r = check_linearizability(
        history({write("A", 1, "j1", "", 0, 1), write("B", 2, "j2", "", 2, 3)}, {{"r", "j1,j2"}}));
    EXPECT_EQ(verdict(r, reg), LinVerdict::ok);
    EXPECT_EQ(verdict(r, set), LinVerdict::ok);
}

// ---- set ----------------------------------------------------------------------------------

TEST(LinearizabilitySet, ConcurrentAddsInAnyOrderAreLinearizable) {
    // A is tried first (same call time, listed first) and must be undone: C saw b alone.
    const auto r = check_linearizability(history({write("A", 2, "a", "b,a", 0, 10), write("B", 1, "b", "b", 0, 10),
                                                  read("C", "b", 5, 6), read("C", "b,a", 11, 12)},
                                                 {{"r", "b,a"}}));
    EXPECT_EQ(verdict(r, set), LinVerdict::ok);
    EXPECT_EQ(verdict(r, reg), LinVerdict::ok);
}

TEST(LinearizabilitySet, AnElementAddedTwiceIsFlagged) {
    const auto r = check_linearizability(
        history({write("A", 1, "k", "k", 0, 1), write("B", 2, "k", "k,k", 2, 3)}, {{"r", "k,k"}}));
    ASSERT_EQ(verdict(r, set), LinVerdict::violation);
    EXPECT_NE(model_of(r, set)->detail.find("k is in the set already"), std::string::npos) << model_of(r, set)->detail;
}

TEST(LinearizabilitySet, ALostUpdateIsFlaggedThoughEveryFenceIncreased) {
    // Both read "", both append: B's write wipes A's acknowledged element. A register sees
    // nothing wrong (each write replaced the value, fences rose); the set does.
    const auto r = check_linearizability(history(
        {read("A", "", 0, 1), read("B", "", 0, 1), write("A", 1, "a", "a", 2, 3), write("B", 2, "b", "b", 4, 5)},
        {{"r", "b"}}));
    EXPECT_EQ(verdict(r, reg), LinVerdict::ok);
    ASSERT_EQ(verdict(r, set), LinVerdict::violation);
    EXPECT_NE(model_of(r, set)->detail.find("missing a"), std::string::npos) << model_of(r, set)->detail;
}

TEST(LinearizabilitySet, ARetriedKeyCountsOnce) {
    const auto r = check_linearizability(
        history({write("A", 1, "j1", "j1", 0, 1, Outcome::unknown), write("A", 2, "j1", "j1", 2, 3)}, {{"r", "j1"}}));
    EXPECT_EQ(verdict(r, set), LinVerdict::ok);
}

// ---- the bound ----------------------------------------------------------------------------

TEST(LinearizabilityBound, TheStateCapYieldsInconclusive) {
    // 16 concurrent adds and a read no order explains: proving that takes every subset of the
    // adds, 2^16 states.
    std::vector<LinOp> ops;
    for (int i = 0; i < 16; ++i)
        ops.push_back({.kind = LinOp::Kind::add, .element = "k" + std::to_string(i), .call_ns = 0, .return_ns = 100});
    ops.push_back({.kind = LinOp::Kind::read, .elements = {"x"}, .call_ns = 200, .return_ns = 201});
    const auto capped = linearize(SetModel{}, ops, {.max_states = 1000});
    EXPECT_EQ(capped.verdict, LinVerdict::inconclusive);
    EXPECT_NE(capped.detail.find("gave up"), std::string::npos);
    const auto full = linearize(SetModel{}, ops, {});
    EXPECT_EQ(full.verdict, LinVerdict::violation);
    EXPECT_EQ(full.states, (1u << 16) - 1) << "every non-empty subset of the adds";
}

}  // namespace
}  // namespace fencelock::faults

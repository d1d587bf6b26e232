// Kept leases against a real redis-server: automatic renewal, loss detection (stop token,
// callback, valid()), release ordering, destructor behaviour.
#include <atomic>
#include <mutex>

#include "integration/lock_fixture.hpp"
#include "integration/loss_recorder.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

TEST_F(LockTest, HeldLeaseIsRenewedAutomaticallyWithTheSameFence) {
    auto c = client();
    const auto r = resource("kept:1");
    auto held = c.hold(r, {.lease = 600ms});
    ASSERT_TRUE(held && held->acquired()) << (held ? "" : held.error().message());
    HeldLease& lease = *held->lease;
    ASSERT_TRUE(eventually([&] { return lease.renewals() >= 5; }, 10s)) << "renewals: " << lease.renewals();
    EXPECT_TRUE(lease.valid());
    EXPECT_FALSE(lease.stop_token().stop_requested());
    auto info = c.inspect(r);
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->holder->fence, lease.fence());
    EXPECT_EQ(info->last_fence, lease.fence()) << "renewal must never issue a fence";
    EXPECT_GE(info->holder->renewals, 5u);
    EXPECT_EQ(c.keeper_stats().leases_lost, 0u);
}

TEST_F(LockTest, ManyLeasesShareOneKeeperConnectionAndBatchTheirRenewals) {
    auto c = client({.pool_size = 2});
    std::vector<HeldLease> leases;
    // Renewals due within a quarter interval share a batch, so the batch count per round is
    // about (time to take all 200 leases) / (interval / 4). The interval (lease / 3 = 1 s) is
    // long next to that time even on a loaded ThreadSanitizer build (1.5 s lease: 142 batches
    // for 785 renewals there, taking the leases lasted several quarters), so the check below
    // tests batching, not the machine's speed.
    for (int i = 0; i < 200; ++i) {
        auto held = c.hold(resource("many:" + std::to_string(i)), {.lease = 3s});
        ASSERT_TRUE(held && held->acquired());
        leases.push_back(std::move(*held->lease));
    }
    ASSERT_TRUE(eventually(
        [&] { return std::all_of(leases.begin(), leases.end(), [](const HeldLease& l) { return l.renewals() >= 3; }); },
        30s));
    const KeeperStats stats = c.keeper_stats();
    EXPECT_EQ(stats.leases_kept, 200u);
    EXPECT_EQ(stats.leases_lost, 0u);
    EXPECT_GE(stats.renewals_confirmed, 600u);
    // Many renewals per round trip: far fewer batches than renewals.
    EXPECT_LT(stats.batches * 10, stats.renewals_sent) << stats.batches << " batches for " << stats.renewals_sent;
    // One keeper connection plus at most pool_size pooled ones (+1 for this INFO call).
    const std::string info = redis->cli({"INFO", "clients"});
    const auto at = info.find("connected_clients:");
    EXPECT_LE(std::stoi(info.substr(at + 18)), 4);
}

TEST_F(LockTest, LeaseTakenAwayIsLostAsNotOwner) {
    auto c = client();
    LossRecorder recorder;
    const auto r = resource("kept:stolen");
    auto held = c.hold(r, {.lease = 200ms}, recorder.options());
    ASSERT_TRUE(held && held->acquired());
    HeldLease& lease = *held->lease;
    std::atomic<bool> stopped{false};
    std::stop_callback on_stop(lease.stop_token(), [&] { stopped = true; });

    redis->cli({"DEL", "lock:{kept:stolen}"});
    ASSERT_TRUE(eventually([&] { return stopped.load(); }, 5s));
    EXPECT_FALSE(lease.valid());
    EXPECT_EQ(lease.loss(), LossReason::not_owner);
    EXPECT_EQ(recorder.reason(), LossReason::not_owner);
}

TEST_F(LockTest, RenewalStopsAtMaxHoldAndTheLeaseIsLost) {
    auto c = client();
    LossRecorder recorder;
    auto held = c.hold(resource("kept:max"), {.lease = 100ms, .max_hold = 300ms}, recorder.options());
    ASSERT_TRUE(held && held->acquired());
    ASSERT_TRUE(eventually([&] { return held->lease->stop_token().stop_requested(); }, 5s));
    EXPECT_EQ(held->lease->loss(), LossReason::max_hold_exceeded);
    EXPECT_GE(held->lease->renewals(), 1u);
    EXPECT_FALSE(held->lease->valid());
}

TEST_F(LockTest, UnreachableRedisLosesTheLeaseAtSafeUntil) {
    auto c = client({.connect_timeout = 50ms, .command_timeout = 50ms});
    LossRecorder recorder;
    auto held = c.hold(resource("kept:paused"), {.lease = 300ms}, recorder.options());
    ASSERT_TRUE(held && held->acquired());
    redis->pause();
    ASSERT_TRUE(eventually([&] { return held->lease->stop_token().stop_requested(); }, 5s));
    // Lost no earlier than the local deadline: nothing extended it without Redis confirming.
    EXPECT_GE(std::chrono::steady_clock::now(), held->lease->safe_until());
    redis->resume();
    EXPECT_EQ(held->lease->loss(), LossReason::expired);
    EXPECT_FALSE(held->lease->valid());
}

TEST_F(LockTest, ReleaseStopsRenewalBeforeDeletingTheLock) {
    auto c = client();
    const auto r = resource("kept:release");
    // Long enough that a loaded machine (ASan, parallel tests) does not lose it before two renewals.
    auto held = c.hold(r, {.lease = 600ms});
    ASSERT_TRUE(held && held->acquired());
    ASSERT_TRUE(eventually([&] { return held->lease->renewals() >= 2; }, 10s));
    auto released = held->lease->release();
    ASSERT_TRUE(released);
    EXPECT_EQ(*released, ReleaseStatus::released);
    EXPECT_FALSE(held->lease->valid());
    EXPECT_EQ(held->lease->loss(), std::nullopt) << "a release is not a loss";
    const auto renewals = held->lease->renewals();
    const auto sent_before = c.keeper_stats().renewals_sent;

    // Someone else takes the lock; no renewal of ours may ever touch it.
    auto other = client();
    auto b = other.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(b && b->acquired());
    ASSERT_TRUE(eventually([&] { return c.keeper_stats().leases_kept == 0; }));
    EXPECT_EQ(c.keeper_stats().renewals_sent, sent_before);
    EXPECT_EQ(held->lease->renewals(), renewals);
    auto info = other.inspect(r);
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->holder->owner, b->lease->owner.str());
    EXPECT_EQ(info->holder->renewals, 0u);
}

TEST_F(LockTest, DestroyingTheHandleReleasesTheLock) {
    auto c = client();
    const auto r = resource("kept:scope");
    {
        auto held = c.hold(r, {.lease = 10s});
        ASSERT_TRUE(held && held->acquired());
        EXPECT_EQ(redis->cli({"EXISTS", "lock:{kept:scope}"}), "1");
    }
    EXPECT_EQ(redis->cli({"EXISTS", "lock:{kept:scope}"}), "0");
}

TEST_F(LockTest, DestructorReportsAFailedReleaseWithoutThrowing) {
    auto c = client({.connect_timeout = 100ms, .command_timeout = 100ms});
    std::vector<std::error_code> errors;
    KeepOptions keep;
    keep.on_release_error = [&](const ResourceName&, std::error_code ec) { errors.push_back(ec); };
    {
        auto held = c.hold(resource("kept:dtor"), {.lease = 10s}, keep);
        ASSERT_TRUE(held && held->acquired());
        redis->kill();
    }
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(classify(errors[0]), failure_kind::fatal);
}

TEST_F(LockTest, ContendedHoldLeavesNothingForTheKeeper) {
    auto c = client();
    const auto r = resource("kept:contended");
    auto first = c.hold(r, {.lease = 10s});
    ASSERT_TRUE(first && first->acquired());
    auto second = c.hold(r, {.lease = 10s});
    ASSERT_TRUE(second);
    EXPECT_FALSE(second->acquired());
    EXPECT_GT(second->holder_ttl, 5s);
    EXPECT_EQ(c.keeper_stats().leases_kept, 1u);
}

TEST_F(LockTest, HandleMovesToAnotherThreadAndIsReleasedThere) {
    auto c = client();
    const auto r = resource("kept:moved");
    auto held = c.hold(r, {.lease = 10s});
    ASSERT_TRUE(held && held->acquired());
    std::expected<ReleaseStatus, std::error_code> result;
    std::jthread worker([&, lease = std::move(*held->lease)]() mutable { result = lease.release(); });
    worker.join();
    ASSERT_TRUE(result);
    EXPECT_EQ(*result, ReleaseStatus::released);
    EXPECT_EQ(redis->cli({"EXISTS", "lock:{kept:moved}"}), "0");
}

TEST_F(LockTest, InvalidKeepOptionsAreMisuse) {
    auto c = client();
    KeepOptions keep;
    keep.renew_every = 10s;
    EXPECT_THROW((void)c.hold(resource("kept:bad"), {.lease = 1s}, keep), std::invalid_argument);
    EXPECT_EQ(redis->cli({"EXISTS", "lock:{kept:bad}"}), "0");
}

}  // namespace
}  // namespace fencelock::test_support

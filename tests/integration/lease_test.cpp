// Lease lifecycle against a real redis-server: expiry and takeover, same-owner retry,
// server-enforced max hold, inspect.
#include "integration/lock_fixture.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

class LeaseTest : public LockTest {};

TEST_F(LeaseTest, ExpiredLeaseIsTakenOverWithAHigherFenceAndTheOldOwnerCannotTouchIt) {
    auto a_client = client();
    auto b_client = client();
    const auto r = resource("invoice:42");

    auto a = a_client.try_acquire(r, {.lease = 100ms});
    ASSERT_TRUE(a && a->acquired());
    auto blocked = b_client.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(blocked);
    EXPECT_FALSE(blocked->acquired());
    EXPECT_GT(blocked->holder_ttl, 0ms);

    ASSERT_TRUE(eventually([&] { return lock_gone(a_client, r); })) << "A's lease never expired";
    // Nobody holds it now: told apart from another owner holding it (below).
    auto expired_release = a_client.release(r, a->lease->owner);
    ASSERT_TRUE(expired_release);
    EXPECT_EQ(*expired_release, ReleaseStatus::not_held);
    auto b = b_client.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(b && b->acquired());
    EXPECT_GT(b->lease->fence, a->lease->fence);

    auto late_renew = a_client.renew(r, a->lease->owner, 10s);
    ASSERT_TRUE(late_renew);
    EXPECT_EQ(late_renew->status, RenewStatus::not_owner);
    auto late_release = a_client.release(r, a->lease->owner);
    ASSERT_TRUE(late_release);
    EXPECT_EQ(*late_release, ReleaseStatus::not_owner);

    auto info = b_client.inspect(r);
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->holder->owner, b->lease->owner.str());
    EXPECT_EQ(info->holder->fence, b->lease->fence);
    EXPECT_GT(info->holder->ttl, 5s) << "A's late calls must not shorten B's lease";
}

TEST_F(LeaseTest, SameOwnerRetryReturnsTheSameFenceWithoutIncrementing) {
    auto c = client();
    const auto r = resource("order:7");
    const auto owner = OwnerToken::generate();
    auto first = c.try_acquire(r, owner, {.lease = 10s});
    ASSERT_TRUE(first && first->acquired());
    // The first reply is treated as lost: the caller retries with the same token.
    auto retry = c.try_acquire(r, owner, {.lease = 10s});
    ASSERT_TRUE(retry && retry->acquired());
    EXPECT_TRUE(retry->lease->reacquired);
    EXPECT_FALSE(first->lease->reacquired);
    EXPECT_EQ(retry->lease->fence, first->lease->fence);
    EXPECT_EQ(redis->cli({"GET", "fence:{order:7}"}), std::to_string(first->lease->fence.value()));

    auto other = c.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(other);
    EXPECT_FALSE(other->acquired()) << "a different token must not get the lease";
}

TEST_F(LeaseTest, ReleaseFreesTheLockAndKeepsTheCounter) {
    auto c = client();
    const auto r = resource("account:1");
    auto a = c.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(a && a->acquired());
    auto released = c.release(r, a->lease->owner);
    ASSERT_TRUE(released);
    EXPECT_EQ(*released, ReleaseStatus::released);
    EXPECT_EQ(redis->cli({"EXISTS", "lock:{account:1}"}), "0");
    EXPECT_EQ(redis->cli({"TTL", "fence:{account:1}"}), "-1") << "the counter must never expire";

    auto b = c.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(b && b->acquired());
    EXPECT_GT(b->lease->fence, a->lease->fence);
}

TEST_F(LeaseTest, RenewalKeepsTheFenceAndStopsAtTheServerEnforcedMaxHold) {
    auto c = client();
    const auto r = resource("job:max-hold");
    auto a = c.try_acquire(r, {.lease = 100ms, .max_hold = 400ms});
    ASSERT_TRUE(a && a->acquired());

    unsigned renewed = 0;
    std::optional<Renewal> last;
    ASSERT_TRUE(eventually(
        [&] {
            auto renewal = c.renew(r, a->lease->owner, 100ms);
            EXPECT_TRUE(renewal.has_value());
            if (!renewal) return true;
            last = *renewal;
            if (renewal->status != RenewStatus::renewed) return true;
            EXPECT_EQ(renewal->fence, a->lease->fence) << "renewal must never change the fence";
            EXPECT_EQ(renewal->ttl, 100ms);
            ++renewed;
            std::this_thread::sleep_for(20ms);  // pacing of a renewal loop, not a synchronization
            return false;
        },
        5s));
    ASSERT_TRUE(last);
    EXPECT_EQ(last->status, RenewStatus::max_hold_exceeded);
    EXPECT_EQ(last->fence, a->lease->fence);
    EXPECT_GE(renewed, 3u) << "renewals before the max hold must succeed";

    auto info = c.inspect(r);
    ASSERT_TRUE(info);
    ASSERT_TRUE(info->holder) << "a refused renewal leaves the lease to run out on its own";
    EXPECT_EQ(info->holder->renewals, renewed);
    EXPECT_EQ(info->holder->max_hold_left, 0ms);
}

TEST_F(LeaseTest, RenewalPastTheDeadlineChangesNothing) {
    auto c = client();
    const auto r = resource("job:past-deadline");
    auto a = c.try_acquire(r, {.lease = 10s, .max_hold = 10s});
    ASSERT_TRUE(a && a->acquired());
    // Move the acquisition (and so the deadline) into the past, as if the holder had been
    // renewing for max_hold: meta is '<acquired_ms> <lease_ms> <max_hold_ms> <holder>'.
    redis->cli({"HSET", "lock:{job:past-deadline}", "meta", "1 10000 10000 1 host label"});
    const std::string before = redis->snapshot();
    auto renewal = c.renew(r, a->lease->owner, 1h);
    ASSERT_TRUE(renewal);
    EXPECT_EQ(renewal->status, RenewStatus::max_hold_exceeded);
    EXPECT_EQ(renewal->fence, a->lease->fence);
    EXPECT_LE(std::stoll(redis->cli({"PTTL", "lock:{job:past-deadline}"})), 10000);
    EXPECT_EQ(redis->cli({"HEXISTS", "lock:{job:past-deadline}", "renewals"}), "0");
    EXPECT_EQ(redis->snapshot(), before);
}

TEST_F(LeaseTest, InspectReportsHolderAndCounter) {
    ClientOptions options;
    options.holder_label = "billing-worker";
    auto c = client(options);
    const auto r = resource("invoice:{7} ünïcode name");
    auto none = c.inspect(r);
    ASSERT_TRUE(none);
    EXPECT_FALSE(none->holder);
    EXPECT_EQ(none->last_fence, FencingToken(0));

    auto a = c.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(a && a->acquired());
    ASSERT_TRUE(c.renew(r, a->lease->owner, 20s));
    auto info = c.inspect(r);
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->last_fence, a->lease->fence);
    EXPECT_EQ(info->holder->owner, a->lease->owner.str());
    EXPECT_EQ(info->holder->renewals, 1u);
    EXPECT_EQ(info->holder->lease, 20s);
    EXPECT_EQ(info->holder->label, "billing-worker");
    EXPECT_EQ(info->holder->pid, static_cast<std::int64_t>(::getpid()));
    EXPECT_FALSE(info->holder->host.empty());
    EXPECT_GT(info->holder->ttl, 10s);
}

TEST_F(LeaseTest, AcquireWaitsForAReleaseWithinItsDeadline) {
    auto holder = client();
    auto waiter = client();
    const auto r = resource("order:wait");
    auto a = holder.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(a && a->acquired());
    std::jthread releaser([&] {
        // Release only once the waiter has started trying: its first attempt must fail.
        eventually([&] { return script_calls() >= 2; });
        (void)holder.release(r, a->lease->owner);
    });
    auto b = waiter.acquire(r, {.lease = 10s, .wait = 10s, .backoff = {.base = 1ms, .max = 20ms}});
    ASSERT_TRUE(b && b->acquired());
    EXPECT_GT(b->attempts, 1u);
    EXPECT_GT(b->lease->fence, a->lease->fence);
}

TEST_F(LeaseTest, AcquireGivesUpAtTheDeadlineAsContended) {
    auto c = client();
    const auto r = resource("order:busy");
    auto a = c.try_acquire(r, {.lease = 30s});
    ASSERT_TRUE(a && a->acquired());
    auto b = c.acquire(r, {.lease = 10s, .wait = 100ms, .backoff = {.base = 5ms, .max = 20ms}});
    ASSERT_TRUE(b) << b.error().message();
    EXPECT_FALSE(b->acquired());
    EXPECT_GT(b->attempts, 1u);
    EXPECT_GT(b->holder_ttl, 20s);
}

TEST_F(LeaseTest, AcquireStopsWhenCancelled) {
    auto c = client();
    const auto r = resource("order:cancel");
    ASSERT_TRUE(c.try_acquire(r, {.lease = 30s}));
    std::stop_source stop;
    stop.request_stop();
    auto b = c.acquire(r, {.lease = 10s, .wait = std::chrono::hours(1)}, stop.get_token());
    ASSERT_TRUE(b);
    EXPECT_FALSE(b->acquired());
    EXPECT_EQ(b->attempts, 1u);
}

TEST_F(LeaseTest, KeyPrefixNamespacesBothKeys) {
    ClientOptions options;
    options.key_prefix = "app1:";
    auto c = client(options);
    auto a = c.try_acquire(resource("r"), {.lease = 10s});
    ASSERT_TRUE(a && a->acquired());
    EXPECT_EQ(redis->cli({"EXISTS", "app1:lock:{r}"}), "1");
    EXPECT_EQ(redis->cli({"GET", "app1:fence:{r}"}), std::to_string(a->lease->fence.value()));
    EXPECT_EQ(redis->cli({"EXISTS", "lock:{r}"}), "0");
}

}  // namespace
}  // namespace fencelock::test_support

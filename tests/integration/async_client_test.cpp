// AsyncLockClient against a real redis-server: each operation's callback, many operations from
// one thread, callbacks that call back into the client, and destruction with operations in flight.
#include <atomic>
#include <future>
#include <latch>
#include <stdexcept>
#include <vector>

#include "fencelock/async_client.hpp"
#include "integration/lock_fixture.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

class AsyncClientTest : public LockTest {
protected:
    AsyncLockClient async_client(AsyncOptions async = {}) {
        auto c = AsyncLockClient::create({.endpoint = *parse_redis_url(redis->url())}, async);
        EXPECT_TRUE(c.has_value());
        return std::move(*c);
    }
};

TEST_F(AsyncClientTest, EachOperationCompletesItsCallbackWithTheSyncResult) {
    auto c = async_client();
    const auto r = resource("async:ops");

    auto [acquired, got] = promised<Acquisition>();
    c.try_acquire(r, {.lease = 10s}, std::move(acquired));
    auto first = got.get();
    ASSERT_TRUE(first && first->acquired()) << (first ? "contended" : first.error().message());
    const Lease lease = *first->lease;

    auto [contended, refused] = promised<Acquisition>();
    c.try_acquire(r, {.lease = 10s}, std::move(contended));
    auto second = refused.get();
    ASSERT_TRUE(second);
    EXPECT_FALSE(second->acquired());
    EXPECT_GT(second->holder_ttl, 0ms);

    auto [renewed, renewal] = promised<Renewal>();
    c.renew(r, lease.owner, 20s, std::move(renewed));
    auto ren = renewal.get();
    ASSERT_TRUE(ren);
    EXPECT_EQ(ren->status, RenewStatus::renewed);
    EXPECT_EQ(ren->fence, lease.fence);

    // acquire() waits: it is granted once the release below frees the lock.
    auto [waited, waiting] = promised<Acquisition>();
    auto [released, release] = promised<ReleaseStatus>();
    c.acquire(r, {.lease = 10s, .wait = 10s}, std::move(waited));
    c.release(r, lease.owner, std::move(released));
    EXPECT_EQ(release.get(), ReleaseStatus::released);
    auto third = waiting.get();
    ASSERT_TRUE(third && third->acquired()) << (third ? "contended" : third.error().message());
    EXPECT_GT(third->lease->fence, lease.fence);
    (void)c.sync().release(r, third->lease->owner);

    auto [held, holding] = promised<Holding>();
    c.hold(r, {.lease = 300ms}, {}, std::move(held));
    auto kept = holding.get();
    ASSERT_TRUE(kept && kept->acquired());
    ASSERT_TRUE(eventually([&] { return kept->lease->renewals() >= 2; })) << "the keeper renews an async hold";
    EXPECT_EQ(kept->lease->release(), ReleaseStatus::released);
}

TEST_F(AsyncClientTest, ManyOperationsFromOneThreadAllComplete) {
    auto c = async_client({.runners = 4});
    constexpr int lockers = 200;
    std::vector<std::atomic<int>> calls(lockers);
    std::atomic<int> acquired{0}, released{0};
    std::latch all_released(lockers);
    for (int i = 0; i < lockers; ++i) {
        const auto r = resource("async:many:" + std::to_string(i));
        c.try_acquire(r, {.lease = 10s}, [&, i, r](Result<Acquisition> got) {
            calls[static_cast<std::size_t>(i)].fetch_add(1);
            if (!got || !got->acquired()) return all_released.count_down();
            acquired.fetch_add(1);
            c.release(r, got->lease->owner, [&](Result<ReleaseStatus> s) {
                if (s && *s == ReleaseStatus::released) released.fetch_add(1);
                all_released.count_down();
            });
        });
    }
    all_released.wait();
    EXPECT_EQ(acquired.load(), lockers);
    EXPECT_EQ(released.load(), lockers);
    for (auto& n : calls) EXPECT_EQ(n.load(), 1);
}

TEST_F(AsyncClientTest, ACallbackThatIssuesTheNextOperationDoesNotDeadlock) {
    // One runner: the callback runs on the only thread that could carry out its follow-up.
    auto c = async_client({.runners = 1});
    const auto r = resource("async:chain");
    std::promise<int> finished;
    std::atomic<int> cycles{0};
    std::atomic<std::uint64_t> last_fence{0};
    std::function<void()> cycle = [&] {
        c.try_acquire(r, {.lease = 10s}, [&](Result<Acquisition> got) {
            if (!got || !got->acquired()) return finished.set_value(-1);
            if (got->lease->fence.value() <= last_fence.exchange(got->lease->fence.value()))
                return finished.set_value(-3);  // fences must keep rising
            c.release(r, got->lease->owner, [&](Result<ReleaseStatus> s) {
                if (!s || *s != ReleaseStatus::released) return finished.set_value(-2);
                if (cycles.fetch_add(1) + 1 == 50) return finished.set_value(50);
                cycle();
            });
        });
    };
    cycle();
    EXPECT_EQ(finished.get_future().get(), 50);
    auto info = c.sync().inspect(r);
    ASSERT_TRUE(info);
    EXPECT_FALSE(info->holder);
    EXPECT_EQ(info->last_fence.value(), last_fence.load());
}

TEST_F(AsyncClientTest, DestructionCompletesEveryOperationInFlightOnceWithAnError) {
    auto sync = client();
    const auto busy = resource("async:busy");
    auto blocker = sync.try_acquire(busy, {.lease = 60s});
    ASSERT_TRUE(blocker && blocker->acquired());

    constexpr int queued = 30;
    std::vector<std::atomic<int>> calls(2 + queued);
    std::atomic<int> cancelled{0};
    auto count = [&](std::size_t i) {
        return [&, i](auto result) {
            calls[i].fetch_add(1);
            if (!result && result.error() == std::errc::operation_canceled) cancelled.fetch_add(1);
        };
    };
    {
        auto c = async_client({.runners = 2});
        // Two waits take both runners, so the try_acquires behind them stay queued.
        const long before = script_calls();
        c.acquire(busy, {.lease = 10s, .wait = 60s}, count(0));
        c.hold(busy, {.lease = 10s, .wait = 60s}, {}, count(1));
        for (int i = 0; i < queued; ++i)
            c.try_acquire(resource("async:queued:" + std::to_string(i)), {.lease = 10s}, count(2 + i));
        ASSERT_TRUE(eventually([&] { return script_calls() >= before + 2; })) << "both waits under way";
    }  // destroyed with two waits under way and thirty operations queued
    for (std::size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(calls[i].load(), 1) << "operation " << i;
    EXPECT_EQ(cancelled.load(), 2 + queued);
    // The queued operations never reached Redis, and the waits took nothing.
    for (int i = 0; i < queued; ++i) {
        auto info = sync.inspect(resource("async:queued:" + std::to_string(i)));
        ASSERT_TRUE(info);
        EXPECT_EQ(info->last_fence.value(), 0u) << i;
    }
    auto info = sync.inspect(busy);
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->holder->owner, blocker->lease->owner.str());
}

TEST_F(AsyncClientTest, BadOptionsThrowBeforeAnythingIsQueued) {
    auto c = async_client();
    const auto r = resource("async:bad");
    std::atomic<int> calls{0};
    EXPECT_THROW(c.try_acquire(r, {.lease = 0ms}, [&](auto) { ++calls; }), std::invalid_argument);
    EXPECT_THROW(c.renew(r, OwnerToken::generate(), -1ms, [&](auto) { ++calls; }), std::invalid_argument);
    EXPECT_FALSE(AsyncLockClient::create({}, {.runners = 0}).has_value());
    auto info = c.sync().inspect(r);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->last_fence.value(), 0u);
    EXPECT_EQ(calls.load(), 0);
}

}  // namespace
}  // namespace fencelock::test_support

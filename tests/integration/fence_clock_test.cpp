// Fences follow the server clock: max(counter + 1, Redis TIME in us). What that buys is a fence
// that keeps growing when Redis forgets its counter (a restart without persistence, a failover
// that lost the last writes), and what it must never cost is a fence at or below the counter.
// Against a real redis-server; the counter is read back from Redis, not only from replies.
#include <cstdint>
#include <string>

#include "integration/lock_fixture.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

class FenceClockTest : public LockTest {
protected:
    /// Redis TIME as microseconds.
    std::uint64_t server_us() {
        const std::string t = redis->cli({"TIME"});
        const auto newline = t.find('\n');
        return std::stoull(t.substr(0, newline)) * 1'000'000 + std::stoull(t.substr(newline + 1));
    }

    FencingToken acquire_and_release(LockClient& c, const ResourceName& r) {
        auto got = c.try_acquire(r, {.lease = 10s});
        EXPECT_TRUE(got && got->acquired());
        if (!got || !got->acquired()) return FencingToken{0};
        EXPECT_TRUE(c.release(r, got->lease->owner));
        return got->lease->fence;
    }
};

TEST_F(FenceClockTest, AFenceIsAtLeastTheServerClockInMicroseconds) {
    auto c = client();
    const auto r = resource("clock");
    const std::uint64_t before = server_us();
    const FencingToken fence = acquire_and_release(c, r);
    const std::uint64_t after = server_us();
    EXPECT_GE(fence.value(), before);
    EXPECT_LE(fence.value(), after);
    EXPECT_LT(fence.value(), max_fence);
    EXPECT_EQ(redis->cli({"GET", "fence:{clock}"}), std::to_string(fence.value()));
}

TEST_F(FenceClockTest, ACounterAheadOfTheClockStillAdvancesByOne) {
    // A clock stepped back, or a counter set by hand: the counter term keeps fences increasing.
    auto c = client();
    const auto r = resource("ahead");
    const std::uint64_t ahead = server_us() + 3'600'000'000ULL;  // an hour ahead
    redis->cli({"SET", "fence:{ahead}", std::to_string(ahead)});
    EXPECT_EQ(acquire_and_release(c, r).value(), ahead + 1);
    EXPECT_EQ(acquire_and_release(c, r).value(), ahead + 2);
}

TEST_F(FenceClockTest, ACounterThatWentBackwardsNeverReissuesAFence) {
    // What a failover that lost the last writes leaves behind: an older counter value.
    auto c = client();
    const auto r = resource("lost");
    const FencingToken first = acquire_and_release(c, r);
    const FencingToken second = acquire_and_release(c, r);
    ASSERT_LT(first, second);
    redis->cli({"SET", "fence:{lost}", std::to_string(first.value())});
    EXPECT_GT(acquire_and_release(c, r), second);
}

TEST_F(FenceClockTest, AFenceAfterARestartWithoutPersistenceIsAboveEveryEarlierOne) {
    const auto r = resource("restart");
    FencingToken before{0};
    {
        auto c = client();
        before = acquire_and_release(c, r);
        before = acquire_and_release(c, r);
    }
    redis->kill();  // no persistence: the counter is gone
    redis->start();
    ASSERT_EQ(redis->cli({"EXISTS", "fence:{restart}"}), "0");
    auto c = client();
    EXPECT_GT(acquire_and_release(c, r), before);
}

}  // namespace
}  // namespace fencelock::test_support

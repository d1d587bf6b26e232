// Fences follow the server clock: max(counter + 1, Redis TIME in us). What that buys is a fence
// that keeps growing when Redis forgets its counter (a restart without persistence, a failover
// that lost the last writes), and what it must never cost is a fence at or below the counter.
// Against a real redis-server; the counter is read back from Redis, not only from replies.
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "integration/lock_fixture.hpp"
#include "support/clock_offset.hpp"

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

// What a server whose clock runs behind its fences' history looks like from the grant: the
// counter term wins by far more than a burst of fences explains. The review's promoted replica
// ran 60 s behind, and the store accepted a stale write; nothing noticed. Now the grant says so.
class ClockBehindObserver final : public LockObserver {
public:
    void on_acquire(const AcquireEvent& e) noexcept override {
        std::lock_guard lock(m_);
        last_ = e.clock_behind;
    }
    std::optional<std::chrono::microseconds> last() {
        std::lock_guard lock(m_);
        return last_;
    }

private:
    std::mutex m_;
    std::optional<std::chrono::microseconds> last_;
};

TEST_F(FenceClockTest, AGrantOnAServerWhoseClockSteppedBackSaysHowFarBehindItIs) {
    ClockOffset clock;
    redis = std::make_unique<local::RedisServer>(std::vector<std::string>{}, clock.env());
    auto observer = std::make_shared<ClockBehindObserver>();
    ClientOptions options;
    options.observer = observer;
    auto c = client(options);
    const auto r = resource("behind");

    const FencingToken first = acquire_and_release(c, r);
    EXPECT_FALSE(observer->last()) << "the clock term won: nothing is behind";
    const std::uint64_t before_step = server_us();
    clock.step(-60s);
    ASSERT_LT(server_us() + 59'000'000, before_step) << "the step did not reach redis-server: proves nothing";

    const FencingToken second = acquire_and_release(c, r);
    EXPECT_EQ(second.value(), first.value() + 1) << "the counter term keeps fences increasing";
    const auto behind = observer->last();
    ASSERT_TRUE(behind) << "a grant 60 s ahead of the server's clock went unnoticed";
    EXPECT_GT(*behind, 59s);
    EXPECT_LT(*behind, 61s);

    // The clock back where it was: past the counter again, so nothing is behind.
    clock.set(0us);
    (void)acquire_and_release(c, r);
    EXPECT_FALSE(observer->last());
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

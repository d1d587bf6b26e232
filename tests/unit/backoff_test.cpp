// Full-jitter backoff: the ceiling doubles up to the cap, and the jitter really is spread.
#include "common/backoff_delays.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <random>

namespace {

using fencelock::BackoffPolicy;
using fencelock::detail::backoff_ceiling;
using fencelock::detail::full_jitter;
using std::chrono::milliseconds;

// min(max, base * 2^attempt), computed without touching 64-bit overflow: base >= 1, so from
// 2^63 on the product exceeds any int64 max; below that, compare by division first.
milliseconds expected_ceiling(const BackoffPolicy& p, unsigned attempt) {
    if (attempt >= 63) return p.max;
    const auto factor = std::int64_t{1} << attempt;
    if (p.base.count() > p.max.count() / factor) return p.max;
    return std::min(p.max, p.base * factor);
}

TEST(BackoffCeiling, DoublesFromBase) {
    const BackoffPolicy p{.base = milliseconds(10), .max = milliseconds(100'000)};
    EXPECT_EQ(backoff_ceiling(p, 0), milliseconds(10));
    EXPECT_EQ(backoff_ceiling(p, 1), milliseconds(20));
    EXPECT_EQ(backoff_ceiling(p, 2), milliseconds(40));
    EXPECT_EQ(backoff_ceiling(p, 5), milliseconds(320));
}

TEST(BackoffCeiling, CapsAtMax) {
    const BackoffPolicy p{.base = milliseconds(10), .max = milliseconds(1000)};
    EXPECT_EQ(backoff_ceiling(p, 6), milliseconds(640));
    EXPECT_EQ(backoff_ceiling(p, 7), milliseconds(1000));  // 1280 capped
    EXPECT_EQ(backoff_ceiling(p, 50), milliseconds(1000));
}

TEST(BackoffCeiling, BaseEqualToMaxStaysThere) {
    const BackoffPolicy p{.base = milliseconds(250), .max = milliseconds(250)};
    for (unsigned a : {0u, 1u, 10u, 1000u}) EXPECT_EQ(backoff_ceiling(p, a), milliseconds(250));
}

TEST(BackoffCeiling, NoOverflowForManyAttempts) {
    for (const BackoffPolicy& p : {BackoffPolicy{}, BackoffPolicy{milliseconds(1), milliseconds(3'600'000)},
                                   BackoffPolicy{milliseconds(7), milliseconds(86'400'000)}}) {
        milliseconds previous{0};
        for (unsigned a = 0; a <= 1000; ++a) {
            const milliseconds c = backoff_ceiling(p, a);
            ASSERT_EQ(c, expected_ceiling(p, a)) << "attempt " << a;
            ASSERT_GE(c, previous) << "ceiling must never shrink, attempt " << a;
            previous = c;
        }
    }
}

TEST(BackoffCeiling, HugeMaxDoesNotOverflow) {
    // Regression: with a max near milliseconds::max() (which validate() accepts) doubling used
    // to overflow and wrap the ceiling to 0.
    const BackoffPolicy p{.base = milliseconds(1), .max = milliseconds::max()};
    for (unsigned a = 0; a <= 1000; ++a) ASSERT_EQ(backoff_ceiling(p, a), expected_ceiling(p, a)) << a;
}

TEST(FullJitter, StaysWithinCeiling) {
    const BackoffPolicy p{};  // 10ms .. 1s
    std::mt19937_64 rng(42);
    for (unsigned a = 0; a < 12; ++a) {
        const milliseconds ceiling = expected_ceiling(p, a);
        for (int i = 0; i < 2000; ++i) {
            const milliseconds d = full_jitter(p, a, rng);
            ASSERT_GE(d, milliseconds(0));
            ASSERT_LE(d, ceiling) << "attempt " << a;
        }
    }
}

TEST(FullJitter, ReachesBothEndsOfASmallRange) {
    // [0, ceiling] is closed: with ceiling 10 every value 0..10 should show up.
    const BackoffPolicy p{.base = milliseconds(10), .max = milliseconds(10)};
    std::mt19937_64 rng(7);
    bool seen[11] = {};
    for (int i = 0; i < 5000; ++i) seen[full_jitter(p, 0, rng).count()] = true;
    for (int v = 0; v <= 10; ++v) EXPECT_TRUE(seen[v]) << "never drew " << v;
}

TEST(FullJitter, SpreadsOverTheRange) {
    const BackoffPolicy p{.base = milliseconds(1000), .max = milliseconds(1000)};
    std::mt19937_64 rng(12345);
    constexpr int draws = 20'000;
    int low = 0, high = 0;
    double sum = 0;
    for (int i = 0; i < draws; ++i) {
        const auto v = full_jitter(p, 0, rng).count();
        (v < 500 ? low : high) += 1;
        sum += static_cast<double>(v);
    }
    // Uniform on [0, 1000]: each half gets about half the draws, mean about 500.
    EXPECT_GT(low, draws * 4 / 10);
    EXPECT_GT(high, draws * 4 / 10);
    EXPECT_NEAR(sum / draws, 500.0, 25.0);
}

TEST(FullJitter, SameSeedSameSequence) {
    // The caller owns the randomness, so a seeded run is reproducible.
    const BackoffPolicy p{};
    std::mt19937_64 a(99), b(99);
    for (unsigned i = 0; i < 100; ++i) EXPECT_EQ(full_jitter(p, i % 8, a), full_jitter(p, i % 8, b));
}

}  // namespace

namespace {

using fencelock::detail::calm_delay;

TEST(CalmDelay, SleepsUntilTheLeaseWouldEndPlusJitter) {
    const BackoffPolicy p{.base = milliseconds(10), .max = milliseconds(1000)};
    std::mt19937_64 rng{7};
    milliseconds lowest = milliseconds::max(), highest = milliseconds::min();
    for (int i = 0; i < 2000; ++i) {
        const auto d = calm_delay(p, milliseconds(300), rng);
        lowest = std::min(lowest, d);
        highest = std::max(highest, d);
    }
    EXPECT_EQ(lowest, milliseconds(300));
    EXPECT_EQ(highest, milliseconds(310));
}

TEST(CalmDelay, NeverLongerThanMax) {
    const BackoffPolicy p{.base = milliseconds(50), .max = milliseconds(200)};
    std::mt19937_64 rng{7};
    for (int i = 0; i < 500; ++i) {
        EXPECT_EQ(calm_delay(p, milliseconds(30'000), rng), milliseconds(200));
        EXPECT_LE(calm_delay(p, milliseconds(190), rng), milliseconds(200));
    }
}

TEST(CalmDelay, ExpiredOrUnknownTtlIsJitterOnly) {
    const BackoffPolicy p{.base = milliseconds(10), .max = milliseconds(1000)};
    std::mt19937_64 rng{7};
    for (int i = 0; i < 500; ++i) {
        EXPECT_LE(calm_delay(p, milliseconds(-2), rng), milliseconds(10));
        EXPECT_LE(calm_delay(p, milliseconds(0), rng), milliseconds(10));
    }
}

TEST(CalmDelay, HugeValuesDoNotOverflow) {
    const BackoffPolicy p{.base = milliseconds::max(), .max = milliseconds::max()};
    std::mt19937_64 rng{7};
    EXPECT_EQ(calm_delay(p, milliseconds::max(), rng), milliseconds::max());
}

}  // namespace

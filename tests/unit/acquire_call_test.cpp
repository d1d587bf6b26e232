// Decoding the acquire script reply (shapes in src/coordinator/redis/scripts/acquire.lua).
#include "coordinator/redis/calls/acquire_call.hpp"

#include <gtest/gtest.h>

#include "reply_builders.hpp"

namespace {

using namespace fencelock;
using namespace fencelock::test_support;
using detail::decode_acquire;
using std::chrono::milliseconds;

// --- acquire: {1, fence, pttl, 0|1}, {0, pttl} or {0, ms, 1} ------------------------------

TEST(DecodeAcquire, Acquired) {
    const auto r = decode_acquire(A({I(1), I(17), I(30'000), I(0)})).value();
    EXPECT_TRUE(r.acquired);
    EXPECT_EQ(r.fence, FencingToken{17});
    EXPECT_EQ(r.ttl, milliseconds(30'000));
    EXPECT_FALSE(r.reacquired);
}

TEST(DecodeAcquire, ReacquiredWithFenceAsString) {
    // The reacquire path reads the fence back with HGET, so it may arrive as a bulk string.
    const auto r = decode_acquire(A({I(1), S("9"), I(12'345), I(1)})).value();
    EXPECT_TRUE(r.acquired);
    EXPECT_TRUE(r.reacquired);
    EXPECT_EQ(r.fence, FencingToken{9});
    EXPECT_EQ(r.ttl, milliseconds(12'345));
}

TEST(DecodeAcquire, ALeaseHandedOnByAReleaseIsMarkedHanded) {
    const auto r = decode_acquire(A({I(1), S("9"), I(2'500), I(2)})).value();
    EXPECT_TRUE(r.acquired);
    EXPECT_TRUE(r.reacquired);
    EXPECT_TRUE(r.handed);
    EXPECT_FALSE(decode_acquire(A({I(1), S("9"), I(2'500), I(1)})).value().handed);
}

// A holder's hash without a fence: the current script leaves the fence out, an older one sent
// a nil in its place. Both are a refusal whose fence is unknown, not a broken reply.
TEST(DecodeAcquire, ARefusalWithoutTheHoldersFenceIsARefusal) {
    for (const Reply& reply : {A({I(0), I(30'000), I(0)}), A({I(0), I(30'000), I(0), Nil()})}) {
        const auto r = decode_acquire(reply);
        ASSERT_TRUE(r);
        EXPECT_FALSE(r->acquired);
        EXPECT_EQ(r->ttl, milliseconds(30'000));
        EXPECT_FALSE(r->seen_fence);
    }
}

TEST(DecodeAcquire, Contended) {
    const auto r = decode_acquire(A({I(0), I(4'200)})).value();
    EXPECT_FALSE(r.acquired);
    EXPECT_EQ(r.ttl, milliseconds(4'200));
    EXPECT_FALSE(r.queued);
}

TEST(DecodeAcquire, FreeButAnEarlierFairWaitersTurn) {
    const auto r = decode_acquire(A({I(0), I(3'900), I(1)})).value();
    EXPECT_FALSE(r.acquired);
    EXPECT_TRUE(r.queued);
    EXPECT_EQ(r.ttl, milliseconds(3'900));
    EXPECT_EQ(decode_acquire(A({I(0), I(3'900), I(2)})).error(), err(errc::protocol_error));
    // The fence a refusal names is the holder's, read from the lease hash: not a number there is
    // a damaged key for an operator, not a protocol mismatch.
    EXPECT_EQ(decode_acquire(A({I(0), I(3'900), I(1), S("x")})).error(), err(errc::corrupt_key));
}

TEST(DecodeAcquire, AGrantWhoseServerClockIsBehindSaysByHowMuch) {
    const auto plain = decode_acquire(A({I(1), S("42"), I(10'000), I(0)})).value();
    EXPECT_FALSE(plain.clock_behind);
    const auto behind = decode_acquire(A({I(1), S("42"), I(10'000), I(0), I(58'000'000)})).value();
    EXPECT_TRUE(behind.acquired);
    EXPECT_EQ(behind.clock_behind, std::chrono::microseconds(58'000'000));
    EXPECT_EQ(decode_acquire(A({I(1), S("42"), I(10'000), I(0), I(0)})).error(), err(errc::protocol_error));
    EXPECT_EQ(decode_acquire(A({I(1), S("42"), I(10'000), I(0), S("x")})).error(), err(errc::protocol_error));
    EXPECT_EQ(decode_acquire(A({I(1), S("42"), I(10'000), I(0), I(5), I(5)})).error(), err(errc::corrupt_key));
}

TEST(DecodeAcquire, FenceMissingAfterFlagIsCorruptKey) {
    // {1, nil, pttl, 1}: Lua stops the reply table at the nil, Redis sends fewer elements.
    EXPECT_EQ(decode_acquire(A({I(1), I(3)})).error(), err(errc::corrupt_key));
    EXPECT_EQ(decode_acquire(A({I(1), I(3), I(100)})).error(), err(errc::corrupt_key));
}

TEST(DecodeAcquire, TruncatedToFlagOnlyIsCorruptKey) {
    // Regression: a lease hash without a fence makes Lua truncate {1, nil, pttl, 1} to [1];
    // that is a corrupt key, not a malformed reply.
    EXPECT_EQ(decode_acquire(A({I(1)})).error(), err(errc::corrupt_key));
}

TEST(DecodeAcquire, UnknownFlagIsProtocolError) {
    // Regression: an unknown flag (e.g. a mismatched script version) is a protocol error, not
    // a key for an operator to repair.
    EXPECT_EQ(decode_acquire(A({I(2), I(5), I(100), I(0)})).error(), err(errc::protocol_error));
    EXPECT_EQ(decode_acquire(A({I(-1), I(5), I(100), I(0)})).error(), err(errc::protocol_error));
}

TEST(DecodeAcquire, MalformedShapesAreProtocolErrors) {
    for (const Reply& bad :
         {Nil(), I(1), S("OK"), Status("OK"), A({}), A({S("x"), I(1)}), A({Nil(), I(1)}), A({I(0), S("soon")}),
          A({I(0), Nil()}), A({I(1), I(5), S("x"), I(0)}), A({I(1), I(5), I(100), S("yes")})}) {
        const auto r = decode_acquire(bad);
        ASSERT_FALSE(r.has_value());
        EXPECT_EQ(r.error(), err(errc::protocol_error));
    }
}

TEST(DecodeAcquire, NeverHandsOutABadFence) {
    // A negative or non-numeric fence must not become a lease; which errc is secondary.
    for (const Reply& bad : {A({I(1), I(-5), I(100), I(0)}), A({I(1), S("-5"), I(100), I(1)}),
                             A({I(1), S("abc"), I(100), I(1)}), A({I(1), S("7x"), I(100), I(1)})}) {
        const auto r = decode_acquire(bad);
        ASSERT_FALSE(r.has_value());
        EXPECT_EQ(classify(r.error()), failure_kind::fatal);
    }
}

}  // namespace

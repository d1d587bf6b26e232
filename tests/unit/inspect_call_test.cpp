// Decoding the inspect reply {last_fence, now_ms, pttl, field, value, ...} into ages.
#include "coordinator/redis/calls/inspect_call.hpp"

#include <gtest/gtest.h>

#include "reply_builders.hpp"

namespace {

using namespace fencelock;
using namespace fencelock::test_support;
using detail::decode_inspect;
using std::chrono::milliseconds;

constexpr std::int64_t now = 1'700'000'100'000;  // Redis TIME in ms

// HGETALL returns every value as a bulk string.
Reply held_reply(std::int64_t max_hold_until) {
    return A({S("12"),
              I(now),
              I(21'000),
              S("owner"),
              S("3f2a"),
              S("fence"),
              S("12"),
              S("acquired_ms"),
              S(std::to_string(now - 95'000)),
              S("renewed_ms"),
              S(std::to_string(now - 9'000)),
              S("renewals"),
              S("3"),
              S("lease_ms"),
              S("30000"),
              S("max_hold_until_ms"),
              S(std::to_string(max_hold_until)),
              S("host"),
              S("worker-7"),
              S("pid"),
              S("4242"),
              S("label"),
              S("nightly")});
}

TEST(DecodeInspect, NotHeld) {
    const LockInfo info = decode_inspect(A({S("5"), I(now), I(-2)})).value();
    EXPECT_EQ(info.last_fence, FencingToken{5});
    EXPECT_FALSE(info.holder.has_value());
}

TEST(DecodeInspect, NeverIssued) {
    const LockInfo info = decode_inspect(A({S("0"), I(now), I(-2)})).value();
    EXPECT_EQ(info.last_fence, FencingToken{0});
    EXPECT_FALSE(info.holder.has_value());
}

TEST(DecodeInspect, HeldComputesAgesFromRedisTime) {
    const LockInfo info = decode_inspect(held_reply(now + 3'505'000)).value();
    EXPECT_EQ(info.last_fence, FencingToken{12});
    ASSERT_TRUE(info.holder.has_value());
    const HolderState& h = *info.holder;
    EXPECT_EQ(h.owner, "3f2a");
    EXPECT_EQ(h.fence, FencingToken{12});
    EXPECT_EQ(h.ttl, milliseconds(21'000));
    EXPECT_EQ(h.lease, milliseconds(30'000));
    EXPECT_EQ(h.held_for, milliseconds(95'000));
    EXPECT_EQ(h.since_renew, milliseconds(9'000));
    EXPECT_EQ(h.max_hold_left, milliseconds(3'505'000));
    EXPECT_EQ(h.renewals, 3u);
    EXPECT_EQ(h.host, "worker-7");
    EXPECT_EQ(h.pid, 4242);
    EXPECT_EQ(h.label, "nightly");
}

// The lean layout (lib/lease.lua): max_hold_ms instead of max_hold_until_ms, and no renewed_ms
// or renewals before the first renewal.
TEST(DecodeInspect, ALeaseNotRenewedYetCountsFromItsAcquisition) {
    const Reply r = A({S("12"), I(now), I(21'000), S("owner"), S("3f2a"), S("fence"), S("12"), S("waiting"), S("0"),
                       S("meta"), S(std::to_string(now - 5'000) + " 30000 60000 4242 worker-7 nightly run 3")});
    const HolderState h = decode_inspect(r).value().holder.value();
    EXPECT_EQ(h.held_for, milliseconds(5'000));
    EXPECT_EQ(h.since_renew, milliseconds(5'000));
    EXPECT_EQ(h.renewals, 0u);
    EXPECT_EQ(h.max_hold_left, milliseconds(55'000));
    EXPECT_EQ(h.lease, milliseconds(30'000));
    EXPECT_EQ(h.pid, 4242);
    EXPECT_EQ(h.host, "worker-7");
    EXPECT_EQ(h.label, "nightly run 3") << "the label is all that follows the host";
}

// Renewed: renew's fields say when and for how long; meta still says when it was acquired.
TEST(DecodeInspect, ARenewedLeaseReadsRenewsFieldsBesideItsMeta) {
    const Reply r = A({S("12"), I(now), I(21'000), S("owner"), S("3f2a"), S("fence"), S("12"), S("waiting"), S("0"),
                       S("meta"), S(std::to_string(now - 95'000) + " 30000 3600000 1 h "), S("renewed_ms"),
                       S(std::to_string(now - 9'000)), S("renewals"), S("3"), S("lease_ms"), S("20000")});
    const HolderState h = decode_inspect(r).value().holder.value();
    EXPECT_EQ(h.held_for, milliseconds(95'000));
    EXPECT_EQ(h.since_renew, milliseconds(9'000));
    EXPECT_EQ(h.renewals, 3u);
    EXPECT_EQ(h.lease, milliseconds(20'000));
    EXPECT_EQ(h.max_hold_left, milliseconds(3'505'000));
    EXPECT_EQ(h.label, "");
}

TEST(DecodeInspect, MaxHoldLeftClampsAtZero) {
    EXPECT_EQ(decode_inspect(held_reply(now - 1)).value().holder->max_hold_left, milliseconds(0));
    EXPECT_EQ(decode_inspect(held_reply(now)).value().holder->max_hold_left, milliseconds(0));
    EXPECT_EQ(decode_inspect(held_reply(now + 1)).value().holder->max_hold_left, milliseconds(1));
}

TEST(DecodeInspect, AcceptsIntegerValuesAndStringHeader) {
    // Values may come as integers and the header as strings; both read the same.
    const Reply r = A({I(4), S(std::to_string(now)), S("1000"), S("owner"), S("o"), S("fence"), I(4), S("acquired_ms"),
                       I(now - 10), S("renewed_ms"), I(now - 4), S("pid"), I(1)});
    const HolderState h = decode_inspect(r).value().holder.value();
    EXPECT_EQ(h.fence, FencingToken{4});
    EXPECT_EQ(h.ttl, milliseconds(1'000));
    EXPECT_EQ(h.held_for, milliseconds(10));
    EXPECT_EQ(h.since_renew, milliseconds(4));
    EXPECT_EQ(h.pid, 1);
}

TEST(DecodeInspect, IgnoresUnknownFields) {
    const Reply r = A({S("1"), I(now), I(500), S("owner"), S("o"), S("future_field"), S("whatever")});
    EXPECT_EQ(decode_inspect(r).value().holder->owner, "o");
}

TEST(DecodeInspect, BadContentIsCorruptKey) {
    for (const Reply& bad : {A({S("abc"), I(now), I(-2)}),                     // counter not a number
                             A({S("-1"), I(now), I(-2)}),                      // counter negative
                             A({S("1"), I(now), I(500), S("fence"), S("1")}),  // hash without owner
                             A({S("1"), I(now), I(500), S("owner"), S("o"), S("fence"), S("x")}),
                             A({S("1"), I(now), I(500), S("owner"), S("o"), S("acquired_ms"), S("soon")}),
                             A({S("1"), I(now), I(500), S("owner"), S("o"), S("pid"), S("1.5")}),
                             A({S("1"), I(now), I(500), S("owner"), S("o"), S("meta"), S("soon 30000 60000 1 h l")}),
                             A({S("1"), I(now), I(500), S("owner"), S("o"), S("meta"), S("1 30000 60000 1")})}) {
        const auto r = decode_inspect(bad);
        ASSERT_FALSE(r.has_value());
        EXPECT_EQ(r.error(), err(errc::corrupt_key));
    }
}

TEST(DecodeInspect, MalformedShapesAreProtocolErrors) {
    for (const Reply& bad :
         {Nil(), I(1), A({}), A({S("1"), I(now)}), A({S("1"), I(now), I(500), S("owner")}),  // odd field list
          A({S("1"), S("later"), I(-2)}), A({S("1"), I(now), Nil()})}) {
        const auto r = decode_inspect(bad);
        ASSERT_FALSE(r.has_value());
        EXPECT_EQ(r.error(), err(errc::protocol_error));
    }
}

}  // namespace

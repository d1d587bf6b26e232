// Decoding the release and leave_line replies (shapes in src/coordinator/redis/scripts/*.lua).
#include "coordinator/redis/calls/release_call.hpp"
#include "coordinator/redis/calls/leave_line_call.hpp"

#include <gtest/gtest.h>

#include "reply_builders.hpp"

namespace {

using namespace fencelock;
using namespace fencelock::test_support;
using detail::decode_leave_line;
using detail::decode_release;
using std::chrono::milliseconds;

// --- release: 1, 0 or -1 ---------------------------------------------------------------------

TEST(DecodeRelease, OneZeroAndMinusOne) {
    EXPECT_EQ(decode_release(I(1)).value(), ReleaseStatus::released);
    EXPECT_EQ(decode_release(I(0)).value(), ReleaseStatus::not_owner);
    EXPECT_EQ(decode_release(I(-1)).value(), ReleaseStatus::not_held);
}

TEST(DecodeRelease, AnythingElseIsProtocolError) {
    for (const Reply& bad : {I(2), I(-2), S("1"), Nil(), A({I(1)}), Status("OK"), A({I(1), S("o"), S("7")}),
                             A({I(0), S("o"), S("7"), I(100)}), A({I(1), S(""), S("7"), I(100)}),
                             A({I(1), S("o"), S("x"), I(100)}), A({I(1), S("o"), S("7"), I(0)})})
        EXPECT_EQ(decode_release(bad).error(), err(errc::protocol_error));
}

// --- release: {1, owner, fence, ttl}, a grant to a waiter of the releasing client ------------

TEST(DecodeRelease, AGrantToAWaiterOfTheReleasingClientComesWithItsFenceAndTtl) {
    const auto reply = detail::decode_release_reply(A({I(1), S("3f2a"), S("1796189456171809"), I(30'000)})).value();
    EXPECT_EQ(reply.status, ReleaseStatus::released);
    ASSERT_TRUE(reply.granted);
    EXPECT_EQ(reply.granted->owner, "3f2a");
    EXPECT_EQ(reply.granted->grant.fence, FencingToken{1796189456171809});
    EXPECT_EQ(reply.granted->grant.ttl, milliseconds(30'000));
    EXPECT_FALSE(detail::decode_release_reply(I(1)).value().granted);
}

// --- leave_line: 1 or 0 ---------------------------------------------------------------------

TEST(DecodeLeaveLine, OneGaveUpAPlaceZeroHadNone) {
    EXPECT_TRUE(decode_leave_line(I(1)).value());
    EXPECT_FALSE(decode_leave_line(I(0)).value());
}

TEST(DecodeLeaveLine, ANonIntegerIsProtocolError) {
    for (const Reply& bad : {S("1"), Nil(), A({I(1)}), Status("OK")})
        EXPECT_EQ(decode_leave_line(bad).error(), err(errc::protocol_error));
}

}  // namespace

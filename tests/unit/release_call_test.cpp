// Decoding the release and leave_line replies (shapes in src/lock/scripts/*.lua).
#include "lock/calls/release_call.hpp"
#include "lock/calls/leave_line_call.hpp"

#include <gtest/gtest.h>

#include "reply_builders.hpp"

namespace {

using namespace fencelock;
using namespace fencelock::test_support;
using detail::decode_leave_line;
using detail::decode_release;
using std::chrono::milliseconds;

// --- release: 1 or 0 ------------------------------------------------------------------------

TEST(DecodeRelease, OneAndZero) {
    EXPECT_EQ(decode_release(I(1)).value(), ReleaseStatus::released);
    EXPECT_EQ(decode_release(I(0)).value(), ReleaseStatus::not_owner);
}

TEST(DecodeRelease, AnythingElseIsProtocolError) {
    for (const Reply& bad : {I(2), I(-1), S("1"), Nil(), A({I(1)}), Status("OK")})
        EXPECT_EQ(decode_release(bad).error(), err(errc::protocol_error));
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

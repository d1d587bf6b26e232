// Decoding the force_release script reply (shapes in src/coordinator/redis/scripts/force_release.lua).
#include "coordinator/redis/calls/force_release_call.hpp"

#include <gtest/gtest.h>

#include "reply_builders.hpp"

namespace {

using namespace fencelock;
using namespace fencelock::test_support;
using detail::decode_force_release;
using std::chrono::milliseconds;

TEST(DecodeForceRelease, ReleasedCarriesTheHolderAndTheAuditId) {
    const auto out = decode_force_release(A({I(1), S("3f2a"), S("12"), I(61'000), S("1700000000000-0")})).value();
    EXPECT_EQ(out.status, ForceReleaseStatus::released);
    EXPECT_EQ(out.owner, "3f2a");
    EXPECT_EQ(out.fence, FencingToken{12});
    EXPECT_EQ(out.since_renew, milliseconds(61'000));
    EXPECT_EQ(out.audit_id, "1700000000000-0");
    EXPECT_EQ(out.lease, milliseconds(0));
}

TEST(DecodeForceRelease, NotHeld) {
    const auto out = decode_force_release(A({I(0)})).value();
    EXPECT_EQ(out.status, ForceReleaseStatus::not_held);
    EXPECT_TRUE(out.owner.empty());
}

TEST(DecodeForceRelease, OwnerMismatchNamesTheHolder) {
    const auto out = decode_force_release(A({I(2), S("other")})).value();
    EXPECT_EQ(out.status, ForceReleaseStatus::owner_mismatch);
    EXPECT_EQ(out.owner, "other");
}

TEST(DecodeForceRelease, ActiveCarriesTheLeaseInsteadOfAnAuditId) {
    const auto out = decode_force_release(A({I(3), S("3f2a"), S("12"), I(900), I(30'000), I(1)})).value();
    EXPECT_EQ(out.status, ForceReleaseStatus::active);
    EXPECT_EQ(out.fence, FencingToken{12});
    EXPECT_EQ(out.since_renew, milliseconds(900));
    EXPECT_EQ(out.lease, milliseconds(30'000));
    EXPECT_TRUE(out.renewed);
    EXPECT_TRUE(out.audit_id.empty());
    EXPECT_FALSE(decode_force_release(A({I(3), S("3f2a"), S("12"), I(900), I(30'000), I(0)})).value().renewed)
        << "never renewed: since_renew counts from the acquisition";
}

TEST(DecodeForceRelease, MalformedShapesAreProtocolErrors) {
    for (const Reply& bad : {Nil(), I(1), S("OK"), A({}), A({S("x")}), A({I(4)}), A({I(-1)}), A({I(0), I(1)}),
                             A({I(2)}), A({I(2), S("a"), S("b")}), A({I(1), S("o"), S("12"), I(5)}),  // truncated
                             A({I(1), S("o"), S("-3"), I(5), S("id")}),                               // negative fence
                             A({I(1), S("o"), S("abc"), I(5), S("id")}),         // fence not a number
                             A({I(1), S("o"), S("12"), S("soon"), S("id")}),     // since_renew not a number
                             A({I(3), S("o"), S("12"), I(5), S("long"), I(0)}),  // lease not a number
                             A({I(3), S("o"), S("12"), I(5), I(100)}),           // no renewed flag
                             A({I(3), S("o"), S("12"), I(5), I(100), I(2)})}) {  // renewed not 0 or 1
        const auto r = decode_force_release(bad);
        ASSERT_FALSE(r.has_value());
        EXPECT_EQ(r.error(), err(errc::protocol_error));
    }
}

}  // namespace

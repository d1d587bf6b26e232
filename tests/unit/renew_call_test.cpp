// Encoding the renew call and decoding its reply (shapes in src/coordinator/redis/scripts/renew.lua).
#include "coordinator/redis/calls/renew_call.hpp"

#include <gtest/gtest.h>

#include "reply_builders.hpp"

namespace {

using namespace fencelock;
using namespace fencelock::test_support;
using detail::decode_renew;
using detail::decode_renew_result;
using detail::RenewBatchResults;
using std::chrono::milliseconds;

// --- renew: {1, fence, pttl, now_ms}, {0, now_ms} or {2, fence} ----------------------------

TEST(DecodeRenew, RenewedWithTheServersTime) {
    const auto r = decode_renew(A({I(1), I(8), I(25'000), I(1'700'000'000'123)})).value();
    EXPECT_EQ(r.status, RenewStatus::renewed);
    ASSERT_TRUE(r.fence.has_value());
    EXPECT_EQ(*r.fence, FencingToken{8});
    EXPECT_EQ(r.ttl, milliseconds(25'000));
    EXPECT_EQ(r.server_time, milliseconds(1'700'000'000'123));
}

TEST(DecodeRenew, NotOwnerHasNoFenceButTheServersTime) {
    const auto r = decode_renew(A({I(0), I(1'700'000'000'123)})).value();
    EXPECT_EQ(r.status, RenewStatus::not_owner);
    EXPECT_FALSE(r.fence.has_value());
    EXPECT_EQ(r.server_time, milliseconds(1'700'000'000'123));
}

TEST(DecodeRenew, AnEarlierScriptsRepliesWithoutTimeStillDecode) {
    const auto renewed = decode_renew(A({I(1), I(8), I(25'000)})).value();
    EXPECT_EQ(renewed.status, RenewStatus::renewed);
    EXPECT_FALSE(renewed.server_time.has_value());
    const auto gone = decode_renew(A({I(0)})).value();
    EXPECT_EQ(gone.status, RenewStatus::not_owner);
    EXPECT_FALSE(gone.server_time.has_value());
}

TEST(DecodeRenew, MaxHoldExceeded) {
    const auto r = decode_renew(A({I(2), I(8)})).value();
    EXPECT_EQ(r.status, RenewStatus::max_hold_exceeded);
    ASSERT_TRUE(r.fence.has_value());
    EXPECT_EQ(*r.fence, FencingToken{8});
}

TEST(DecodeRenew, MaxHoldWithoutFenceIsCorruptKey) {
    // {2, nil}: the lease hash lost its fence; Lua truncates to {2}.
    EXPECT_EQ(decode_renew(A({I(2)})).error(), err(errc::corrupt_key));
    EXPECT_EQ(decode_renew(A({I(2), S("x")})).error(), err(errc::corrupt_key));
}

TEST(DecodeRenew, RenewedWithoutFenceIsCorruptKey) {
    // Regression: {1, nil, pttl} truncated to [1] is the same damage as {2, nil} -> [2]:
    // both are corrupt keys.
    EXPECT_EQ(decode_renew(A({I(1)})).error(), err(errc::corrupt_key));
}

TEST(DecodeRenew, MalformedShapesAreProtocolErrors) {
    for (const Reply& bad : {Nil(), I(1), A({}), A({S("x")}), A({I(3), I(1)}), A({I(-1)}), A({I(1), I(8)}),
                             A({I(1), I(8), S("x")}), A({I(1), I(8), I(100), S("x")}),
                             A({I(1), I(8), I(100), I(0), I(0)}), A({I(0), S("x")}), A({I(0), I(1), I(2)})}) {
        const auto r = decode_renew(bad);
        ASSERT_FALSE(r.has_value());
        EXPECT_EQ(r.error(), err(errc::protocol_error));
    }
}

// --- the one encoding both a single renew and the keeper's batches use ---------------------

TEST(RenewCall, KeysAndArgumentsInTheScriptsOrder) {
    const auto owner = OwnerToken::generate();
    const std::string lease_ms = detail::lease_argument(milliseconds(30'000));
    EXPECT_EQ(lease_ms, "30000");
    const auto call = detail::renew_call("lock:{r}", owner, lease_ms);
    EXPECT_EQ(call.keys, (std::vector<std::string_view>{"lock:{r}"}));
    EXPECT_EQ(call.args, (std::vector<std::string_view>{owner.str(), "30000"}));
}

TEST(RenewCall, BatchResultsDecodePerCall) {
    const RenewBatchResults results{std::vector<std::expected<Reply, std::error_code>>{
        A({I(1), I(8), I(25'000)}), std::unexpected(err(errc::server_busy)), A({I(0)})}};
    EXPECT_EQ(decode_renew_result(results, 0).value().status, RenewStatus::renewed);
    EXPECT_EQ(decode_renew_result(results, 1).error(), err(errc::server_busy));
    EXPECT_EQ(decode_renew_result(results, 2).value().status, RenewStatus::not_owner);
    // A batch that came back short is a protocol error, never a renewal.
    EXPECT_EQ(decode_renew_result(results, 3).error(), err(errc::protocol_error));
}

TEST(RenewCall, ATransportFailureFailsEveryCall) {
    const RenewBatchResults failed{std::unexpected(err(errc::reply_timeout))};
    for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(decode_renew_result(failed, i).error(), err(errc::reply_timeout));
}

}  // namespace

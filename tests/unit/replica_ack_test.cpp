// What WAIT's answer means for a lease that asked for replica acknowledgement: pure decisions.
#include "coordinator/redis/replica_ack.hpp"

#include <gtest/gtest.h>

#include "fencelock/error.hpp"

namespace fencelock::detail {
namespace {

using namespace std::chrono_literals;

std::error_code err(errc e) { return make_error_code(e); }

TEST(ReplicaAck, OffUnlessReplicasAreAsked) {
    EXPECT_FALSE(replica_ack(AcquireOptions{}).on());
    const ReplicaAck on = replica_ack(AcquireOptions{.replicas = 2, .replica_timeout = 150ms});
    EXPECT_TRUE(on.on());
    EXPECT_EQ(on.replicas, 2u);
    EXPECT_EQ(on.timeout, 150ms);
}

TEST(ReplicaAck, WaitCommandCarriesCountAndTimeoutInMilliseconds) {
    const WaitCommand wait(ReplicaAck{2, 250ms});
    const auto argv = wait.argv();
    EXPECT_EQ(argv[0], "WAIT");
    EXPECT_EQ(argv[1], "2");
    EXPECT_EQ(argv[2], "250");
}

TEST(ReplicaAck, DecodesWaitsAnswer) {
    EXPECT_EQ(decode_wait(Reply::make_integer(0)), 0u);
    EXPECT_EQ(decode_wait(Reply::make_integer(3)), 3u);
    EXPECT_EQ(decode_wait(Reply::make_integer(-1)).error(), err(errc::protocol_error));
    EXPECT_EQ(decode_wait(Reply::make_string("1")).error(), err(errc::protocol_error));
    // An error reply maps like any other (here: WAIT sent to a replica).
    EXPECT_EQ(decode_wait(Reply::make_error("ERR WAIT cannot be used with replica instances.")).error(),
              err(errc::protocol_error));
    EXPECT_EQ(decode_wait(Reply::make_error("NOPERM this user has no permissions to run the 'wait' command")).error(),
              err(errc::auth_failed));
}

TEST(ReplicaAck, FewerAcknowledgementsThanAskedAreNotReplicated) {
    const ReplicaAck one{1, 100ms};
    const ReplicaAck two{2, 100ms};
    EXPECT_EQ(replication_shortfall(one, 0u), err(errc::not_replicated));
    EXPECT_EQ(replication_shortfall(two, 1u), err(errc::not_replicated));
    EXPECT_FALSE(replication_shortfall(one, 1u));
    EXPECT_FALSE(replication_shortfall(one, 2u));  // more replicas than asked: fine
    EXPECT_FALSE(replication_shortfall(two, 2u));
}

TEST(ReplicaAck, WaitsOwnErrorIsPassedOnAndNothingAskedNeverFails) {
    const std::expected<unsigned, std::error_code> failed = std::unexpected(err(errc::protocol_error));
    EXPECT_EQ(replication_shortfall(ReplicaAck{1, 100ms}, failed), err(errc::protocol_error));
    EXPECT_FALSE(replication_shortfall(ReplicaAck{}, failed));
    EXPECT_FALSE(replication_shortfall(ReplicaAck{}, 0u));
}

TEST(ReplicaAck, ABatchWaitsForTheMostAnyLeaseAsksFor) {
    const ReplicaAck none{};
    EXPECT_FALSE(combine(none, none).on());
    const ReplicaAck a{1, 300ms};
    const ReplicaAck b{2, 100ms};
    const ReplicaAck both = combine(combine(none, a), b);
    EXPECT_EQ(both.replicas, 2u);
    EXPECT_EQ(both.timeout, 300ms);
    EXPECT_EQ(combine(a, none).replicas, 1u);
    EXPECT_EQ(combine(a, none).timeout, 300ms);
}

TEST(ReplicaAck, NotReplicatedIsADistinctRetryableError) {
    const auto e = err(errc::not_replicated);
    EXPECT_EQ(classify(e), failure_kind::retryable);
    EXPECT_NE(e, err(errc::replicas_unavailable));
    EXPECT_NE(e.message().find("replicas"), std::string::npos);
    EXPECT_NE(e.message().find("released"), std::string::npos);
}

}  // namespace
}  // namespace fencelock::detail

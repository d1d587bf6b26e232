// Readiness (/readyz) from the Redis round trips PrometheusMetrics observes: the last one
// decides. Events fed by hand; the endpoint against a real redis-server is
// tests/integration/obs_test.cpp. No servers.
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include "fencelock/error.hpp"
#include "fencelock/metrics.hpp"

namespace fencelock::test_support {
namespace {

using std::chrono::milliseconds;

struct Events {
    PrometheusMetrics& metrics;
    const ResourceName resource = ResourceName::make("order:1").value();
    const OwnerToken owner = OwnerToken::generate();

    void acquire(AcquireResult result, std::error_code error = {}) {
        metrics.on_acquire({resource, owner, result, std::nullopt, 1, std::chrono::microseconds(5), milliseconds(1000),
                            error, result == AcquireResult::contended ? 1u : 0u, error ? 1u : 0u});
    }
    void renew(std::expected<RenewStatus, std::error_code> result, bool kept = true) {
        metrics.on_renew({resource, owner, result, std::nullopt, milliseconds(1000), kept});
    }
    void release(std::expected<ReleaseStatus, std::error_code> result) {
        metrics.on_release({resource, owner, result, std::nullopt});
    }
};

TEST(RedisReadiness, TheLastRoundTripDecides) {
    prometheus::Registry registry;
    PrometheusMetrics metrics(registry);
    Events events{metrics};
    EXPECT_TRUE(metrics.redis_readiness().ready) << "nothing has failed yet";

    events.renew(std::unexpected(make_error_code(errc::reply_timeout)));
    auto r = metrics.redis_readiness();
    EXPECT_FALSE(r.ready);
    EXPECT_NE(r.reason.find("keeper"), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find(make_error_code(errc::reply_timeout).message()), std::string::npos) << r.reason;

    events.renew(RenewStatus::not_owner);  // an answer, even if a bad one for the lease
    EXPECT_TRUE(metrics.redis_readiness().ready);
    EXPECT_TRUE(metrics.redis_readiness().reason.empty());

    events.acquire(AcquireResult::error, make_error_code(errc::unavailable));
    r = metrics.redis_readiness();
    EXPECT_FALSE(r.ready);
    EXPECT_NE(r.reason.find("client"), std::string::npos) << r.reason;
    events.acquire(AcquireResult::contended);
    EXPECT_TRUE(metrics.redis_readiness().ready) << "a refusal is an answer";

    events.release(std::unexpected(make_error_code(errc::connection_lost)));
    EXPECT_FALSE(metrics.redis_readiness().ready);
    events.release(ReleaseStatus::not_owner);
    EXPECT_TRUE(metrics.redis_readiness().ready);

    metrics.redis_error("worker");  // the queue transport
    r = metrics.redis_readiness();
    EXPECT_FALSE(r.ready);
    EXPECT_EQ(r.reason, "redis unavailable (worker)");
    metrics.redis_answered("worker");
    EXPECT_TRUE(metrics.redis_readiness().ready);
}

TEST(RedisReadiness, AWaitThatRanOutOnAFailedAttemptIsNotAnAnswer) {
    prometheus::Registry registry;
    PrometheusMetrics metrics(registry);
    Events events{metrics};
    events.acquire(AcquireResult::timeout, make_error_code(errc::unavailable));
    EXPECT_FALSE(metrics.redis_readiness().ready);
    events.acquire(AcquireResult::timeout);
    EXPECT_TRUE(metrics.redis_readiness().ready);
}

}  // namespace
}  // namespace fencelock::test_support

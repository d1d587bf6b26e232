// fencelock through redis-sentinel:// against a real Sentinel group (master, replica, three
// sentinels): discovery, a clear error for a sentinel behind redis://, following a graceful
// failover, the CLI; and replicated Redis's refusals classified as retryable.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>

#include <future>

#include "coordinator/redis/release_notifier.hpp"
#include "fencelock/client.hpp"
#include "local_servers/child_process.hpp"
#include "local_servers/redis_server.hpp"
#include "sentinel/sentinel_fixture.hpp"
#include "support/eventually.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// The group outlives a test process: names carry the pid so reruns never meet old keys.
ResourceName resource(const std::string& name) {
    return *ResourceName::make("sentinel:" + std::to_string(::getpid()) + ":" + name);
}

LockClient client_for(const RedisEndpoint& endpoint) {
    auto c = LockClient::create({.endpoint = endpoint});
    EXPECT_TRUE(c.has_value());
    return std::move(*c);
}

TEST(Sentinel, AcquireRenewReleaseThroughTheSentinelUrl) {
    auto& group = SharedSentinelGroup::get();
    auto c = client_for(group.endpoint());
    const auto r = resource("round-trip");
    auto got = c.try_acquire(r, {.lease = 5s});
    ASSERT_TRUE(got && got->acquired()) << (got ? "contended" : got.error().message());
    const Lease& lease = *got->lease;
    // The lease is on the master the sentinels name.
    EXPECT_EQ(group.master_cli({"GET", "fence:{" + r.str() + "}"}), std::to_string(lease.fence.value()));
    EXPECT_EQ(group.master_cli({"EXISTS", "lock:{" + r.str() + "}"}), "1");
    auto renewed = c.renew(r, lease.owner, 5s);
    ASSERT_TRUE(renewed) << renewed.error().message();
    EXPECT_EQ(renewed->status, RenewStatus::renewed);
    auto released = c.release(r, lease.owner);
    ASSERT_TRUE(released) << released.error().message();
    EXPECT_EQ(*released, ReleaseStatus::released);
}

TEST(Sentinel, ARedisUrlNamingASentinelFailsWithAClearError) {
    auto& group = SharedSentinelGroup::get();
    const auto& sentinel = group.endpoint().sentinels.front();
    auto c = client_for(*parse_redis_url("redis://" + sentinel.host + ":" + std::to_string(sentinel.port)));
    auto got = c.try_acquire(resource("wrong-url"), {.lease = 5s});
    ASSERT_FALSE(got.has_value());
    EXPECT_EQ(got.error(), errc::is_sentinel) << got.error().message();
    EXPECT_EQ(classify(got.error()), failure_kind::fatal);
    EXPECT_NE(got.error().message().find("redis-sentinel://"), std::string::npos);
}

TEST(Sentinel, KeptLeaseIsStillRenewedAfterAGracefulFailover) {
    auto& group = SharedSentinelGroup::get();
    auto c = client_for(group.endpoint());
    const auto r = resource("kept");
    // A lease that outlives a slow failover: a loaded CI run took long enough to lose a 3 s one.
    auto held = c.hold(r, {.lease = 10s});
    ASSERT_TRUE(held && held->acquired()) << (held ? "contended" : held.error().message());
    HeldLease& lease = *held->lease;
    ASSERT_TRUE(eventually([&] { return lease.renewals() >= 1; }, 10s));
    // Wait until the replica has the lease, so the promoted replica holds it too.
    const std::string key = "lock:{" + r.str() + "}";
    ASSERT_EQ(group.master_cli({"WAIT", "1", "5000"}), "1");

    const std::uint16_t old_master = group.master_port();
    const std::uint16_t new_master = group.fail_over();
    ASSERT_NE(new_master, old_master);

    // Renewals go on through the new master: its copy of the lease is renewed (its TTL keeps
    // being pushed back), the fence never changes, the lease is never lost.
    const auto renewals_at_failover = lease.renewals();
    ASSERT_TRUE(eventually([&] { return lease.renewals() >= renewals_at_failover + 3; }, 40s))
        << "renewals: " << lease.renewals() << " lost: " << c.keeper_stats().leases_lost;
    EXPECT_TRUE(lease.valid());
    EXPECT_EQ(c.keeper_stats().leases_lost, 0u);
    EXPECT_EQ(local::cli_at(new_master, {"EXISTS", key}), "1");
    EXPECT_EQ(local::cli_at(new_master, {"GET", "fence:{" + r.str() + "}"}), std::to_string(lease.fence().value()));
    auto info = c.inspect(r);
    ASSERT_TRUE(info && info->holder) << (info ? "no holder" : info.error().message());
    EXPECT_EQ(info->holder->fence, lease.fence());

    // A new acquire works and lands on the new master (once its failover grace is over).
    const auto other = resource("after-failover");
    auto got = c.acquire(other, {.lease = 5s, .wait = test_failover_grace + 10s});
    ASSERT_TRUE(got && got->acquired()) << (got ? "contended" : got.error().message());
    EXPECT_EQ(local::cli_at(new_master, {"EXISTS", "lock:{" + other.str() + "}"}), "1");
    EXPECT_TRUE(c.release(other, got->lease->owner));
}

// The waiter's subscriber follows the master like every connection (the topology's generation
// moves on +switch-master), so releases published on the new master still wake it by message.
TEST(Sentinel, AWaitersSubscriptionFollowsAFailoverAndALaterReleaseWakesIt) {
    auto& group = SharedSentinelGroup::get();
    RedisEndpoint endpoint = group.endpoint();
    endpoint.failover_grace = 0ms;  // about the subscription; FailoverGrace.* test the grace
    auto holder_client = client_for(endpoint);
    auto waiter_client = client_for(endpoint);
    const auto r = resource("notified");
    const std::string channel = "released:{" + r.str() + "}";
    const auto subscribers = [&](std::uint16_t port) {
        const std::string out = local::cli_at(port, {"PUBSUB", "SHARDNUMSUB", channel});
        return std::stol(out.substr(out.find('\n') + 1));
    };
    auto held = holder_client.try_acquire(r, {.lease = 60s});
    ASSERT_TRUE(held && held->acquired()) << (held ? "contended" : held.error().message());
    ASSERT_EQ(group.master_cli({"WAIT", "1", "5000"}), "1");  // the promoted replica holds it too

    const auto waits_before = detail::ReleaseNotifier::waits_begun();
    auto waiting = std::async(std::launch::async, [&] {
        return waiter_client.acquire(r, {.lease = 10s, .wait = 120s, .backoff = {.base = 60s, .max = 60s}});
    });
    ASSERT_TRUE(eventually([&] { return detail::ReleaseNotifier::waits_begun() == waits_before + 1; }));
    const std::uint16_t old_master = group.master_port();
    ASSERT_EQ(subscribers(old_master), 1);

    const std::uint16_t new_master = group.fail_over();
    ASSERT_NE(new_master, old_master);
    ASSERT_TRUE(eventually([&] { return subscribers(new_master) == 1; }, 20s)) << "no subscription on the new master";
    ASSERT_TRUE(eventually([&] { return detail::ReleaseNotifier::waits_begun() >= waits_before + 2; }, 20s));
    EXPECT_EQ(subscribers(old_master), 0);

    ASSERT_TRUE(holder_client.release(r, held->lease->owner));
    // A minute of backoff and of lease left: only the message from the new master wakes it.
    ASSERT_EQ(waiting.wait_for(30s), std::future_status::ready) << "the release after the failover went unseen";
    auto got = waiting.get();
    ASSERT_TRUE(got && got->acquired()) << (got ? "not acquired" : got.error().message());
    EXPECT_GT(got->lease->fence, held->lease->fence);
    EXPECT_TRUE(waiter_client.release(r, got->lease->owner));
}

TEST(Sentinel, CliAcquireAndRunThroughTheSentinelUrl) {
    auto& group = SharedSentinelGroup::get();
    const std::string name = "sentinel:" + std::to_string(::getpid()) + ":cli";
    auto acquired = local::run_process({FENCELOCK_CLI, "--redis", group.url(), "acquire", name, "--lease", "30s"});
    ASSERT_EQ(acquired.exit_code, 0) << acquired.err;
    const json a = json::parse(acquired.out);
    EXPECT_EQ(a["acquired"], true);
    auto released = local::run_process(
        {FENCELOCK_CLI, "--redis", group.url(), "release", name, "--owner", a["owner"].get<std::string>()});
    EXPECT_EQ(released.exit_code, 0) << released.err;

    // run, with the URL from the environment as operators set it.
    auto ran =
        local::run_process({FENCELOCK_CLI, "run", name + ":run", "--json", "--lease", "5s", "--", "sh", "-c", "exit 7"},
                           {"FENCELOCK_REDIS_URL=" + group.url()});
    EXPECT_EQ(ran.exit_code, 7) << ran.err;
    EXPECT_EQ(ran.out, "") << "stdout is CMD's; run's summary is stderr's last line";
    const std::string last = ran.err.substr(ran.err.rfind('{'));
    const json summary = json::parse(last);
    EXPECT_EQ(summary["acquired"], true);
    EXPECT_EQ(summary["released"], true);
}

// A master name no sentinel knows is named, not a bare "could not connect".
TEST(Sentinel, CliNamesAMasterNameNoSentinelKnows) {
    auto& group = SharedSentinelGroup::get();
    const std::string url = group.url().substr(0, group.url().rfind('#')) + "#no-such-group";
    auto r = local::run_process({FENCELOCK_CLI, "--redis", url, "acquire", "unknown-group", "--lease", "5s"});
    EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
    EXPECT_NE((r.out + r.err).find("no master named 'no-such-group'"), std::string::npos) << r.out << r.err;
}

TEST(ReplicatedRedis, NoreplicasIsRetryableNamedAndWritesNothing) {
    // A master that may not write without a replica in sync, and has none.
    local::RedisServer redis({"--min-replicas-to-write", "1", "--min-replicas-max-lag", "10"});
    auto c = client_for(*parse_redis_url(redis.url()));
    auto got = c.try_acquire(*ResourceName::make("noreplicas"), {.lease = 5s});
    ASSERT_FALSE(got.has_value());
    EXPECT_EQ(got.error(), errc::replicas_unavailable) << got.error().message();
    EXPECT_EQ(classify(got.error()), failure_kind::retryable);
    EXPECT_NE(got.error().message().find("NOREPLICAS"), std::string::npos);
    EXPECT_EQ(got.error().message().find("unexpected type"), std::string::npos);
    EXPECT_EQ(redis.cli({"DBSIZE"}), "0") << "the refusal must come before any write";
}

}  // namespace
}  // namespace fencelock::test_support

// Replica acknowledgement against a real master and replica: WAIT after the acquire on the same
// connection, a grant fewer replicas acknowledged released and failed with not_replicated,
// and keeper renewals confirmed only once acknowledged (one WAIT per batch).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fencelock/async_client.hpp"
#include "fencelock/client.hpp"
#include "fencelock/error.hpp"
#include "fencelock/observer.hpp"
#include "integration/replicated_fixture.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

ResourceName name(std::string_view n) { return *ResourceName::make(n); }

class ReplicaAckTest : public ReplicatedRedisTest {
protected:
    // A generous command timeout: under a loaded machine an acknowledgement can take a while.
    LockClient client(ClientOptions options = {.command_timeout = std::chrono::seconds(5)}) {
        options.endpoint = *parse_redis_url(master->url());
        options.release_notifications = false;
        return std::move(*LockClient::create(std::move(options)));
    }
};

// Replicas in sync answer in milliseconds; 2 s only keeps a busy test machine from failing them.
const AcquireOptions replicated{.lease = 10s, .replicas = 1, .replica_timeout = 2s};
// Where no acknowledgement can come: fail fast.
const AcquireOptions impatient{.lease = 10s, .replicas = 1, .replica_timeout = 200ms};

TEST_F(ReplicaAckTest, AnAcknowledgedGrantIsHeldAndAlreadyOnTheReplica) {
    auto c = client();
    const auto got = c.try_acquire(name("r1"), replicated);
    ASSERT_TRUE(got.has_value()) << got.error().message();
    ASSERT_TRUE(got->acquired());
    // WAIT answered 1 only once the replica had applied the grant: no polling needed.
    EXPECT_EQ(replica->cli({"HGET", "lock:{r1}", "owner"}), got->lease->owner.str());
    // With the script cached, one WAIT per acquisition (the first one also followed the
    // NOSCRIPT reply of a fresh server).
    const long waits = stat_calls("wait");
    ASSERT_TRUE(c.try_acquire(name("r1b"), replicated).value().acquired());
    EXPECT_EQ(stat_calls("wait"), waits + 1);
}

// The asynchronous client sends WAIT after the script in the same write on its loop's
// connection, and treats an unconfirmed grant as the synchronous client does.
TEST_F(ReplicaAckTest, TheAsyncClientWaitsForTheReplicaAndReleasesAGrantItDidNotConfirm) {
    auto c = AsyncLockClient::create({.endpoint = *parse_redis_url(master->url()),
                                      .command_timeout = std::chrono::seconds(5),
                                      .release_notifications = false});
    ASSERT_TRUE(c);
    auto [confirmed, held] = promised<Acquisition>();
    c->try_acquire(name("a1"), replicated, std::move(confirmed));
    const auto got = held.get();
    ASSERT_TRUE(got && got->acquired()) << (got ? "contended" : got.error().message());
    EXPECT_EQ(replica->cli({"HGET", "lock:{a1}", "owner"}), got->lease->owner.str());

    replica->pause();
    auto [unconfirmed, refused] = promised<Acquisition>();
    c->try_acquire(name("a2"), impatient, std::move(unconfirmed));
    const auto lost = refused.get();
    ASSERT_FALSE(lost);
    EXPECT_EQ(lost.error(), errc::not_replicated) << lost.error().message();
    EXPECT_FALSE(on_master("lock:{a2}")) << "the unconfirmed grant was released";
}

TEST_F(ReplicaAckTest, AStoppedReplicaFailsTheAcquireWithNotReplicatedAndNobodyHoldsTheLock) {
    auto c = client();
    replica->pause();
    const auto started = std::chrono::steady_clock::now();
    const auto got = c.try_acquire(name("r2"), impatient);
    const auto took = std::chrono::steady_clock::now() - started;
    ASSERT_FALSE(got.has_value());
    // Not reply_timeout: WAIT gave up after replica_timeout and the connection survived.
    EXPECT_EQ(got.error(), errc::not_replicated) << got.error().message();
    EXPECT_EQ(classify(got.error()), failure_kind::retryable);
    std::cout << "not_replicated after " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
              << " ms (replica_timeout 200 ms)\n";
    // Released: the key is gone on the master, and a client without the option takes the lock.
    EXPECT_FALSE(on_master("lock:{r2}"));
    const auto other = c.try_acquire(name("r2"), AcquireOptions{.lease = 10s});
    ASSERT_TRUE(other.has_value());
    EXPECT_TRUE(other->acquired());
}

TEST_F(ReplicaAckTest, ACutReplicationLinkFailsTheAcquireToo) {
    auto c = client();
    replica->pause();
    (void)master->cli({"CLIENT", "KILL", "TYPE", "replica"});
    ASSERT_TRUE(eventually([&] {
        return master->cli({"INFO", "replication"}).find("connected_slaves:0") != std::string::npos;
    }));
    const auto got = c.try_acquire(name("r3"), impatient);
    ASSERT_FALSE(got.has_value());
    EXPECT_EQ(got.error(), errc::not_replicated);
    EXPECT_FALSE(on_master("lock:{r3}"));
}

TEST_F(ReplicaAckTest, NotReplicatedIsRetriedWithinTheWaitUntilTheReplicaIsBack) {
    auto c = client();
    replica->pause();
    AcquireOptions o = impatient;
    o.wait = 20s;
    auto acquiring = std::async(std::launch::async, [&] { return c.acquire(name("r4"), o); });
    // One refused attempt (its WAIT ran, its grant was released), then the replica comes back.
    ASSERT_TRUE(eventually([&] { return stat_calls("wait") >= 1 && stat_calls("evalsha") >= 2; }));
    replica->resume();
    const auto got = acquiring.get();
    ASSERT_TRUE(got.has_value()) << got.error().message();
    ASSERT_TRUE(got->acquired());
    EXPECT_GE(got->attempts, 2u);
    EXPECT_TRUE(eventually([&] { return replica->cli({"HGET", "lock:{r4}", "owner"}) == got->lease->owner.str(); }));
}

TEST_F(ReplicaAckTest, AfterAScriptFlushTheWaitFollowsTheReloadedScript) {
    auto c = client();
    (void)master->cli({"SCRIPT", "FLUSH"});
    const auto got = c.try_acquire(name("r5"), replicated);
    ASSERT_TRUE(got.has_value()) << got.error().message();
    EXPECT_TRUE(got->acquired());
    EXPECT_EQ(stat_calls("wait"), 2);  // after the NOSCRIPT EVALSHA, and after the EVAL
    (void)master->cli({"SCRIPT", "FLUSH"});
    replica->pause();
    const auto refused = c.try_acquire(name("r6"), impatient);
    ASSERT_FALSE(refused.has_value());
    EXPECT_EQ(refused.error(), errc::not_replicated);
    EXPECT_FALSE(on_master("lock:{r6}"));
}

// Records what the client reports, from its own threads.
struct Recorder final : LockObserver {
    void on_acquire(const AcquireEvent& e) noexcept override {
        std::lock_guard lock(mutex);
        acquires.push_back(e);
    }
    void on_renew(const RenewEvent& e) noexcept override {
        std::lock_guard lock(mutex);
        renewals.push_back(e.result.has_value() ? std::error_code{} : e.result.error());
    }
    void on_release(const ReleaseEvent&) noexcept override {
        std::lock_guard lock(mutex);
        ++releases;
    }
    std::mutex mutex;
    std::vector<AcquireEvent> acquires;
    std::vector<std::error_code> renewals;
    int releases = 0;
};

TEST_F(ReplicaAckTest, NothingCountsAnUnacknowledgedGrantAsHeld) {
    auto recorder = std::make_shared<Recorder>();
    auto c = client(ClientOptions{.command_timeout = 5s, .observer = recorder});
    replica->pause();
    const auto held = c.hold(name("h1"), impatient);
    ASSERT_FALSE(held.has_value());
    EXPECT_EQ(held.error(), errc::not_replicated);
    EXPECT_EQ(c.keeper_stats().leases_kept, 0u);
    EXPECT_FALSE(on_master("lock:{h1}"));
    std::lock_guard lock(recorder->mutex);
    ASSERT_EQ(recorder->acquires.size(), 1u);
    EXPECT_EQ(recorder->acquires[0].result, AcquireResult::error);
    EXPECT_EQ(recorder->acquires[0].error, errc::not_replicated);
    EXPECT_FALSE(recorder->acquires[0].fence.has_value());
    EXPECT_EQ(recorder->releases, 0);  // the loop's release of a lease nobody held is no event
    EXPECT_TRUE(recorder->renewals.empty());
}

TEST_F(ReplicaAckTest, AnUnacknowledgedRenewalIsReportedAsNotReplicated) {
    auto recorder = std::make_shared<Recorder>();
    auto c = client(ClientOptions{.command_timeout = 5s, .observer = recorder});
    AcquireOptions o = replicated;
    o.lease = 3s;
    o.replica_timeout = 300ms;
    o.wait = 10s;
    auto h = c.hold(name("h2"), o, KeepOptions{.renew_every = 300ms});
    ASSERT_TRUE(h.has_value() && h->acquired());
    replica->pause();
    ASSERT_TRUE(eventually([&] {
        std::lock_guard lock(recorder->mutex);
        return std::ranges::count(recorder->renewals, make_error_code(errc::not_replicated)) >= 1;
    }));
}

TEST_F(ReplicaAckTest, AReplicaTimeoutTheCommandTimeoutCannotCoverIsMisuse) {
    auto c = client(ClientOptions{.command_timeout = 300ms});
    const AcquireOptions o = impatient;  // 200 ms: more than half of 300 ms
    EXPECT_THROW((void)c.try_acquire(name("r7"), o), std::invalid_argument);
    EXPECT_EQ(stat_calls("evalsha"), 0);
}

TEST_F(ReplicaAckTest, KeptLeasesAskOneWaitPerKeeperBatchNotOnePerLease) {
    auto c = client();
    std::vector<HeldLease> held;
    for (const char* r : {"k1", "k2", "k3"}) {
        auto h = c.hold(name(r), replicated, KeepOptions{.renew_every = 200ms});
        ASSERT_TRUE(h.has_value() && h->acquired());
        held.push_back(std::move(*h->lease));
    }
    ASSERT_TRUE(eventually([&] { return c.keeper_stats().batches >= 1; }));  // renew.lua is cached
    // Batches are counted when their replies are in, so one may have sent its WAIT uncounted.
    const auto before_low = c.keeper_stats().batches;
    const long waits_before = stat_calls("wait");
    const auto before_high = c.keeper_stats().batches;
    ASSERT_TRUE(eventually([&] { return c.keeper_stats().batches >= before_high + 4; }));
    const auto after_low = c.keeper_stats().batches;
    const long waits = stat_calls("wait") - waits_before;
    const auto after_high = c.keeper_stats().batches;
    EXPECT_GE(waits, static_cast<long>(after_low - before_high) - 1);
    EXPECT_LE(waits, static_cast<long>(after_high - before_low) + 1);  // one per lease would be 3x
    // Leases due a few ms apart may go in separate batches on a loaded machine; some batch must
    // still have carried two or more, or one WAIT per batch and one per lease look the same.
    const KeeperStats stats = c.keeper_stats();
    EXPECT_GT(stats.renewals_sent, stats.batches) << "no batch carried more than one lease";
    for (auto& h : held) EXPECT_TRUE(h.valid());
}

TEST_F(ReplicaAckTest, UnacknowledgedRenewalsDoNotExtendSafeUntilButInventNoOtherOwner) {
    auto c = client();
    AcquireOptions o = replicated;
    o.lease = 2s;
    o.replica_timeout = 300ms;
    o.wait = 10s;  // a busy machine may miss 300 ms once: not_replicated is retried
    auto h = c.hold(name("k4"), o, KeepOptions{.renew_every = 300ms});
    ASSERT_TRUE(h.has_value() && h->acquired());
    HeldLease lease = std::move(*h->lease);
    ASSERT_TRUE(eventually([&] { return lease.renewals() >= 1; }));
    replica->pause();
    const auto renewed = lease.renewals();
    // valid() turns false at safe_until by the clock; the keeper's loss report follows.
    ASSERT_TRUE(eventually([&] { return lease.loss().has_value(); }));
    EXPECT_FALSE(lease.valid());
    EXPECT_EQ(lease.loss(), LossReason::expired);
    // Renewals went on reaching the master, but none counted once the replica stopped (one
    // acknowledged just before the pause may still have been on its way).
    EXPECT_LE(lease.renewals(), renewed + 1);
    EXPECT_GT(c.keeper_stats().renewals_sent, c.keeper_stats().renewals_confirmed);
    EXPECT_EQ(master->cli({"HGET", "lock:{k4}", "owner"}), lease.owner().str());
}

}  // namespace
}  // namespace fencelock::test_support

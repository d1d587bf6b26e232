// Direct handoff against a real redis-server: the release grants the lease to the waiter it
// names (docs/DESIGN.md, "Direct handoff"), a dead grantee blocks the lock no longer than its
// place would have, giving up leaks no lease, a waiter that did not opt in (a plain acquire())
// is never granted to, and many threads and processes on one hot resource keep mutual exclusion
// and increasing fences.
#include <unistd.h>

#include <fstream>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "coordinator/redis/release_notifier.hpp"
#include "coordinator/redis/scripts.hpp"
#include "fencelock/keeper.hpp"
#include "integration/hold_history.hpp"
#include "integration/lock_fixture.hpp"
#include "local_servers/child_process.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

// Backoff so long that a waiter relying on it would not wake within any test's patience.
constexpr BackoffPolicy sleepy{.base = 60s, .max = 60s};

class DirectHandoffTest : public LockTest {
protected:
    long handoff_entries(const std::string& r) { return std::stol(redis->cli({"HLEN", "handoff:{" + r + "}"})); }
    // acquire.lua as the client calls it, for an owner that never listens to release messages
    // (a waiter whose process died): a refused attempt among the sleepers, `direct` '1' or '0'.
    std::string dead_waiter_attempt(const std::string& r, const std::string& owner, const std::string& direct,
                                    const std::string& slot_ms) {
        const std::string t = "{" + r + "}";
        return redis->cli({"EVAL", std::string(detail::scripts::acquire.body), "6", "lock:" + t, "fence:" + t,
                           "waiters:" + t, "waiter-deadlines:" + t, "sleepers:" + t, "handoff:" + t, owner, "60000",
                           "60000", "4242 dead-host dead", "2", slot_ms, "0", direct});
    }
    // hold() on another thread, for a waiter that opts in and retries quickly (a 2.2 s slot).
    static std::future<Result<Holding>> hold_soon(LockClient& c, const ResourceName& r) {
        return std::async(std::launch::async, [&c, r] {
            return c.hold(r, {.lease = 10s, .wait = 60s, .backoff = {.base = 10ms, .max = 100ms}}, KeepOptions{});
        });
    }
    // leave_line.lua for `owner`, as the client calls it.
    std::string leave_line(const std::string& r, const std::string& owner) {
        const std::string t = "{" + r + "}";
        return redis->cli({"EVAL", std::string(detail::scripts::leave_line.body), "6", "waiters:" + t,
                           "waiter-deadlines:" + t, "lock:" + t, "sleepers:" + t, "fence:" + t, "handoff:" + t, owner,
                           "released:" + t});
    }
    // The server's clock in ms (the clock deadlines and TTLs are counted on).
    std::int64_t server_ms() {
        const std::string t = redis->cli({"TIME"});
        const auto nl = t.find('\n');
        return std::stoll(t.substr(0, nl)) * 1000 + std::stoll(t.substr(nl + 1)) / 1000;
    }
    static std::string this_host() {
        char buf[256] = {};
        return gethostname(buf, sizeof buf - 1) == 0 ? buf : "unknown";
    }
};

TEST_F(DirectHandoffTest, TheNamedWaiterOwnsTheLeaseWhenTheReleaseReturnsAndSendsNothingMore) {
    auto holder_client = client();
    auto waiter_client = client({.holder_label = "grantee"});
    const auto r = resource("direct");
    const auto held = hold_for_a_minute(holder_client, r);
    ASSERT_TRUE(held);
    auto waiting = std::async(std::launch::async, [&] {
        return waiter_client.hold(r, {.lease = 10s, .wait = 120s, .backoff = sleepy}, KeepOptions{});
    });
    // Its watched attempt was refused and left its grant arguments: asleep on the message.
    ASSERT_TRUE(eventually([&] { return handoff_entries("direct") == 1 && script_calls() == 3; }));

    ASSERT_TRUE(holder_client.release(r, held->owner));
    const long after_release = script_calls();
    auto info = holder_client.inspect(r);  // the moment the release returned: the waiter holds it
    ASSERT_TRUE(info && info->holder);
    EXPECT_GT(info->holder->fence, held->fence);
    EXPECT_EQ(info->holder->fence, info->last_fence) << "the grant's fence is the next fence";
    EXPECT_EQ(info->holder->label, "grantee");
    EXPECT_EQ(info->holder->host, this_host());
    EXPECT_EQ(info->holder->pid, ::getpid());
    EXPECT_EQ(info->holder->lease, 10s);
    EXPECT_LE(info->holder->ttl, 10s);
    EXPECT_EQ(handoff_entries("direct"), 0);

    ASSERT_EQ(waiting.wait_for(30s), std::future_status::ready) << "the grant message never reached the waiter";
    auto got = waiting.get();
    ASSERT_TRUE(got && got->acquired());
    EXPECT_EQ(got->lease->owner().str(), info->holder->owner);
    EXPECT_EQ(got->lease->fence(), info->holder->fence);
    EXPECT_EQ(got->attempts, 2u);  // refused unwatched, refused watched; nothing after the release
    EXPECT_EQ(script_calls(), after_release + 1) << "the waiter confirmed the grant (only inspect should count)";
    EXPECT_TRUE(got->lease->release());
}

TEST_F(DirectHandoffTest, ADeadGranteeBlocksTheLockAtMostItsSlotAndTheNextWaiterIsServed) {
    auto holder_client = client();
    auto waiter_client = client();
    const auto r = resource("dead");
    const auto held = hold_for_a_minute(holder_client, r);
    ASSERT_TRUE(held);
    // A waiter that opted in and then died: its 60 s lease would block the lock for a minute.
    ASSERT_EQ(dead_waiter_attempt("dead", "dead-owner", "1", "1500").substr(0, 1), "0");
    auto waiting = hold_soon(waiter_client, r);
    ASSERT_TRUE(eventually([&] { return handoff_entries("dead") == 2; }));
    const std::int64_t lapses_at = std::stoll(redis->cli({"HGET", "waiter-deadlines:{dead}", "dead-owner"}));

    ASSERT_TRUE(holder_client.release(r, held->owner));
    auto info = holder_client.inspect(r);
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->holder->owner, "dead-owner") << "the first sleeper is the one granted";
    EXPECT_EQ(info->holder->label, "dead");
    EXPECT_EQ(info->holder->lease, 60s);
    // The documented bound: the grant ends when its place would have lapsed (min(its lease,
    // deadline - now)), not a whole slot after the release. TIME before PTTL: their sum is at
    // most the expiry.
    const std::int64_t now_ms = server_ms();
    const std::int64_t ttl_ms = std::stoll(redis->cli({"PTTL", "lock:{dead}"}));
    EXPECT_GT(ttl_ms, 0);
    EXPECT_LE(now_ms + ttl_ms, lapses_at + 1) << "the dead grantee blocks the lock past its place's deadline";

    ASSERT_EQ(waiting.wait_for(30s), std::future_status::ready);
    auto got = waiting.get();
    ASSERT_TRUE(got && got->acquired()) << "the next waiter was not served once the dead grant lapsed";
    EXPECT_GT(got->lease->fence(), info->holder->fence);
}

// The same bound for a grant a release of the waiter's own client makes (told by its reply, no
// message): should that waiter be giving up and its leave_line fail, the lock is idle no longer
// than its place would have lasted, not its whole 60 s lease.
TEST_F(DirectHandoffTest, AGrantToAWaiterOfTheReleasingClientIsBoundedByItsPlaceToo) {
    const std::string t = "{own-bound}";
    const auto keys = [&](std::vector<std::string> argv) {
        std::vector<std::string> cmd{"EVAL"};
        cmd.insert(cmd.end(), argv.begin(), argv.end());
        return redis->cli(cmd);
    };
    ASSERT_EQ(keys({std::string(detail::scripts::acquire.body), "6", "lock:" + t, "fence:" + t, "waiters:" + t,
                    "waiter-deadlines:" + t, "sleepers:" + t, "handoff:" + t, "holder", "60000", "60000",
                    "1 host holder", "0", "1000"})
                  .substr(0, 1),
              "1");
    // A waiter of client "cid-7" whose refused attempt left its place (1.5 s) and grant arguments.
    ASSERT_EQ(keys({std::string(detail::scripts::acquire.body), "6", "lock:" + t, "fence:" + t, "waiters:" + t,
                    "waiter-deadlines:" + t, "sleepers:" + t, "handoff:" + t, "gone-owner", "60000", "60000",
                    "4242 dead-host dead", "2", "1500", "0", "2", "cid-7"})
                  .substr(0, 1),
              "0");
    EXPECT_EQ(handoff_entries("own-bound"), 1);
    const std::int64_t lapses_at = std::stoll(redis->cli({"HGET", "waiter-deadlines:" + t, "gone-owner"}));

    // Released by the same client, which vouches for another waiter (its successor) but not
    // for this one: granted, told by the reply, and bounded.
    const std::string reply = keys({std::string(detail::scripts::release.body), "6", "lock:" + t, "waiters:" + t,
                                    "waiter-deadlines:" + t, "sleepers:" + t, "fence:" + t, "handoff:" + t, "holder",
                                    "released:" + t, "cid-7", "other-waiter", "60000", "60000", "1 host other"});
    EXPECT_NE(reply.find("gone-owner"), std::string::npos) << reply;
    const std::int64_t now_ms = server_ms();
    const std::int64_t ttl_ms = std::stoll(redis->cli({"PTTL", "lock:" + t}));
    EXPECT_GT(ttl_ms, 0);
    EXPECT_LE(now_ms + ttl_ms, lapses_at + 1) << "an own-client grant outlives the waiter's place: " << ttl_ms << " ms";
}

TEST_F(DirectHandoffTest, AWaiterThatDidNotOptInIsOnlyWokenNeverGranted) {
    auto holder_client = client();
    const auto r = resource("old");
    const auto held = hold_for_a_minute(holder_client, r);
    ASSERT_TRUE(held);
    ASSERT_EQ(dead_waiter_attempt("old", "old-style", "0", "60000").substr(0, 1), "0");
    EXPECT_EQ(handoff_entries("old"), 0);
    ASSERT_TRUE(holder_client.release(r, held->owner));
    auto info = holder_client.inspect(r);
    ASSERT_TRUE(info);
    EXPECT_FALSE(info->holder) << "a waiter that never asked for grants was granted the lease";
    EXPECT_EQ(info->last_fence, held->fence) << "no fence was issued";
}

// A plain acquire() has no keeper to extend a shorter grant: it never opts in, is woken and
// takes the lock through acquire, with the whole lease it asked for.
// A plain acquire() that hears the release messages takes another client's grant too: the grant
// is bounded by the waiter's place, so the waiter renews it to the lease it asked before
// acquire() returns (the caller never holds less than it asked: it once got 4 s of 30).
TEST_F(DirectHandoffTest, APlainAcquireGrantedByAnotherClientIsExtendedToItsWholeLease) {
    auto holder_client = client();
    auto waiter_client = client();
    const auto r = resource("plain");
    const auto held = hold_for_a_minute(holder_client, r);
    ASSERT_TRUE(held);
    const BackoffPolicy quick{.base = 10ms, .max = 250ms};  // slot 2 * 250 ms + 2 s = 2.5 s
    auto waiting = std::async(std::launch::async,
                              [&] { return waiter_client.acquire(r, {.lease = 30s, .wait = 60s, .backoff = quick}); });
    // Subscribed, and an attempt made since (its place then takes any release's grant; one made
    // before the subscription stood takes only its own client's).
    ASSERT_TRUE(eventually([&] { return redis->cli({"PUBSUB", "SHARDNUMSUB", "released:{plain}"}).ends_with("\n1"); }));
    const long calls = script_calls();
    ASSERT_TRUE(eventually([&] { return script_calls() > calls && handoff_entries("plain") == 1; }));
    const auto grants_before = detail::ReleaseNotifier::grants_taken();
    redis->cli({"CONFIG", "RESETSTAT"});
    ASSERT_TRUE(holder_client.release(r, held->owner));
    ASSERT_EQ(waiting.wait_for(30s), std::future_status::ready);
    auto got = waiting.get();
    ASSERT_TRUE(got && got->acquired());
    EXPECT_EQ(detail::ReleaseNotifier::grants_taken(), grants_before + 1) << "the grant message did not reach it";
    EXPECT_GT(got->lease->ttl, 2500ms) << "the lease was left at the waiter's slot";
    auto info = holder_client.inspect(r);
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->holder->owner, got->lease->owner.str());
    EXPECT_GT(info->holder->ttl, 2500ms);
    EXPECT_EQ(info->holder->renewals, 1u) << "extended by one renewal";
    EXPECT_TRUE(waiter_client.release(r, got->lease->owner));
}

// Threads of one client taking turns: each release grants the next thread's plain acquire() its
// whole lease and says so in its reply, so no message is published and the waiter takes the
// lock without another attempt of its own.
TEST_F(DirectHandoffTest, AReleaseGrantsAWaiterOfItsOwnClientTheWholeLeaseWithoutAMessage) {
    auto c = client();
    const auto r = resource("own");
    auto held = c.try_acquire(r, {.lease = 60s});
    ASSERT_TRUE(held && held->acquired());
    auto waiting =
        std::async(std::launch::async, [&] { return c.acquire(r, {.lease = 30s, .wait = 60s, .backoff = sleepy}); });
    // Its refused attempt left its place with grant arguments for this client's releases.
    ASSERT_TRUE(eventually([&] { return handoff_entries("own") == 1; }));
    redis->cli({"CONFIG", "RESETSTAT"});
    const auto grants_before = detail::ReleaseNotifier::grants_taken();
    ASSERT_TRUE(c.release(r, held->lease->owner));
    ASSERT_EQ(waiting.wait_for(30s), std::future_status::ready) << "the grant did not reach the waiter";
    auto got = waiting.get();
    ASSERT_TRUE(got && got->acquired());
    // Since the reset: the release alone. The waiter neither confirmed the grant nor retried.
    EXPECT_EQ(script_calls(), 1) << "the waiter confirmed or retried instead of taking the grant";
    EXPECT_GT(got->lease->ttl, 29s) << "a grant from its own client is the whole lease";
    EXPECT_GT(got->lease->fence, held->lease->fence);
    EXPECT_EQ(detail::ReleaseNotifier::grants_taken(), grants_before + 1);
    EXPECT_EQ(redis->cli({"INFO", "commandstats"}).find("cmdstat_spublish"), std::string::npos)
        << "the grant was also published";
    auto info = c.inspect(r);
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->holder->owner, got->lease->owner.str());
    EXPECT_GT(info->holder->ttl, 29s);
    EXPECT_TRUE(c.release(r, got->lease->owner));
    EXPECT_EQ(handoff_entries("own"), 0);
}

// The same with a place shorter than the lease (a 2.5 s slot, a 30 s lease): the release names
// its waiting thread its successor, vouching that it waits, so the place does not bound the
// grant and the waiter extends nothing (before, every such handoff cost a renewal: 0.55x on
// the threaded hot bench, bench/results/2026-12-03-own-grant-bound.md).
TEST_F(DirectHandoffTest, AReleaseVouchesForItsWaitingThreadSoItsGrantIsNotBoundedByThePlace) {
    auto c = client();
    const auto r = resource("vouch");
    auto held = c.try_acquire(r, {.lease = 60s});
    ASSERT_TRUE(held && held->acquired());
    const BackoffPolicy quick{.base = 10ms, .max = 250ms};  // slot 2 * 250 ms + 2 s = 2.5 s
    auto waiting =
        std::async(std::launch::async, [&] { return c.acquire(r, {.lease = 30s, .wait = 60s, .backoff = quick}); });
    ASSERT_TRUE(eventually([&] { return handoff_entries("vouch") == 1; }));
    const auto grants_before = detail::ReleaseNotifier::grants_taken();
    ASSERT_TRUE(c.release(r, held->lease->owner));
    ASSERT_EQ(waiting.wait_for(30s), std::future_status::ready) << "the grant did not reach the waiter";
    auto got = waiting.get();
    ASSERT_TRUE(got && got->acquired());
    EXPECT_EQ(detail::ReleaseNotifier::grants_taken(), grants_before + 1) << "not granted by the release's reply";
    EXPECT_GT(got->lease->ttl, 29s);
    auto info = c.inspect(r);
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->holder->owner, got->lease->owner.str());
    EXPECT_EQ(info->holder->renewals, 0u) << "the grant was bounded by the place and extended";
    EXPECT_GT(info->holder->ttl, 25s);
    EXPECT_TRUE(c.release(r, got->lease->owner));
}

// A release by an ACL user that may not publish cannot tell the waiter of a grant: it grants
// nothing, and the waiter takes the free lock by its own timer.
TEST_F(DirectHandoffTest, AReleaseThatCannotPublishGrantsNothing) {
    redis->cli({"ACL", "SETUSER", "nochan", "on", ">nochan-pw", "~*", "resetchannels", "+@all"});
    ClientOptions mute;
    mute.endpoint = *parse_redis_url("redis://nochan:nochan-pw@127.0.0.1:" + std::to_string(redis->port()));
    auto holder_client = LockClient::create(mute).value();
    auto waiter_client = client();
    const auto r = resource("mute");
    const auto held = hold_for_a_minute(holder_client, r);
    ASSERT_TRUE(held);
    auto waiting = hold_soon(waiter_client, r);
    ASSERT_TRUE(eventually([&] { return handoff_entries("mute") == 1; }));
    ASSERT_TRUE(holder_client.release(r, held->owner));
    auto info = holder_client.inspect(r);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->last_fence, held->fence) << "a grant was issued that nobody was told of";
    ASSERT_EQ(waiting.wait_for(30s), std::future_status::ready);
    auto got = waiting.get();
    ASSERT_TRUE(got && got->acquired());
}

TEST_F(DirectHandoffTest, LeavingTheLineHandsOnALeaseGrantedMeanwhile) {
    auto holder_client = client();
    const auto r = resource("leave");
    const auto held = hold_for_a_minute(holder_client, r);
    ASSERT_TRUE(held);
    ASSERT_EQ(dead_waiter_attempt("leave", "first", "1", "60000").substr(0, 1), "0");
    ASSERT_EQ(dead_waiter_attempt("leave", "second", "1", "60000").substr(0, 1), "0");
    ASSERT_TRUE(holder_client.release(r, held->owner));
    const auto granted = holder_client.inspect(r);
    ASSERT_TRUE(granted && granted->holder);
    ASSERT_EQ(granted->holder->owner, "first");
    // "first" gives up before it took the grant up: the lease goes on to "second".
    EXPECT_EQ(leave_line("leave", "first"), "2");
    auto info = holder_client.inspect(r);
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->holder->owner, "second");
    EXPECT_EQ(info->holder->fence, info->last_fence);
}

// A lease the owner's own acquire got (a retry after a lost reply would find it) is not
// leave_line's to give back: a caller holding the token retries for it.
TEST_F(DirectHandoffTest, LeavingTheLineKeepsALeaseTheOwnersOwnAcquireGot) {
    auto c = client();
    const auto r = resource("own");
    ASSERT_EQ(dead_waiter_attempt("own", "mine", "1", "60000").substr(0, 1), "1") << "the free lock was not granted";
    EXPECT_EQ(leave_line("own", "mine"), "0");
    auto info = c.inspect(r);
    ASSERT_TRUE(info && info->holder) << "leave_line deleted a lease its leaver's acquire got";
    EXPECT_EQ(info->holder->owner, "mine");
}

// A holder's hash without a fence (damaged, or written by hand) leaves a waiter waiting, as
// before direct handoff: no fatal malformed reply that would leave its place and arguments.
TEST_F(DirectHandoffTest, AHolderWithoutAFenceIsWaitedForNotAFatalReply) {
    auto c = client();
    const auto r = resource("nofence");
    redis->cli({"HSET", "lock:{nofence}", "owner", "someone", "waiting", "1"});
    redis->cli({"PEXPIRE", "lock:{nofence}", "60000"});
    ASSERT_EQ(dead_waiter_attempt("nofence", "w", "1", "60000").substr(0, 2), "0\n");
    auto got = c.hold(r, {.lease = 10s, .wait = 300ms, .backoff = {.base = 10ms, .max = 50ms}}, KeepOptions{});
    ASSERT_TRUE(got) << got.error().message();
    EXPECT_FALSE(got->acquired());
    EXPECT_EQ(redis->cli({"ZCARD", "sleepers:{nofence}"}), "1") << "only the hand-made waiter w keeps a place";
    EXPECT_EQ(handoff_entries("nofence"), 1);
}

// Waiters that give up at all moments (short waits on a hot resource): once every acquisition
// returned, no lease may be left that nobody knows of.
TEST_F(DirectHandoffTest, GivingUpWhileAGrantIsInFlightLeaksNoLease) {
    auto shared = client();
    const auto r = resource("impatient");
    std::atomic<int> acquired{0}, gave_up{0};
    {
        std::vector<std::jthread> threads;
        for (int t = 0; t < 8; ++t)
            threads.emplace_back([&, t] {
                for (int i = 0; i < 60; ++i) {
                    const auto wait = std::chrono::milliseconds(1 + (t * 7 + i) % 5);
                    auto got = shared.hold(r, {.lease = 30s, .wait = wait}, KeepOptions{});
                    if (!got || !got->acquired()) {
                        ++gave_up;
                        continue;
                    }
                    ++acquired;
                    std::this_thread::yield();
                    ASSERT_TRUE(got->lease->release());
                }
            });
    }
    EXPECT_GT(acquired.load(), 0);
    EXPECT_GT(gave_up.load(), 0) << "nobody gave up: the test exercised nothing";
    auto info = shared.inspect(r);
    ASSERT_TRUE(info);
    EXPECT_FALSE(info->holder) << "a lease was left to " << (info->holder ? info->holder->owner : "");
}

// A kept lease granted directly starts with TTL min(lease, what is left of its place); the
// keeper renews it to the full lease on its next pass.
TEST_F(DirectHandoffTest, TheKeeperRenewsADirectGrantShorterThanTheLease) {
    auto holder_client = client();
    auto waiter_client = client();
    const auto r = resource("kept");
    const auto held = hold_for_a_minute(holder_client, r);
    ASSERT_TRUE(held);
    const BackoffPolicy quick{.base = 10ms, .max = 250ms};  // slot 2 * 250 ms + 2 s = 2.5 s
    auto holding = std::async(std::launch::async, [&] {
        return waiter_client.hold(r, {.lease = 30s, .wait = 60s, .backoff = quick}, KeepOptions{});
    });
    ASSERT_TRUE(eventually([&] { return handoff_entries("kept") == 1; }));
    const auto grants_before = detail::ReleaseNotifier::grants_taken();
    ASSERT_TRUE(holder_client.release(r, held->owner));
    ASSERT_EQ(holding.wait_for(30s), std::future_status::ready);
    auto got = holding.get();
    ASSERT_TRUE(got && got->acquired());
    EXPECT_GT(detail::ReleaseNotifier::grants_taken(), grants_before);
    const auto granted = holder_client.inspect(r);
    ASSERT_TRUE(granted && granted->holder);
    ASSERT_TRUE(eventually(
        [&] {
            auto info = holder_client.inspect(r);
            return info && info->holder && info->holder->renewals > 0;
        },
        10s))
        << "the keeper never renewed the granted lease";
    auto info = holder_client.inspect(r);
    ASSERT_TRUE(info && info->holder);
    EXPECT_GT(info->holder->ttl, 2500ms) << "renewed to the lease, past the grant's TTL";
    EXPECT_EQ(info->holder->fence, granted->holder->fence);
    EXPECT_TRUE(got->lease->valid());
}

// Many threads of one client, threads of their own clients and hammer processes on one hot
// resource: the merged history has no overlap and strictly increasing fences.
TEST_F(DirectHandoffTest, AHotResourceKeepsExclusionAndFencesAcrossThreadsAndProcesses) {
    const std::string name = "hot:one";
    constexpr std::int64_t run_ms = 2500;
    constexpr int processes = 3, shared_threads = 12, own_client_threads = 4;
    std::vector<pid_t> children;
    std::vector<std::string> files;
    for (int p = 0; p < processes; ++p) {
        files.push_back(::testing::TempDir() + "hot-hammer-" + std::to_string(::getpid()) + "-" + std::to_string(p));
        children.push_back(
            local::start_process({HAMMER_BIN, client_url(), std::to_string(run_ms), files.back(), name}));
    }
    const auto grants_before = detail::ReleaseNotifier::grants_taken();
    std::mutex m;
    std::vector<Hold> holds;
    std::atomic<int> failures{0};
    auto shared = client();
    const auto work = [&](LockClient& c, const std::string& who) {
        const auto r = resource(name);
        const auto until = monotonic_ns() + run_ms * 1'000'000;
        while (monotonic_ns() < until) {
            auto got = c.hold(r, {.lease = 10s, .wait = 5s, .backoff = {.base = 1ms, .max = 10ms}}, KeepOptions{});
            if (!got || !got->acquired()) {
                ++failures;
                continue;
            }
            Hold h{name, got->lease->fence().value(), monotonic_ns(), 0, who};
            std::this_thread::yield();
            h.end_ns = monotonic_ns();
            {
                std::lock_guard lock(m);
                holds.push_back(h);
            }
            EXPECT_TRUE(got->lease->release());
        }
    };
    {
        std::vector<std::jthread> threads;
        for (int t = 0; t < shared_threads; ++t)
            threads.emplace_back([&, t] { work(shared, "shared-" + std::to_string(t)); });
        for (int t = 0; t < own_client_threads; ++t)
            threads.emplace_back([&, t] {
                auto own = client({.pool_size = 1});
                work(own, "own-" + std::to_string(t));
            });
    }
    EXPECT_EQ(failures.load(), 0);
    for (int p = 0; p < processes; ++p) {
        EXPECT_EQ(local::wait_process(children[static_cast<std::size_t>(p)]), 0) << "hammer " << p << " failed";
        std::ifstream in(files[static_cast<std::size_t>(p)]);
        auto process_holds = read_holds(in, "process-" + std::to_string(p));
        EXPECT_GT(process_holds.size(), 0u) << "hammer " << p << " never got the lock";
        holds.insert(holds.end(), process_holds.begin(), process_holds.end());
        std::remove(files[static_cast<std::size_t>(p)].c_str());
    }
    ASSERT_GT(holds.size(), 200u) << "too few critical sections to say anything";
    EXPECT_GT(detail::ReleaseNotifier::grants_taken(), grants_before) << "no direct grant reached this process";
    for (const auto& v : check_holds(holds)) ADD_FAILURE() << v;
    std::set<std::uint64_t> fences;
    for (const Hold& h : holds) fences.insert(h.fence);
    EXPECT_EQ(fences.size(), holds.size()) << "a fence was issued twice";
    std::printf("hot resource: %zu critical sections, %llu direct grants taken here\n", holds.size(),
                static_cast<unsigned long long>(detail::ReleaseNotifier::grants_taken() - grants_before));
}

}  // namespace
}  // namespace fencelock::test_support

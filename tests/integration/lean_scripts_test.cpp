// What an uncontended cycle costs Redis, counted by Redis itself (INFO commandstats counts the
// calls a script makes too), and that the lean path keeps every waiter's wake-up: a refused
// waiting attempt, a line in Redis or a waiting thread of the grantee's client makes the
// release look for the next waiter and publish, as before.
#include <future>
#include <map>
#include <sstream>

#include "coordinator/redis/scripts.hpp"
#include "integration/lock_fixture.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

// Backoff so long that a waiter relying on it would not wake within the test's patience.
constexpr BackoffPolicy sleepy{.base = 60s, .max = 60s};

class LeanScriptsTest : public LockTest {
protected:
    /// Calls per command since the last CONFIG RESETSTAT, the RESETSTAT itself left out.
    std::map<std::string, long> calls() {
        std::map<std::string, long> out;
        std::istringstream lines(redis->cli({"INFO", "commandstats"}));
        for (std::string line; std::getline(lines, line);) {
            const auto colon = line.find(":calls=");
            if (!line.starts_with("cmdstat_") || colon == std::string::npos) continue;
            const std::string name = line.substr(8, colon - 8);
            if (name.starts_with("config|")) continue;  // the RESETSTAT
            out[name] = std::stol(line.substr(colon + 7));
        }
        return out;
    }
    static long total(const std::map<std::string, long>& c) {
        long n = 0;
        for (const auto& [name, count] : c) n += count;
        return n;
    }
    /// Opens the client's connection and loads both scripts, so the counted cycle pays neither.
    void warm_up(LockClient& c) {
        auto got = c.try_acquire(resource("warm-up"), {.lease = 10s});
        ASSERT_TRUE(got && got->acquired());
        ASSERT_TRUE(c.release(resource("warm-up"), got->lease->owner));
        redis->cli({"CONFIG", "RESETSTAT"});
    }
    std::string eval(const detail::ScriptSource& script, std::vector<std::string> keys_and_args, int keys) {
        std::vector<std::string> argv{"EVAL", std::string(script.body), std::to_string(keys)};
        argv.insert(argv.end(), keys_and_args.begin(), keys_and_args.end());
        return redis->cli(argv);
    }
    // acquire.lua and release.lua called as the client calls them, for owner `o` of {r}.
    std::string eval_acquire(const std::string& r, const std::string& o, const std::string& local_waiters) {
        const std::string t = "{" + r + "}";
        return eval(detail::scripts::acquire,
                    {"lock:" + t, "fence:" + t, "waiters:" + t, "waiter-deadlines:" + t, "sleepers:" + t,
                     "handoff:" + t, o, "10000", "10000", "1 host ", "2", "1000", local_waiters},
                    6);
    }
    std::string eval_release(const std::string& r, const std::string& o) {
        const std::string t = "{" + r + "}";
        return eval(detail::scripts::release,
                    {"lock:" + t, "waiters:" + t, "waiter-deadlines:" + t, "sleepers:" + t, "fence:" + t,
                     "handoff:" + t, o, "released:" + t},
                    6);
    }
};

// The bound comes from the scripts' lean paths: acquire = EXISTS (lock and line keys), TIME,
// GET and SET of the counter, HSET and PEXPIRE of the lease (6); release = HMGET, DEL (2); plus
// the two EVALSHA. Re-adding a call to either path fails it.
constexpr long lean_cycle_calls = 2 + 6 + 2;

TEST_F(LeanScriptsTest, AnUncontendedCycleCostsTenRedisCallsAndPublishesNothing) {
    auto c = client();
    warm_up(c);
    const auto r = resource("lean");
    auto got = c.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(got && got->acquired());
    ASSERT_TRUE(c.release(r, got->lease->owner));

    const auto counted = calls();
    EXPECT_LE(total(counted), lean_cycle_calls) << "a call crept back into the uncontended path";
    EXPECT_EQ(counted.count("spublish"), 0u) << "nobody waited, yet the release published";
    EXPECT_EQ(counted.count("zrange"), 0u) << "nobody waited, yet a script looked for the line's head";
    EXPECT_EQ(counted.at("evalsha"), 2);
}

// A waiting acquire() that gets the lock at once (a sleepers' place, had it been refused) costs
// the same: no place to leave when it never took one.
TEST_F(LeanScriptsTest, AWaitingAcquireGrantedAtOnceCostsTheSame) {
    auto c = client();
    warm_up(c);
    const auto r = resource("lean-wait");
    auto got = c.acquire(r, {.lease = 10s, .wait = 10s});
    ASSERT_TRUE(got && got->acquired());
    ASSERT_TRUE(c.release(r, got->lease->owner));

    const auto counted = calls();
    EXPECT_LE(total(counted), lean_cycle_calls);
    EXPECT_EQ(counted.count("spublish"), 0u);
    EXPECT_EQ(counted.count("zrem"), 0u) << "a place that was never taken was removed";
}

// The lean grant still writes everything inspect and list show, in the call that creates it.
TEST_F(LeanScriptsTest, TheLeanGrantWritesTheHolderMetadata) {
    auto c = client(ClientOptions{.holder_label = "lean-label"});
    const auto r = resource("meta");
    auto got = c.try_acquire(r, {.lease = 10s, .max_hold = 20s});
    ASSERT_TRUE(got && got->acquired());
    auto info = c.inspect(r);
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->holder->owner, got->lease->owner.str());
    EXPECT_EQ(info->holder->fence, got->lease->fence);
    EXPECT_EQ(info->holder->label, "lean-label");
    EXPECT_GT(info->holder->pid, 0);
    EXPECT_FALSE(info->holder->host.empty());
    EXPECT_EQ(info->holder->renewals, 0u);
    EXPECT_EQ(info->holder->since_renew, info->holder->held_for) << "never renewed: counts from the acquisition";
    EXPECT_GT(info->holder->max_hold_left, 15s);
    EXPECT_LE(info->holder->max_hold_left, 20s);
    EXPECT_EQ(redis->cli({"HLEN", "lock:{meta}"}), "4") << "the lean lease is four fields (lib/lease.lua)";
    EXPECT_EQ(redis->cli({"HGET", "lock:{meta}", "waiting"}), "0");
    const long ttl = std::stol(redis->cli({"PTTL", "lock:{meta}"}));
    EXPECT_GT(ttl, 0);
    EXPECT_LE(ttl, 10'000);
}

TEST_F(LeanScriptsTest, AReleaseAfterARefusedWaitingAttemptStillPublishesAndWakesTheWaiter) {
    auto holder = client();
    auto waiter = client();
    const auto r = resource("contended");
    auto held = holder.try_acquire(r, {.lease = 60s});
    ASSERT_TRUE(held && held->acquired());
    ASSERT_EQ(redis->cli({"HGET", "lock:{contended}", "waiting"}), "0") << "granted with nobody waiting";

    auto waiting = std::async(std::launch::async,
                              [&] { return waiter.acquire(r, {.lease = 10s, .wait = 120s, .backoff = sleepy}); });
    // Subscribed, and the attempt sent after the confirmation is in (two refused attempts).
    ASSERT_TRUE(eventually([&] {
        const std::string n = redis->cli({"PUBSUB", "SHARDNUMSUB", "released:{contended}"});
        return n.ends_with("\n1") && script_calls() == 3;
    }));
    EXPECT_EQ(redis->cli({"HGET", "lock:{contended}", "waiting"}), "1") << "the refused attempt left no mark";
    redis->cli({"CONFIG", "RESETSTAT"});
    ASSERT_TRUE(holder.release(r, held->lease->owner));
    EXPECT_EQ(calls().at("spublish"), 1);

    // Far below the minute the waiter's own timers would take: only the message can wake it.
    ASSERT_EQ(waiting.wait_for(30s), std::future_status::ready) << "the release did not wake the waiter";
    auto got = waiting.get();
    ASSERT_TRUE(got && got->acquired());
    // The release granted it the lease directly (a plain acquire() that hears the messages opts
    // in), and it renewed the grant to the lease it asked for: no third attempt.
    EXPECT_EQ(got->attempts, 2u);
    EXPECT_GT(got->lease->ttl, 9s);
}

// The script's contract, called as the client calls it: only a lease marked '0' skips the
// message; local waiters (ARGV[9]), a line at the grant, or a lease an older acquire wrote
// (no mark) keep it.
TEST_F(LeanScriptsTest, OnlyALeaseNobodyWaitsForSkipsTheMessage) {
    const auto publishes = [&] { return calls().count("spublish") ? calls().at("spublish") : 0L; };
    const auto cycle = [&](const std::string& r, const std::string& local, bool strip_mark) {
        redis->cli({"CONFIG", "RESETSTAT"});
        EXPECT_EQ(eval_acquire(r, "o1", local).substr(0, 1), "1");
        if (strip_mark) redis->cli({"HDEL", "lock:{" + r + "}", "waiting"});
        EXPECT_EQ(eval_release(r, "o1"), "1");
        return publishes();
    };
    EXPECT_EQ(cycle("alone", "0", false), 0);
    EXPECT_EQ(cycle("local", "1", false), 1) << "the grantee's client has waiters: they must hear the release";
    EXPECT_EQ(cycle("older", "0", true), 1) << "a lease without the mark takes the full path";

    // A place in the line when the lock is granted marks the lease, whoever waits.
    redis->cli({"ZADD", "sleepers:{line}", "1", "sleeper"});
    redis->cli({"HSET", "waiter-deadlines:{line}", "sleeper", server_ms_ahead(std::chrono::minutes(10))});
    EXPECT_EQ(cycle("line", "0", false), 1);
    EXPECT_EQ(redis->cli({"ZCARD", "sleepers:{line}"}), "1") << "the sleeper lost its place";
}

TEST_F(LeanScriptsTest, ABadLocalWaitersArgumentIsRefusedWithNothingWritten) {
    const std::string before = redis->snapshot();
    EXPECT_NE(eval_acquire("bad", "o1", "yes").find("argument 7"), std::string::npos);
    EXPECT_EQ(redis->snapshot(), before);
}

// A refused single attempt (try_acquire) waits for nothing, so it leaves no mark.
TEST_F(LeanScriptsTest, ARefusedSingleAttemptLeavesTheLeaseLean) {
    auto c = client();
    const auto r = resource("single");
    auto held = c.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(held && held->acquired());
    auto refused = c.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(refused && !refused->acquired());
    EXPECT_EQ(redis->cli({"HGET", "lock:{single}", "waiting"}), "0");
    EXPECT_EQ(redis->cli({"EXISTS", "sleepers:{single}", "waiters:{single}"}), "0");
}

}  // namespace
}  // namespace fencelock::test_support

// Waiting for a held lock: release messages wake waiters (no blind polling), the fair mode's
// line in Redis, and the fallbacks when messages cannot arrive.
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "integration/lock_fixture.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

// Backoff so long that a waiter relying on it would not wake within any test's patience.
constexpr BackoffPolicy sleepy{.base = 60s, .max = 60s};

class HandoffTest : public LockTest {
protected:
    std::string channel(std::string_view r) { return "released:{" + std::string(r) + "}"; }
    long subscribers(std::string_view r) {
        const std::string out = redis->cli({"PUBSUB", "SHARDNUMSUB", channel(r)});
        return std::stol(out.substr(out.find('\n') + 1));
    }
    long places(std::string_view r) { return std::stol(redis->cli({"ZCARD", "waiters:{" + std::string(r) + "}"})); }
    long sleepers(std::string_view r) { return std::stol(redis->cli({"ZCARD", "sleepers:{" + std::string(r) + "}"})); }

    struct Turns {
        std::vector<int> order;          // waiters in the order they got the lock
        std::vector<unsigned> attempts;  // per waiter
    };
    // Four waiters, each in a client of its own (a process, as far as Redis can tell), queue
    // up behind a holder one by one (the next starts once `settled(i)` holds for waiter i);
    // then the holder releases and each waiter takes the lock and releases it in turn.
    Turns take_turns(std::string_view name, const AcquireOptions& o, const std::function<bool(int)>& settled) {
        constexpr int waiters = 4;
        const auto r = resource(name);
        auto holder_client = client();
        const auto held = hold_for_a_minute(holder_client, r);
        EXPECT_TRUE(held);
        if (!held) return {};
        std::vector<LockClient> clients;
        for (int i = 0; i < waiters; ++i) clients.push_back(client());
        std::mutex m;
        Turns turns{{}, std::vector<unsigned>(waiters)};
        std::vector<std::jthread> threads;
        for (int i = 0; i < waiters; ++i) {
            threads.emplace_back([&, i] {
                auto got = clients[i].acquire(r, o);
                ASSERT_TRUE(got && got->acquired());
                {
                    std::lock_guard lock(m);
                    turns.order.push_back(i);
                    turns.attempts[i] = got->attempts;
                }
                ASSERT_TRUE(clients[i].release(r, got->lease->owner));
            });
            EXPECT_TRUE(eventually([&] { return settled(i); })) << "waiter " << i << " never settled";
        }
        EXPECT_TRUE(holder_client.release(r, held->owner));
        threads.clear();  // joined before `turns` is read
        return turns;
    }
    std::int64_t redis_ms() {
        const std::string t = redis->cli({"TIME"});
        const auto nl = t.find('\n');
        return std::stoll(t.substr(0, nl)) * 1000 + std::stoll(t.substr(nl + 1)) / 1000;
    }
    // An acquire() on another thread, waiting for `r`.
    std::future<Result<Acquisition>> start_waiting(LockClient& c, const ResourceName& r, AcquireOptions o) {
        return std::async(std::launch::async, [&c, r, o] { return c.acquire(r, o); });
    }

    // A place in the fair line for an owner that never comes back (a crashed waiter).
    void ghost_place(std::string_view r, const std::string& owner, std::int64_t lapses_at_ms) {
        const std::string tag = "{" + std::string(r) + "}";
        redis->cli({"ZADD", "waiters:" + tag, "1", owner});
        redis->cli({"HSET", "waiter-deadlines:" + tag, owner, std::to_string(lapses_at_ms)});
    }
};

TEST_F(HandoffTest, ReleaseWakesAWaiterWhoseBackoffWouldSleepForAMinute) {
    auto holder_client = client();
    auto waiter_client = client();
    const auto r = resource("order:1");
    const auto held = hold_for_a_minute(holder_client, r);
    ASSERT_TRUE(held);

    auto waiting = start_waiting(waiter_client, r, {.lease = 10s, .wait = 120s, .backoff = sleepy});
    // Subscribed, and the attempt sent after the confirmation is in: from here no release
    // can go unseen, and the waiter's count of attempts is fixed.
    ASSERT_TRUE(eventually([&] { return subscribers("order:1") == 1 && script_calls() == 3; }));
    ASSERT_TRUE(holder_client.release(r, held->owner));

    // Far below the 60 s the waiter's own timers would take: only the message can wake it.
    ASSERT_EQ(waiting.wait_for(30s), std::future_status::ready) << "the release did not wake the waiter";
    auto got = waiting.get();
    ASSERT_TRUE(got && got->acquired());
    EXPECT_GT(got->lease->fence, held->fence);
    // One refused attempt, one more right after subscribing (its place, opting in to direct
    // grants), and no third: the release granted it the lease and the message said so; its
    // grant, bounded by its place, was renewed to the 10 s it asked (docs/DESIGN.md, "Direct
    // handoff").
    EXPECT_EQ(got->attempts, 2u);
    EXPECT_GT(got->lease->ttl, 9s);
    EXPECT_TRUE(eventually([&] { return subscribers("order:1") == 0; })) << "the waiter left its channel subscribed";
}

TEST_F(HandoffTest, ThreadsOfOneClientTakeTurnsWithoutARetryStorm) {
    auto shared = client();
    const auto r = resource("hot");
    constexpr int threads = 8, rounds = 25;
    std::mutex m;
    std::vector<std::uint64_t> fences;
    unsigned attempts = 0;
    std::atomic<int> inside{0}, overlaps{0};
    {
        std::vector<std::jthread> workers;
        for (int t = 0; t < threads; ++t)
            workers.emplace_back([&] {
                for (int i = 0; i < rounds; ++i) {
                    auto got = shared.acquire(r, {.lease = 10s, .wait = 60s, .backoff = sleepy});
                    ASSERT_TRUE(got && got->acquired());
                    if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
                    {
                        std::lock_guard lock(m);
                        fences.push_back(got->lease->fence.value());
                        attempts += got->attempts;
                    }
                    inside.fetch_sub(1);
                    ASSERT_TRUE(shared.release(r, got->lease->owner));
                }
            });
    }
    ASSERT_EQ(fences.size(), static_cast<std::size_t>(threads * rounds));
    EXPECT_EQ(overlaps.load(), 0);
    std::sort(fences.begin(), fences.end());
    EXPECT_EQ(std::adjacent_find(fences.begin(), fences.end()), fences.end()) << "a fence was issued twice";
    // With a minute of backoff, every handoff came from a release message. Refused attempts
    // happen only when a thread finds no line to join (two before it subscribes).
    const unsigned failed = attempts - static_cast<unsigned>(fences.size());
    EXPECT_LE(failed, fences.size() / 4) << failed << " refused attempts for " << fences.size() << " grants";
}

// Each client stands for a process of its own: every release names the next fair waiter, so
// only that one wakes (no herd across clients) and the others never try in vain.
TEST_F(HandoffTest, FairWaitersGetTheLockInArrivalOrderAndOnlyTheNextOneWakes) {
    const auto turns = take_turns("fifo", {.lease = 10s, .wait = 90s, .backoff = sleepy, .fair = true},
                                  [&](int i) { return places("fifo") == i + 1; });
    EXPECT_EQ(turns.order, (std::vector<int>{0, 1, 2, 3}));
    // A fair waiter subscribes before its first attempt: refused when taking its place, then
    // granted the lease by the release naming it (a direct grant, no attempt). With a minute of
    // backoff nothing else made it try.
    EXPECT_EQ(turns.attempts, (std::vector<unsigned>{1, 1, 1, 1}));
    EXPECT_EQ(places("fifo"), 0);
}

// Clients stand for processes. Without fair mode too, each release names one waiter (the
// longest sleeping), so waiters in other processes stay asleep instead of all trying at once.
TEST_F(HandoffTest, EachReleaseWakesOneWaiterAcrossClients) {
    // Refused twice (the second attempt watched): asleep until a release names it.
    const auto turns = take_turns("herd", {.lease = 10s, .wait = 90s, .backoff = sleepy},
                                  [&](int i) { return script_calls() == 1 + 2 * (i + 1); });
    // Two refusals, then the release's direct grant: no waiter ever tried for a release that
    // named another.
    EXPECT_EQ(turns.attempts, (std::vector<unsigned>{2, 2, 2, 2}));
    EXPECT_EQ(turns.order, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(sleepers("herd"), 0);
}

TEST_F(HandoffTest, NoAcquisitionOvertakesALiveFairWaiter) {
    auto c = client();
    const auto r = resource("queued");
    const auto ghost = OwnerToken::generate();
    ghost_place("queued", ghost.str(), redis_ms() + 60'000);

    auto barging = c.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(barging);
    EXPECT_FALSE(barging->acquired()) << "the lock is free, but a fair waiter is first";
    EXPECT_GT(barging->holder_ttl, 50s) << "the refusal says when the waiter's place lapses";

    auto turn = c.try_acquire(r, ghost, {.lease = 10s, .fair = true});
    ASSERT_TRUE(turn && turn->acquired());
    EXPECT_EQ(places("queued"), 0);
}

TEST_F(HandoffTest, ACrashedFairWaitersPlaceLapses) {
    auto c = client();
    const auto r = resource("lapsed");
    const auto ghost = OwnerToken::generate();
    ghost_place("lapsed", ghost.str(),
                redis_ms() + 2000);  // long enough to be live at the first try on a loaded machine
    auto first = c.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(first);
    ASSERT_FALSE(first->acquired());
    ASSERT_TRUE(eventually([&] {
        auto again = c.try_acquire(r, {.lease = 10s});
        return again && again->acquired();
    })) << "a dead waiter's place blocked the lock for good";
    EXPECT_EQ(places("lapsed"), 0);
}

TEST_F(HandoffTest, AFairWaiterThatGivesUpLeavesTheLine) {
    auto holder_client = client();
    auto waiter_client = client();
    const auto r = resource("impatient");
    const auto held = hold_for_a_minute(holder_client, r);
    ASSERT_TRUE(held);
    auto gave_up = waiter_client.acquire(r, {.lease = 10s, .wait = 200ms, .fair = true});
    ASSERT_TRUE(gave_up);
    EXPECT_FALSE(gave_up->acquired());
    EXPECT_EQ(places("impatient"), 0);
}

TEST_F(HandoffTest, WithoutNotificationsWaitersPoll) {
    auto holder_client = client();
    auto waiter_client = client({.release_notifications = false});
    const auto r = resource("polled");
    const auto held = hold_for_a_minute(holder_client, r);
    ASSERT_TRUE(held);
    auto waiting = start_waiting(waiter_client, r, {.lease = 10s, .wait = 60s, .backoff = {.base = 5ms, .max = 20ms}});
    ASSERT_TRUE(eventually([&] { return script_calls() >= 3; })) << "the waiter never polled";
    EXPECT_EQ(subscribers("polled"), 0);
    ASSERT_TRUE(holder_client.release(r, held->owner));
    auto got = waiting.get();
    ASSERT_TRUE(got && got->acquired());
    EXPECT_EQ(subscribers("polled"), 0);
}

TEST_F(HandoffTest, ALostSubscriptionFallsBackToPollingAndResubscribes) {
    auto holder_client = client();
    auto waiter_client = client();
    const auto r = resource("cut");
    const auto held = hold_for_a_minute(holder_client, r);
    ASSERT_TRUE(held);
    auto waiting = start_waiting(waiter_client, r, {.lease = 10s, .wait = 120s, .backoff = sleepy});
    ASSERT_TRUE(eventually([&] { return subscribers("cut") == 1; }));
    redis->cli({"CLIENT", "KILL", "TYPE", "pubsub"});
    // The subscriber reconnects and subscribes again while the waiter sleeps.
    ASSERT_TRUE(eventually([&] { return subscribers("cut") == 1; }));
    ASSERT_TRUE(holder_client.release(r, held->owner));
    // With a minute of backoff only the renewed subscription's message can wake it this soon.
    ASSERT_EQ(waiting.wait_for(30s), std::future_status::ready) << "the release after the reconnect went unseen";
    auto got = waiting.get();
    ASSERT_TRUE(got && got->acquired());
}

TEST_F(HandoffTest, AnAclUserWithoutChannelsStillReleasesAndWaitsByPolling) {
    redis->cli({"ACL", "SETUSER", "nochan", "on", ">nochan-pw", "~*", "resetchannels", "+@all"});
    auto options = [&] {
        ClientOptions o;
        o.endpoint = *parse_redis_url("redis://nochan:nochan-pw@127.0.0.1:" + std::to_string(redis->port()));
        return o;
    };
    auto holder_client = LockClient::create(options()).value();
    auto waiter_client = LockClient::create(options()).value();
    const auto r = resource("acl");
    const auto held = hold_for_a_minute(holder_client, r);
    ASSERT_TRUE(held);
    auto waiting = start_waiting(waiter_client, r, {.lease = 10s, .wait = 60s, .backoff = {.base = 5ms, .max = 20ms}});
    // The waiter was refused twice: its subscription was refused (NOPERM) and it polls.
    ASSERT_TRUE(eventually([&] { return script_calls() >= 3; }));
    auto released = holder_client.release(r, held->owner);
    ASSERT_TRUE(released) << released.error().message();
    EXPECT_EQ(*released, ReleaseStatus::released);
    auto got = waiting.get();
    ASSERT_TRUE(got && got->acquired());
    EXPECT_EQ(subscribers("acl"), 0);
}

}  // namespace
}  // namespace fencelock::test_support

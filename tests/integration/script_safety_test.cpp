// What the scripts guarantee whatever they are sent: fences exact below 2^53, holding bounded
// by the max hold whatever lease a renewal asks for, every argument checked before anything
// is written, a failed acquire that changes nothing, and one live-waiter rule for every script
// that names a waiter. Against a real redis-server; each test compares Redis snapshots or
// the values Redis holds, not only the replies.
#include <string>
#include <vector>

#include "coordinator/redis/scripts.hpp"
#include "fencelock/admin.hpp"
#include "integration/lock_fixture.hpp"
#include "support/raw_redis.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

class ScriptSafetyTest : public LockTest {
protected:
    /// Runs the acquire script by EVAL with `args` as ARGV (what a buggy or hostile client
    /// could send), returning redis-cli's output.
    std::string eval_acquire(std::string_view r, const std::vector<std::string>& args) {
        const std::string tag = "{" + std::string(r) + "}";
        std::vector<std::string> argv{"EVAL",
                                      std::string(detail::scripts::acquire.body),
                                      "6",
                                      "lock:" + tag,
                                      "fence:" + tag,
                                      "waiters:" + tag,
                                      "waiter-deadlines:" + tag,
                                      "sleepers:" + tag,
                                      "handoff:" + tag};
        argv.insert(argv.end(), args.begin(), args.end());
        return redis->cli(argv);
    }
};

TEST_F(ScriptSafetyTest, FencesReach2To53Minus1ExactlyAndThenFailWithNothingChanged) {
    auto c = client();
    const auto r = resource("top");
    redis->cli({"SET", "fence:{top}", "9007199254740989"});  // 2^53 - 3: ahead of the clock
    auto a = c.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(a && a->acquired());
    ASSERT_TRUE(c.release(r, a->lease->owner));
    auto b = c.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(b && b->acquired());
    EXPECT_EQ(a->lease->fence.value(), 9007199254740990u);
    EXPECT_EQ(b->lease->fence.value(), 9007199254740991u);
    EXPECT_EQ(b->lease->fence.value(), max_fence);
    EXPECT_EQ(redis->cli({"GET", "fence:{top}"}), "9007199254740991");
    auto renewed = c.renew(r, b->lease->owner, 10s);
    ASSERT_TRUE(renewed && renewed->fence);
    EXPECT_EQ(*renewed->fence, b->lease->fence);
    ASSERT_TRUE(c.release(r, b->lease->owner));

    const std::string before = redis->snapshot();
    auto exhausted = c.try_acquire(r, {.lease = 10s});
    ASSERT_FALSE(exhausted.has_value()) << "a counter at 2^53 - 1 has no next fence";
    EXPECT_EQ(exhausted.error(), make_error_code(errc::fence_exhausted)) << "used up, not damaged";
    EXPECT_EQ(classify(exhausted.error()), failure_kind::fatal);
    EXPECT_EQ(redis->snapshot(), before);
}

TEST_F(ScriptSafetyTest, CountersPast2To53AreRefusedWithNothingChanged) {
    auto c = client();
    const auto r = resource("big");
    // 2^53 + 1 (not a double), and what the earlier design allowed up to 2^63 - 1.
    for (const char* value : {"9007199254740993", "9223372036854775806"}) {
        redis->cli({"SET", "fence:{big}", value});
        const std::string before = redis->snapshot();
        auto got = c.try_acquire(r, {.lease = 10s});
        ASSERT_FALSE(got.has_value()) << "counter " << value << " was advanced";
        EXPECT_EQ(got.error(), make_error_code(errc::corrupt_key)) << value;
        EXPECT_EQ(redis->snapshot(), before) << value;
    }
}

TEST_F(ScriptSafetyTest, CorruptCountersFailWithNothingChanged) {
    auto c = client();
    const auto r = resource("bad");
    for (const char* value : {"abc", "007", "-3", "1.5", "99999999999999999999"}) {
        redis->cli({"SET", "fence:{bad}", value});
        const std::string before = redis->snapshot();
        auto got = c.try_acquire(r, {.lease = 10s});
        ASSERT_FALSE(got.has_value()) << "counter '" << value << "' was accepted";
        EXPECT_EQ(got.error(), make_error_code(errc::corrupt_key)) << value;
        EXPECT_EQ(redis->snapshot(), before) << value;
    }
}

TEST_F(ScriptSafetyTest, ARenewalAskingForAnyLeaseNeverOutlivesMaxHoldPlusTheGrantedLease) {
    auto c = client();
    const auto r = resource("hold");
    auto a = c.try_acquire(r, {.lease = 1s, .max_hold = 2s});
    ASSERT_TRUE(a && a->acquired());
    auto renewed = c.renew(r, a->lease->owner, 20h);
    ASSERT_TRUE(renewed);
    ASSERT_EQ(renewed->status, RenewStatus::renewed);
    // acquired + max_hold + lease = 3 s from acquisition at the latest.
    EXPECT_LE(renewed->ttl, 3s);
    EXPECT_GT(renewed->ttl, 1s);
    EXPECT_LE(std::stoll(redis->cli({"PTTL", "lock:{hold}"})), 3000);
}

// Arguments a client must never send, sent anyway: each is refused before any write, so no
// lock without a TTL (or with a field like '1e+17') can ever exist.
TEST_F(ScriptSafetyTest, OutOfRangeArgumentsAreRefusedBeforeAnyWrite) {
    const std::vector<std::vector<std::string>> bad = {
        {"100000000000000000", "100000000000000000"},  // 1e17 ms once left a lock without TTL
        {"1e5", "100000"},
        {"-5", "100"},
        {"0", "100"},
        {"", "100"},
        {"86400001", "86400001"},  // lease past limits::lease
        {"1000", "999"},           // max hold shorter than the lease
        {"1000", "2592000001"},    // max hold past limits::max_hold
        {"1000", "100000000000000000"},
    };
    const std::string before = redis->snapshot();
    for (const auto& lease_and_hold : bad) {
        const std::string out =
            eval_acquire("x", {"owner-1", lease_and_hold[0], lease_and_hold[1], "1 h ", "1", "3000"});
        EXPECT_NE(out.find("ERR fencelock: argument"), std::string::npos) << lease_and_hold[0] << ": " << out;
    }
    // An owner a grant message could not carry ('grant <owner> <fence> <ttl>').
    for (const std::string& owner : {std::string(), std::string("two words"), std::string("tab\there")}) {
        const std::string out = eval_acquire("x", {owner, "1000", "2000", "1 h ", "1", "3000"});
        EXPECT_NE(out.find("ERR fencelock: argument 1"), std::string::npos) << "'" << owner << "': " << out;
    }
    for (const auto& [mode, slot] :
         std::vector<std::pair<std::string, std::string>>{{"7", "3000"}, {"1", "0"}, {"1", "9999999999"}}) {
        const std::string out = eval_acquire("x", {"owner-1", "1000", "2000", "1 h ", mode, slot});
        EXPECT_NE(out.find("ERR fencelock: argument"), std::string::npos) << mode << "/" << slot << ": " << out;
    }
    EXPECT_EQ(redis->snapshot(), before);
    // The same bounds hold on a lock that is held: nothing is touched either. (A lease long
    // enough not to lapse between the two snapshots on a loaded machine.)
    ASSERT_NE(eval_acquire("x", {"owner-1", "60000", "120000", "1 h ", "0", "3000"}).find("1"), std::string::npos);
    const std::string held = redis->snapshot();
    const std::string tag = "{x}";
    const std::string out = redis->cli(
        {"EVAL", std::string(detail::scripts::renew.body), "1", "lock:" + tag, "owner-1", "100000000000000000"});
    EXPECT_NE(out.find("ERR fencelock: argument"), std::string::npos) << out;
    EXPECT_EQ(redis->snapshot(), held);
}

TEST_F(ScriptSafetyTest, AFailedAcquireKeepsTheFairHeadsPlace) {
    auto c = client();
    const auto r = resource("line");
    // The lock is free and the waiter is first in the fair line, so acquire grants to it; the
    // counter is corrupt, so the grant fails.
    const auto waiter = OwnerToken::generate();
    redis->cli({"ZADD", "waiters:{line}", "1", waiter.str()});
    redis->cli({"HSET", "waiter-deadlines:{line}", waiter.str(), server_ms_ahead(10min)});
    redis->cli({"SET", "fence:{line}", "not-a-number"});

    const std::string before = redis->snapshot();
    auto failed = c.try_acquire(r, waiter, {.lease = 10s});
    ASSERT_FALSE(failed.has_value());
    EXPECT_EQ(redis->snapshot(), before) << "the head's place must survive a failed acquire";
    EXPECT_EQ(redis->cli({"ZSCORE", "waiters:{line}", waiter.str()}), "1");
}

// A line key of the wrong type fails every script before its first write (it used to burn a
// fence with no lease, leave a place without a deadline, or release and then fail).
TEST_F(ScriptSafetyTest, ALineKeyOfTheWrongTypeFailsEveryScriptWithNothingChanged) {
    for (const char* corrupt : {"waiters:{w}", "waiter-deadlines:{w}", "sleepers:{w}"}) {
        SCOPED_TRACE(corrupt);
        redis->cli({"FLUSHALL"});
        redis->cli({"SET", corrupt, "x"});
        std::string before = redis->snapshot();
        for (const char* mode : {"0", "1", "2"}) {
            const std::string out = eval_acquire("w", {"owner-1", "1000", "2000", "1 h ", mode, "3000"});
            EXPECT_NE(out.find("WRONGTYPE"), std::string::npos) << "mode " << mode << ": " << out;
            EXPECT_EQ(redis->snapshot(), before) << "mode " << mode;
        }
        // Held by another owner: a waiting attempt must not take half a place.
        redis->cli({"HSET", "lock:{w}", "owner", "holder", "fence", "1"});
        redis->cli({"PEXPIRE", "lock:{w}", "60000"});
        before = redis->snapshot();
        for (const char* mode : {"1", "2"}) {
            const std::string out = eval_acquire("w", {"owner-2", "1000", "2000", "1 h ", mode, "3000"});
            EXPECT_NE(out.find("WRONGTYPE"), std::string::npos) << "held, mode " << mode << ": " << out;
            EXPECT_EQ(redis->snapshot(), before) << "held, mode " << mode;
        }
        const std::string released =
            redis->cli({"EVAL", std::string(detail::scripts::release.body), "6", "lock:{w}", "waiters:{w}",
                        "waiter-deadlines:{w}", "sleepers:{w}", "fence:{w}", "handoff:{w}", "holder", "released:{w}"});
        if (std::string(corrupt) != "waiter-deadlines:{w}") {  // release reads the deadlines only with waiters
            EXPECT_NE(released.find("WRONGTYPE"), std::string::npos) << released;
            EXPECT_EQ(redis->snapshot(), before) << "release deleted the lock, then failed";
        }
        const std::string left = redis->cli({"EVAL", std::string(detail::scripts::leave_line.body), "6", "waiters:{w}",
                                             "waiter-deadlines:{w}", "lock:{w}", "sleepers:{w}", "fence:{w}",
                                             "handoff:{w}", "owner-2", "released:{w}"});
        EXPECT_NE(left.find("WRONGTYPE"), std::string::npos) << left;
    }
}

// A place whose deadline is not a number (damaged data, not a wrong type) used to fail release
// after its DEL: the lock was gone and the caller was told corrupt_key (exit 4). The place now
// counts as lapsed and goes; the release succeeds.
TEST_F(ScriptSafetyTest, AReleaseWithADamagedPlaceInTheLineSucceedsAndDropsThePlace) {
    auto c = client();
    const auto r = resource("damaged");
    auto held = c.try_acquire(r, {.lease = 60s});
    ASSERT_TRUE(held && held->acquired());
    redis->cli({"HSET", "lock:{damaged}", "waiting", "1"});
    redis->cli({"ZADD", "waiters:{damaged}", "1", "broken-waiter"});
    redis->cli({"HSET", "waiter-deadlines:{damaged}", "broken-waiter", "not-a-number"});
    auto released = c.release(r, held->lease->owner);
    ASSERT_TRUE(released) << released.error().message() << ": release failed after deleting the lock";
    EXPECT_EQ(*released, ReleaseStatus::released);
    EXPECT_EQ(redis->cli({"EXISTS", "lock:{damaged}"}), "0");
    EXPECT_EQ(redis->cli({"ZCARD", "waiters:{damaged}"}), "0") << "the damaged place stays";
    auto again = c.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(again && again->acquired()) << "the lock is not usable after the damaged place";
    EXPECT_GT(again->lease->fence, held->lease->fence);
}

// A place whose deadline Lua reads as a number but no place can have (a fraction, 'inf', a
// year away) is damaged like one that is no number: dropped. Before, a fraction reached the
// direct grant's PEXPIRE, which failed after the lease hash was written: the waiter then held
// the lock with no TTL, for good if it had died.
TEST_F(ScriptSafetyTest, APlaceWithAFractionalOrEndlessDeadlineIsDroppedNotGrantedForever) {
    auto c = client();
    for (const std::string deadline : {"fraction", "inf", "year"}) {
        const auto r = resource("odd-" + deadline);
        const std::string tag = "{odd-" + deadline + "}";
        auto held = c.try_acquire(r, {.lease = 60s});
        ASSERT_TRUE(held && held->acquired());
        const std::string value = deadline == "fraction" ? server_ms_ahead(10s) + ".5"
                                  : deadline == "inf"    ? "inf"
                                                         : server_ms_ahead(std::chrono::hours(24 * 365));
        redis->cli({"HSET", "lock:" + tag, "waiting", "1"});
        redis->cli({"ZADD", "waiters:" + tag, "1", "odd-waiter"});
        redis->cli({"HSET", "waiter-deadlines:" + tag, "odd-waiter", value});
        // Grant arguments as a waiter of another client stores them (lib/handoff.lua).
        redis->cli({"EVAL",
                    "return redis.call('HSET', KEYS[1], 'odd-waiter', cmsgpack.pack({30000, 30000, '1 h l', "
                    "60000, '', true}))",
                    "1", "handoff:" + tag});
        auto released = c.release(r, held->lease->owner);
        ASSERT_TRUE(released) << deadline << ": " << released.error().message();
        EXPECT_NE(redis->cli({"PTTL", "lock:" + tag}), "-1") << deadline << ": a lock without a TTL";
        EXPECT_EQ(redis->cli({"EXISTS", "lock:" + tag}), "0") << deadline << ": granted to a damaged place";
        EXPECT_EQ(redis->cli({"ZCARD", "waiters:" + tag}), "0") << deadline << ": the place stays";
        auto again = c.try_acquire(r, {.lease = 10s});
        EXPECT_TRUE(again && again->acquired()) << deadline << ": the line blocks the lock";
    }
}

// renew checks what it writes and replies before writing: a damaged fence, or an earlier
// version's hash whose end-by has passed, leaves the lease as it was. Before, the fence came
// back as-is after the TTL was set, and a past end-by made PEXPIRE delete the lock and HSET
// recreate it without a TTL.
TEST_F(ScriptSafetyTest, ARenewalOfADamagedLeaseChangesNothing) {
    const auto renew = [&](const std::string& lock) {
        return redis->cli({"EVAL", std::string(detail::scripts::renew.body), "1", lock, "owner-1", "1000"});
    };
    redis->cli({"HSET", "lock:{old}", "owner", "owner-1", "fence", "7", "max_hold_until_ms", "9999999999999",
                "ends_by_ms", "1"});
    redis->cli({"PEXPIRE", "lock:{old}", "60000"});
    redis->cli({"HSET", "lock:{bad-fence}", "owner", "owner-1", "fence", "x", "meta", "1 30000 60000 1 h l"});
    redis->cli({"PEXPIRE", "lock:{bad-fence}", "60000"});
    const std::string before = redis->snapshot();
    const std::string old = renew("lock:{old}");
    EXPECT_EQ(old, "2\n7") << "max hold reached (its end-by passed): nothing to extend";
    const std::string bad = renew("lock:{bad-fence}");
    EXPECT_NE(bad.find("has no valid fence"), std::string::npos) << bad;
    EXPECT_EQ(redis->snapshot(), before);
    EXPECT_NE(redis->cli({"PTTL", "lock:{old}"}), "-1");
}

// force_release writes its audit entry before it deletes: a stream that cannot take one more
// entry (its IDs used up) fails the script with the lock still there. Before, the lock was
// deleted and nothing audited.
TEST_F(ScriptSafetyTest, AForceReleaseThatCannotAuditDeletesNothing) {
    auto c = client();
    LockAdmin admin(c);
    const auto r = resource("unaudited");
    ASSERT_TRUE(c.try_acquire(r, {.lease = 30s}));
    redis->cli({"XADD", "audit:{unaudited}", "18446744073709551615-18446744073709551615", "f", "v"});
    const std::string before = redis->snapshot();
    auto forced = admin.force_release(r, {.reason = "stuck", .operator_name = "ops@test", .even_if_active = true});
    EXPECT_FALSE(forced) << "released without an audit entry";
    EXPECT_EQ(redis->snapshot(), before);
}

// release and leave_line need their channel: without it no waiter is granted or woken, so the
// scripts refuse before writing (a client always sends it; this is what a buggy one gets).
TEST_F(ScriptSafetyTest, AReleaseWithoutItsChannelIsRefusedBeforeAnyWrite) {
    auto c = client();
    auto held = c.try_acquire(resource("mute"), {.lease = 30s});
    ASSERT_TRUE(held && held->acquired());
    redis->cli({"HSET", "lock:{mute}", "waiting", "1"});
    redis->cli({"ZADD", "waiters:{mute}", "1", "w"});
    const std::string before = redis->snapshot();
    const std::string out = redis->cli({"EVAL", std::string(detail::scripts::release.body), "6", "lock:{mute}",
                                        "waiters:{mute}", "waiter-deadlines:{mute}", "sleepers:{mute}", "fence:{mute}",
                                        "handoff:{mute}", std::string(held->lease->owner.str())});
    EXPECT_NE(out.find("argument 2 must be a non-empty text"), std::string::npos) << out;
    EXPECT_EQ(redis->snapshot(), before);
}

// leave_line names the next waiter by the same rule as release: a lapsed place ahead of a live
// one is dropped, never named (naming it woke nobody and left the lock free until backoff.max).
TEST_F(ScriptSafetyTest, LeaveLineNamesTheFirstLiveWaiterNotALapsedOne) {
    const std::string now_ms = std::to_string(std::stoll(redis->cli({"TIME"}).substr(0, 10)) * 1000);
    const std::string future = std::to_string(std::stoll(now_ms) + 600'000);
    redis->cli({"ZADD", "waiters:{q}", "1", "lapsed", "2", "leaving", "3", "live"});
    redis->cli({"HSET", "waiter-deadlines:{q}", "lapsed", "1000", "leaving", future, "live", future});

    RawRedis subscriber(redis->port());
    subscriber.send({"SSUBSCRIBE", "released:{q}"});
    std::vector<std::string> confirmation;
    for (int i = 0; i < 6; ++i) confirmation.push_back(subscriber.read_line(5s).value_or("(none)"));
    ASSERT_EQ(confirmation.back(), ":1") << "not subscribed";

    const std::string out =
        redis->cli({"EVAL", std::string(detail::scripts::leave_line.body), "6", "waiters:{q}", "waiter-deadlines:{q}",
                    "lock:{q}", "sleepers:{q}", "fence:{q}", "handoff:{q}", "leaving", "released:{q}"});
    ASSERT_EQ(out, "1");
    std::vector<std::string> message;
    for (int i = 0; i < 7; ++i) message.push_back(subscriber.read_line(5s).value_or("(none)"));
    EXPECT_EQ(message[2], "smessage");
    EXPECT_EQ(message.back(), "live");
    EXPECT_EQ(redis->cli({"ZRANGE", "waiters:{q}", "0", "-1"}), "live") << "the lapsed place is dropped";
}

}  // namespace
}  // namespace fencelock::test_support

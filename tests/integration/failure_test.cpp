// Fail closed: an unreachable, paused, restarted or password-protected Redis, and corrupted
// keys. In every case acquisition returns an error, never "acquired", and creates no lease.
#include "integration/lock_fixture.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using local::RedisServer;

TEST_F(LockTest, StoppedRedisFailsClosedAndTheSameClientRecoversAfterRestart) {
    auto c = client({.connect_timeout = 200ms, .command_timeout = 200ms});
    const auto r = resource("order:1");
    auto before = c.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(before && before->acquired());

    redis->kill();
    const auto t0 = steady::now();
    auto down = c.acquire(r, {.lease = 10s, .wait = 300ms});
    ASSERT_FALSE(down.has_value()) << "acquire must not succeed without Redis";
    EXPECT_NE(classify(down.error()), failure_kind::fatal) << down.error().message();
    EXPECT_LT(steady::now() - t0, 5s) << "a down Redis must not hang the caller";
    auto renew = c.renew(r, before->lease->owner, 10s);
    ASSERT_FALSE(renew.has_value());
    EXPECT_FALSE(c.inspect(r).has_value());

    redis->start();  // empty dataset: no persistence
    auto after = c.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(after) << after.error().message();
    EXPECT_TRUE(after->acquired());
}

TEST_F(LockTest, PausedRedisTimesOutWithAnUnknownOutcome) {
    auto c = client({.connect_timeout = 200ms, .command_timeout = 200ms});
    const auto r = resource("order:2");
    ASSERT_TRUE(c.inspect(r));  // connected before the pause
    redis->pause();
    auto paused = c.try_acquire(r, {.lease = 10s});
    redis->resume();
    ASSERT_FALSE(paused.has_value());
    EXPECT_EQ(paused.error(), errc::reply_timeout);
    EXPECT_EQ(classify(paused.error()), failure_kind::outcome_unknown);

    // The paused command may have run once Redis resumed; whatever happened, the connection was
    // replaced and the next call gets a clean answer.
    auto next = c.inspect(r);
    ASSERT_TRUE(next) << next.error().message();
}

TEST_F(LockTest, LostAcquireReplyIsRecoveredBySameOwnerRetryWithOneFence) {
    auto c = client({.connect_timeout = 200ms, .command_timeout = 200ms});
    const auto r = resource("order:3");
    const auto owner = OwnerToken::generate();
    ASSERT_TRUE(c.inspect(r));
    redis->pause();  // the acquire is delivered but its reply cannot come back in time
    auto lost = c.try_acquire(r, owner, {.lease = 30s});
    redis->resume();
    ASSERT_FALSE(lost.has_value());
    ASSERT_EQ(classify(lost.error()), failure_kind::outcome_unknown);

    // Whether or not Redis ran the lost request, retrying with the same token ends with this
    // owner holding the lease and exactly one fence issued.
    auto retry = c.try_acquire(r, owner, {.lease = 30s});
    ASSERT_TRUE(retry) << retry.error().message();
    ASSERT_TRUE(retry->acquired());
    // One fence: the counter is the fence the retry holds (a second issue would have moved it).
    EXPECT_EQ(redis->cli({"GET", "fence:{order:3}"}), std::to_string(retry->lease->fence.value()));
}

class AuthTest : public LockTest {
protected:
    void SetUp() override {
        redis = std::make_unique<RedisServer>(std::vector<std::string>{"--requirepass", "s3cret-pw"});
        redis->cli({"-a", "s3cret-pw", "ACL", "SETUSER", "alice", "on", ">alice-pw", "~*", "&*", "+@all"});
    }
    Result<Acquisition> acquire_with(std::string user, std::string password) {
        auto ep = *parse_redis_url(redis->url());
        ep.user = std::move(user);
        ep.password = std::move(password);
        auto c = LockClient::create({.endpoint = ep});
        return c->try_acquire(resource("secure"), {.lease = 10s});
    }
    std::string lock_exists() { return redis->cli({"-a", "s3cret-pw", "EXISTS", "lock:{secure}"}); }
};

TEST_F(AuthTest, RightPasswordWorks) {
    auto got = acquire_with("", "s3cret-pw");
    ASSERT_TRUE(got) << got.error().message();
    EXPECT_TRUE(got->acquired());
}

TEST_F(AuthTest, AclUserWorks) {
    auto got = acquire_with("alice", "alice-pw");
    ASSERT_TRUE(got) << got.error().message();
    EXPECT_TRUE(got->acquired());
}

TEST_F(AuthTest, WrongOrMissingCredentialsFailClosed) {
    for (auto [user, password] : std::vector<std::pair<std::string, std::string>>{
             {"", "wrong"}, {"alice", "wrong"}, {"mallory", "alice-pw"}, {"", ""}}) {
        SCOPED_TRACE("user '" + user + "' password '" + password + "'");
        auto got = acquire_with(user, password);
        ASSERT_FALSE(got.has_value()) << "user '" << user << "'";
        EXPECT_EQ(got.error(), errc::auth_failed);
        EXPECT_EQ(classify(got.error()), failure_kind::fatal);
        EXPECT_EQ(got.error().message().find(password.empty() ? "\x01" : password), std::string::npos);
        EXPECT_EQ(lock_exists(), "0");
    }
}

TEST_F(LockTest, NonNumericCounterIsAnErrorAndCreatesNoLease) {
    auto c = client();
    redis->cli({"SET", "fence:{bad}", "not-a-number"});
    auto got = c.try_acquire(resource("bad"), {.lease = 10s});
    ASSERT_FALSE(got.has_value());
    EXPECT_EQ(got.error(), errc::corrupt_key);
    EXPECT_EQ(classify(got.error()), failure_kind::fatal);
    EXPECT_EQ(redis->cli({"EXISTS", "lock:{bad}"}), "0");
    EXPECT_EQ(redis->cli({"GET", "fence:{bad}"}), "not-a-number");
}

TEST_F(LockTest, CounterOfTheWrongTypeIsAnErrorAndCreatesNoLease) {
    auto c = client();
    redis->cli({"RPUSH", "fence:{list}", "x"});
    auto got = c.try_acquire(resource("list"), {.lease = 10s});
    ASSERT_FALSE(got.has_value());
    EXPECT_EQ(got.error(), errc::corrupt_key);
    EXPECT_EQ(redis->cli({"EXISTS", "lock:{list}"}), "0");
    EXPECT_EQ(redis->cli({"TYPE", "fence:{list}"}), "list");
}

TEST_F(LockTest, LockKeyOfTheWrongTypeIsAnError) {
    auto c = client();
    redis->cli({"SET", "lock:{str}", "someone"});
    auto got = c.try_acquire(resource("str"), {.lease = 10s});
    ASSERT_FALSE(got.has_value());
    EXPECT_EQ(got.error(), errc::corrupt_key);
    EXPECT_EQ(redis->cli({"EXISTS", "fence:{str}"}), "0") << "no fence issued for a failed acquire";
    EXPECT_FALSE(c.inspect(resource("str")).has_value());
}

}  // namespace
}  // namespace fencelock::test_support

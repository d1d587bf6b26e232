// ops/redis/fencelock.acl, the ACL users docs/MANAGED_REDIS.md gives for a Redis whose users
// are ACL users without CONFIG: read from the source tree, so the lines people copy are the
// lines tested. A server loads the file (test passwords in place of its placeholders, which
// Redis refuses as they are), and each role's user does its role's work through the library:
//   - nothing is refused but CONFIG GET, which every connection asks first and then does without
//     (INFO memory tells the eviction policy). ACL LOG shows any other refusal, also those the
//     library survives on purpose: a pcall'd SPUBLISH, a refused SSUBSCRIBE (waiters then poll);
//   - every command a line grants is one its role ran (INFO commandstats), but for those only a
//     Sentinel or Cluster endpoint sends: the lines grant no more than the roles use;
//   - the line with one permission taken away fails the operation that needs it: NOPERM comes
//     back as errc::auth_failed, error_cause "noperm", and a detail naming the command or key.
// The fixture is acl_fixture.hpp; the queue user's tests are acl_queue_test.cpp.
#include <future>

#include "fencelock/admin.hpp"
#include "fencelock/keeper.hpp"
#include "integration/acl_fixture.hpp"
#include "integration/lock_fixture.hpp"
#include "local_servers/child_process.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

// Least privilege in the text itself, and a file that cannot be loaded before its passwords are set.
TEST(AclFile, GrantsNothingWholesaleAndRedisRefusesItsPlaceholderPasswords) {
    const auto users = shipped_users();
    ASSERT_EQ(users.size(), 3u);
    for (const auto& u : users) {
        ASSERT_FALSE(u.rules.empty());
        EXPECT_EQ(u.rules.front(), "reset") << u.name << ": ACL SETUSER on an existing user must give exactly the line";
        EXPECT_EQ(std::ranges::count_if(u.rules, is_placeholder), 1) << u.name;
        for (const auto& r : u.rules) {
            EXPECT_FALSE(r.starts_with("+@") || r == "~*" || r == "&*" || r == "allkeys" || r == "allchannels" ||
                         r == "allcommands" || r == "nopass" || r.starts_with(">") || r.starts_with("+config"))
                << u.name << ": " << r;
        }
    }
    const TempDir dir{"fencelock-acl"};
    const auto started =
        local::run_process({"timeout", "10", "redis-server", "--port", std::to_string(local::free_port()), "--bind",
                            "127.0.0.1", "--save", "", "--dir", dir.path().string(), "--aclfile", shipped_file});
    EXPECT_EQ(started.exit_code, 1) << started.out;
    EXPECT_TRUE(started.out.find("password hash must be exactly 64 characters") != std::string::npos) << started.out;
}

// The eviction check at connect with CONFIG refused: INFO memory decides, for each user.
TEST_F(AclTest, EvictionCheckReadsThePolicyFromInfoForEveryUser) {
    for (const auto& u : users) {
        EXPECT_TRUE(has(redis->cli({"ACL", "DRYRUN", u.name, "CONFIG", "GET", "maxmemory-policy"}), "no permissions"));
        auto got = client_as(u.name).inspect(resource("acl:eviction"));
        EXPECT_TRUE(got) << u.name << ": " << (got ? "" : got.error().message() + " " + error_detail(got.error()));
    }
    EXPECT_EQ(unexpected_denials(), "");
    EXPECT_TRUE(denied("command", "toplevel", "config|get")) << "asked first, and refused";

    redis->cli({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"});
    for (const auto& u : users) {
        auto refused = client_as(u.name).inspect(resource("acl:eviction"));
        ASSERT_FALSE(refused) << u.name;
        EXPECT_EQ(refused.error().category(), eviction_category()) << refused.error().message();
        EXPECT_TRUE(has(refused.error().message(), "maxmemory-policy is allkeys-lru")) << refused.error().message();
    }
    redis->cli({"CONFIG", "SET", "maxmemory-policy", "noeviction"});

    // Without INFO as well, nothing tells the policy: refused, fail closed.
    set_rules(locks_user, rules_without(locks_user, "+info"));
    auto blind = client_as(locks_user).inspect(resource("acl:eviction"));
    ASSERT_FALSE(blind);
    EXPECT_TRUE(has(blind.error().message(), "could not learn")) << blind.error().message();
}

// Acquire, keep (keeper renewals and clock probes), wait (woken by the release message), give
// up a place in the fair line, inspect, release, WAIT: as fencelock-locks, in clients of their own.
TEST_F(AclTest, TheLocksUserTakesKeepsWaitsForAndReleasesLocks) {
    reset_stats();
    auto holder = client_as(locks_user, {.clock_probe_interval = 100ms});
    auto waiter = client_as(locks_user);

    auto kept = holder.hold(resource("acl:kept"), {.lease = 300ms});
    ASSERT_TRUE(kept && kept->acquired()) << (kept ? "contended" : error_detail(kept.error()));
    EXPECT_TRUE(eventually([&] { return kept->lease->renewals() >= 1 && calls("client|id") >= 1; }))
        << "renewals " << kept->lease->renewals() << ", clock probes " << calls("client|id");

    // A waiter with a minute of backoff: only the release message can wake it soon.
    const auto r = resource("acl:wait");
    const auto held = hold_for_a_minute(holder, r);
    ASSERT_TRUE(held);
    auto renewed = holder.renew(r, held->owner, 60s);
    ASSERT_TRUE(renewed) << error_detail(renewed.error());
    auto waiting = std::async(std::launch::async, [&] {
        return waiter.acquire(r, {.lease = 5s, .wait = 30s, .backoff = {.base = 60s, .max = 60s}});
    });
    ASSERT_TRUE(eventually(
        [&] { return subscribers("released:{acl:wait}") == 1 && type_of("sleepers:{acl:wait}") == "zset"; }));
    ASSERT_TRUE(holder.release(r, held->owner));
    ASSERT_EQ(waiting.wait_for(10s), std::future_status::ready) << "the release message never woke the waiter";
    auto got = waiting.get();
    ASSERT_TRUE(got && got->acquired()) << (got ? "contended" : error_detail(got.error()));
    auto info = waiter.inspect(r);
    ASSERT_TRUE(info && info->holder);
    ASSERT_TRUE(waiter.release(r, got->lease->owner));
    EXPECT_TRUE(eventually([&] { return subscribers("released:{acl:wait}") == 0; })) << "never unsubscribed";

    // A fair waiter that gives up leaves the line.
    const auto fair = resource("acl:fair");
    const auto blocker = hold_for_a_minute(holder, fair);
    ASSERT_TRUE(blocker);
    auto gave_up = waiter.acquire(fair, {.lease = 5s, .wait = 300ms, .fair = true});
    ASSERT_TRUE(gave_up && !gave_up->acquired()) << (gave_up ? "acquired" : error_detail(gave_up.error()));
    EXPECT_EQ(type_of("waiters:{acl:fair}"), "none");
    ASSERT_TRUE(holder.release(fair, blocker->owner));

    // WAIT runs: with no replica the grant is not replicated (and released), not refused.
    auto unreplicated =
        waiter.try_acquire(resource("acl:wait-replica"), {.lease = 5s, .replicas = 1, .replica_timeout = 10ms});
    ASSERT_FALSE(unreplicated);
    EXPECT_EQ(unreplicated.error(), errc::not_replicated) << error_detail(unreplicated.error());

    ASSERT_TRUE(kept->lease->release());
    EXPECT_EQ(unexpected_denials(), "");
    EXPECT_EQ(granted_unused(locks_user), "");
}

TEST_F(AclTest, TheLocksLineLessAKeyPatternOrEvalshaIsRefusedNamingIt) {
    const auto r = resource("acl:1");
    for (const auto& rule : user(locks_user).rules) {
        if (!rule.starts_with("~")) continue;
        set_rules(locks_user, rules_without(locks_user, rule));
        auto got = client_as(locks_user).try_acquire(r, {.lease = 5s});
        ASSERT_FALSE(got) << "acquired without " << rule;
        // The detail lists the script's keys; the one the pattern no longer covers is among them.
        std::string key = rule.substr(1);
        key.replace(key.find("{*}"), 3, "{acl:1}");
        expect_noperm(got.error(), key);
    }
    set_rules(locks_user, rules_without(locks_user, "+evalsha"));
    auto got = client_as(locks_user).try_acquire(r, {.lease = 5s});
    ASSERT_FALSE(got);
    expect_noperm(got.error(), "'evalsha'");
    EXPECT_EQ(type_of("lock:{acl:1}"), "none");
}

// Redis 7 answers a refusal inside a script with an ERR reply ("The user executing the script
// can't run this command or subcommand" in 7.0, "ACL failure in script" in 7.2), not NOPERM:
// fencelock still calls it auth_failed / noperm; ACL LOG is what names the command.
TEST_F(AclTest, TheLocksLineLessACommandTheScriptRunsFailsTheScript) {
    set_rules(locks_user, rules_without(locks_user, "+exists"));
    auto got = client_as(locks_user).try_acquire(resource("acl:1"), {.lease = 5s});
    ASSERT_FALSE(got) << "acquired without EXISTS";
    EXPECT_EQ(got.error(), errc::auth_failed) << got.error().message() << ": " << error_detail(got.error());
    EXPECT_EQ(error_cause(got.error()), "noperm") << error_detail(got.error());
    EXPECT_TRUE(denied("command", "lua", "exists")) << unexpected_denials();
    EXPECT_EQ(type_of("lock:{acl:1}"), "none");  // EXISTS is the script's first call
}

// Without the channel nothing fails, but SSUBSCRIBE and the release's SPUBLISH are refused and
// waiters poll: ACL LOG says so.
TEST_F(AclTest, TheLocksLineLessTheChannelWaitsByPolling) {
    set_rules(locks_user, rules_without(locks_user, "&released:{*}"));
    auto holder = client_as(locks_user);
    auto waiter = client_as(locks_user);
    const auto r = resource("acl:poll");
    const auto held = hold_for_a_minute(holder, r);
    ASSERT_TRUE(held);
    auto waiting = std::async(std::launch::async, [&] {
        return waiter.acquire(r, {.lease = 5s, .wait = 30s, .backoff = {.base = 5ms, .max = 20ms}});
    });
    ASSERT_TRUE(eventually([&] { return denied("channel", "toplevel", "released:{acl:poll}"); }))
        << unexpected_denials();
    ASSERT_TRUE(eventually([&] { return type_of("sleepers:{acl:poll}") == "zset"; }));
    ASSERT_TRUE(holder.release(r, held->owner));
    auto got = waiting.get();
    ASSERT_TRUE(got && got->acquired()) << (got ? "contended" : error_detail(got.error()));
    EXPECT_TRUE(denied("channel", "lua", "released:{acl:poll}")) << unexpected_denials();
    EXPECT_EQ(subscribers("released:{acl:poll}"), 0);
}

TEST_F(AclTest, TheAdminUserListsInspectsForceReleasesAndReadsTheAudit) {
    auto locks = client_as(locks_user);
    ASSERT_TRUE(hold_for_a_minute(locks, resource("acl:1")));
    const auto stuck = hold_for_a_minute(locks, resource("acl:2"));
    ASSERT_TRUE(stuck);
    reset_stats();

    auto admin_client = client_as(admin_user);
    LockAdmin admin(admin_client);
    auto listed = admin.list_locks("acl:*", 10);
    ASSERT_TRUE(listed) << error_detail(listed.error());
    EXPECT_EQ(listed->size(), 2u);
    auto info = admin_client.inspect(resource("acl:2"));
    ASSERT_TRUE(info && info->holder);
    const ForceReleaseRequest request{.reason = "stuck", .operator_name = "ops@acl-test"};
    auto active = admin.force_release(resource("acl:2"), request);
    ASSERT_TRUE(active) << error_detail(active.error());
    EXPECT_EQ(active->status, ForceReleaseStatus::active);
    auto forced = admin.force_release(resource("acl:2"),
                                      {.reason = "stuck", .operator_name = "ops@acl-test", .even_if_active = true});
    ASSERT_TRUE(forced) << error_detail(forced.error());
    EXPECT_EQ(forced->status, ForceReleaseStatus::released);
    auto never_held = admin.force_release(resource("acl:3"), request);
    ASSERT_TRUE(never_held && never_held->status == ForceReleaseStatus::not_held);
    auto audit = admin.audit_log(std::nullopt, 10);
    ASSERT_TRUE(audit) << error_detail(audit.error());
    ASSERT_EQ(audit->size(), 1u);
    EXPECT_EQ(audit->front().resource, "acl:2");
    auto one = admin.audit_log(resource("acl:2"), 10);
    ASSERT_TRUE(one && one->size() == 1u);

    EXPECT_EQ(unexpected_denials(), "");
    EXPECT_EQ(granted_unused(admin_user), "");
}

TEST_F(AclTest, TheAdminLineLessScanOrAnAuditPatternIsRefusedNamingIt) {
    auto locks = client_as(locks_user);
    ASSERT_TRUE(hold_for_a_minute(locks, resource("acl:1")));
    const ForceReleaseRequest request{.reason = "stuck", .operator_name = "ops@acl-test", .even_if_active = true};

    set_rules(admin_user, rules_without(admin_user, "+scan"));
    auto admin_client = client_as(admin_user);
    LockAdmin admin(admin_client);
    auto listed = admin.list_locks("*", 10);
    ASSERT_FALSE(listed);
    expect_noperm(listed.error(), "'scan'");

    set_rules(admin_user, rules_without(admin_user, "~audit:{*}"));
    auto forced = admin.force_release(resource("acl:1"), request);
    ASSERT_FALSE(forced);
    expect_noperm(forced.error(), "audit:{acl:1}");
    EXPECT_EQ(type_of("lock:{acl:1}"), "hash") << "refused before the script ran: nothing deleted";

    set_rules(admin_user, rules_without(admin_user, "%R~fencelock:audit"));
    auto audit = admin.audit_log(std::nullopt, 10);
    ASSERT_FALSE(audit);
    // Not a script: the reply names no key in any version, the ACL log does.
    expect_noperm(audit.error(), "NOPERM");
    EXPECT_TRUE(denied("key", "toplevel", "fencelock:audit")) << unexpected_denials();
}

#ifdef FENCELOCK_CLI
// The CLI as each role's user: `run`, `inspect`; `list`, `force-release`, `audit`; the queue's
// `enqueue` and `stats`.
TEST_F(AclTest, TheCliRunsEachRolesCommandsAsItsUser) {
    const auto url = [&](const std::string& name) {
        return "redis://" + name + ":" + password_of(name) + "@127.0.0.1:" + std::to_string(redis->port()) + "/1";
    };
    const auto cli = [&](const std::string& name, std::vector<std::string> args) {
        args.insert(args.begin(), {FENCELOCK_CLI, "--redis", url(name)});
        const auto r = local::run_process(args);
        EXPECT_EQ(r.exit_code, 0) << name << ": " << r.out << r.err;
    };
    cli(locks_user, {"run", "acl:cli", "--lease", "1s", "--", "true"});
    cli(locks_user, {"acquire", "acl:cli", "--lease", "60s"});
    cli(locks_user, {"inspect", "acl:cli"});
    cli(admin_user, {"list"});
    cli(admin_user, {"force-release", "acl:cli", "--reason", "acl test", "--even-if-active"});
    cli(admin_user, {"audit"});
#ifdef FENCELOCK_CLI_WITH_QUEUE
    cli(queue_user, {"queue", "enqueue", "--queue", "jobs", "--resource", "acl:job", "--key", "k1"});
    cli(queue_user, {"queue", "stats", "--queue", "jobs"});
    cli(queue_user, {"queue", "dead", "--queue", "jobs"});
#endif
    EXPECT_EQ(unexpected_denials(), "");
}
#endif

}  // namespace
}  // namespace fencelock::test_support

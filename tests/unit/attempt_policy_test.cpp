// The attempt policy both clients follow (lease/attempt_policy.hpp), without Redis. The tests
// named "Differs" pin where LockClient (a release source of `messages` or `polling`) and
// AsyncLockClient's loop (`own_client`) decide differently on purpose, and say why.
#include "lease/attempt_policy.hpp"

#include <gtest/gtest.h>

#include "fencelock/error.hpp"

namespace fencelock::detail {
namespace {

using std::chrono::milliseconds;
using namespace std::chrono_literals;

constexpr auto sync_with_messages = ReleaseSource::messages;
constexpr auto sync_polling = ReleaseSource::polling;
constexpr auto async_loop = ReleaseSource::own_client;
// What the Redis coordinator can do: everything the policy asks about.
constexpr CoordinatorCapabilities redis{
    .name = "Redis", .direct_grants = true, .fair_line = true, .release_watch = true, .replica_acks = true};

AcquireOptions waiting(milliseconds wait = 5s, bool fair = false, unsigned replicas = 0) {
    AcquireOptions o;
    o.wait = wait;
    o.fair = fair;
    o.replicas = replicas;
    return o;
}

AcquireReply granted(bool reacquired = false, bool handed = false) {
    return {.acquired = true, .fence = FencingToken{7}, .ttl = 30s, .reacquired = reacquired, .handed = handed};
}

TEST(AttemptPolicy, TheSyncClientsSourceFollowsReleaseNotifications) {
    ClientOptions client;
    client.release_notifications = true;
    EXPECT_EQ(AttemptPolicy::sync_source(client, redis), ReleaseSource::messages);
    client.release_notifications = false;
    EXPECT_EQ(AttemptPolicy::sync_source(client, redis), ReleaseSource::polling);
}

TEST(AttemptPolicy, ASingleAttemptWaitsNowhereAndTakesNoGrants) {
    for (auto source : {sync_with_messages, sync_polling, async_loop}) {
        for (bool fair : {false, true}) {
            const AttemptPolicy policy(waiting(0ms, fair), source, redis);
            EXPECT_EQ(policy.wait_place(), WaitPlace::none);
            EXPECT_FALSE(policy.takes_direct_grants());
            EXPECT_EQ(policy.direct_mode(true, true), DirectGrants::refused);
        }
    }
}

TEST(AttemptPolicy, AFairWaiterTakesAPlaceInTheFairLineWhateverItHears) {
    for (auto source : {sync_with_messages, sync_polling, async_loop})
        EXPECT_EQ(AttemptPolicy(waiting(5s, true), source, redis).wait_place(), WaitPlace::fair_line);
}

// Why: a sleeper's place only serves a waiter a release can wake. LockClient without release
// messages polls with backoff, so a place would only make releases look for it; the async loop
// always hears its own releases (they name their successor in its local line).
TEST(AttemptPolicy, DiffersOnTheSleepersPlaceWithoutReleaseMessages) {
    EXPECT_EQ(AttemptPolicy(waiting(), sync_with_messages, redis).wait_place(), WaitPlace::sleepers);
    EXPECT_EQ(AttemptPolicy(waiting(), sync_polling, redis).wait_place(), WaitPlace::none);
    EXPECT_EQ(AttemptPolicy(waiting(), async_loop, redis).wait_place(), WaitPlace::sleepers);
}

// Why: a direct grant must reach its waiter. A polling LockClient hears no release, so a grant
// left in Redis would block the lock until its place expired; both other sources hear some.
TEST(AttemptPolicy, DiffersOnOptingInToDirectGrantsWithoutReleaseMessages) {
    EXPECT_TRUE(AttemptPolicy(waiting(), sync_with_messages, redis).takes_direct_grants());
    EXPECT_FALSE(AttemptPolicy(waiting(), sync_polling, redis).takes_direct_grants());
    EXPECT_TRUE(AttemptPolicy(waiting(), async_loop, redis).takes_direct_grants());
    // A polling fair waiter has a place, but still hears no grant.
    EXPECT_FALSE(AttemptPolicy(waiting(5s, true), sync_polling, redis).takes_direct_grants());
}

TEST(AttemptPolicy, ReplicaAcknowledgementRefusesDirectGrantsForBothClients) {
    // A confirmation's WAIT need not cover a grant the releaser's connection wrote.
    for (auto source : {sync_with_messages, async_loop}) {
        const AttemptPolicy policy(waiting(5s, false, 1), source, redis);
        EXPECT_FALSE(policy.takes_direct_grants());
        EXPECT_EQ(policy.direct_mode(true, true), DirectGrants::refused);
    }
}

TEST(AttemptPolicy, OutsideTheLocalLineNoAttemptTakesGrants) {
    for (auto source : {sync_with_messages, async_loop}) {
        EXPECT_EQ(AttemptPolicy(waiting(), source, redis).direct_mode(false, false), DirectGrants::refused);
        EXPECT_EQ(AttemptPolicy(waiting(), source, redis).direct_mode(false, true), DirectGrants::refused);
    }
}

// Why: a grant from another client's release reaches the waiter only by the release message.
// LockClient's waiter hears it once its subscription stands (watched), so it takes grants from
// any release; before that, only from its own client's releases, which tell it by their reply.
// The async loop subscribes to nothing, so it takes only its own client's grants, watched or not.
TEST(AttemptPolicy, DiffersOnWhoseReleasesMayGrantAWatchedWaiter) {
    const AttemptPolicy sync(waiting(), sync_with_messages, redis);
    EXPECT_EQ(sync.direct_mode(true, true), DirectGrants::taken);
    EXPECT_EQ(sync.direct_mode(true, false), DirectGrants::own_client);
    const AttemptPolicy async(waiting(), async_loop, redis);
    EXPECT_EQ(async.direct_mode(true, true), DirectGrants::own_client);
    EXPECT_EQ(async.direct_mode(true, false), DirectGrants::own_client);
}

// Why LockClient tells it on a single attempt too: its threads may sleep on the next release
// message without a place in Redis's line, so a lease try_acquire() got must have its release
// publish. The async loop's waiters never sleep on a message (they attempt, or wait for a
// successor grant its own release names), so it tells only on a waiting acquisition's
// attempts. This is the behaviour as found; its doubtful side (the async client's single
// attempt ignores waiters of the synchronous client underneath) is reported, not changed.
TEST(AttemptPolicy, DiffersOnTellingTheLocalLineOnASingleAttempt) {
    EXPECT_EQ(AttemptPolicy(waiting(0ms), sync_with_messages, redis).local_line(true), LocalLine::waiting);
    EXPECT_EQ(AttemptPolicy(waiting(0ms), async_loop, redis).local_line(true), LocalLine::empty);
    for (auto source : {sync_with_messages, sync_polling, async_loop}) {
        EXPECT_EQ(AttemptPolicy(waiting(), source, redis).local_line(true), LocalLine::waiting);
        EXPECT_EQ(AttemptPolicy(waiting(), source, redis).local_line(false), LocalLine::empty);
    }
}

TEST(AttemptPolicy, ThePlanCarriesTheOptionsAndTheClientsTerms) {
    ClientOptions client;
    client.command_timeout = 700ms;
    client.clock_drift_factor = 0.02;
    AcquireOptions o = waiting(5s, true);
    o.lease = 9s;
    o.retry_errors = false;
    const auto owner = *OwnerToken::make("owner-1");
    const auto plan = AttemptPolicy(o, sync_with_messages, redis).plan(owner, false, client);
    EXPECT_EQ(plan.owner, owner);
    EXPECT_EQ(plan.wait, 5s);
    EXPECT_TRUE(plan.fair);
    EXPECT_FALSE(plan.token_is_private);
    EXPECT_EQ(plan.command_timeout, 700ms);
    EXPECT_DOUBLE_EQ(plan.drift_factor, 0.02);
    EXPECT_EQ(plan.lease, 9s);
    EXPECT_FALSE(plan.retry_errors);
    EXPECT_TRUE(plan.trust_grants);
    EXPECT_TRUE(plan.extend_grants);  // both clients renew a place-bounded grant to the lease
    EXPECT_FALSE(AttemptPolicy(waiting(5s, false, 1), async_loop, redis).plan(owner, true, client).trust_grants);
}

// The plan follows the differences above: a polling LockClient never waits in a line (its
// loop only polls), the other sources do, and take a place and direct grants.
TEST(AttemptPolicy, DiffersInThePlanOnlyWhereTheSourceDoes) {
    const ClientOptions client;
    const auto owner = *OwnerToken::make("owner-1");
    const auto polling = AttemptPolicy(waiting(), sync_polling, redis).plan(owner, true, client);
    EXPECT_FALSE(polling.notifications);
    EXPECT_FALSE(polling.takes_place);
    EXPECT_FALSE(polling.direct_grants);
    for (auto source : {sync_with_messages, async_loop}) {
        const auto plan = AttemptPolicy(waiting(), source, redis).plan(owner, true, client);
        EXPECT_TRUE(plan.notifications);
        EXPECT_TRUE(plan.takes_place);
        EXPECT_TRUE(plan.direct_grants);
    }
}

TEST(AttemptPolicy, TheGraceEndsAtTheMomentGrantsStart) {
    const steady_time grants_from{std::chrono::seconds(100)};
    EXPECT_TRUE(AttemptPolicy::in_grace(grants_from - 1ms, grants_from));
    EXPECT_FALSE(AttemptPolicy::in_grace(grants_from, grants_from));
}

// The async client checks `closing` before sending; LockClient passes false (a stop request is
// heard after the reply, by the acquire loop).
TEST(AttemptPolicy, NothingIsSentWhileClosingOrInsideTheGrace) {
    EXPECT_EQ(AttemptPolicy::refusal(false, false), std::nullopt);
    EXPECT_EQ(AttemptPolicy::refusal(false, true), make_error_code(errc::failover_grace));
    EXPECT_EQ(AttemptPolicy::refusal(true, false), make_error_code(errc::unavailable));
    EXPECT_EQ(AttemptPolicy::refusal(true, true), make_error_code(errc::unavailable));  // retryable first
}

TEST(AttemptPolicy, ANewGrantFoundInsideTheGraceIsGivenBack) {
    EXPECT_TRUE(AttemptPolicy::gives_back(granted(), true));
    EXPECT_FALSE(AttemptPolicy::gives_back(granted(), false));
    // A lease handed on by a release may have been issued on the promoted master in its grace.
    EXPECT_TRUE(AttemptPolicy::gives_back(granted(true, true), true));
}

TEST(AttemptPolicy, ALeaseThisOwnerAlreadyHeldIsKeptInsideTheGrace) {
    EXPECT_FALSE(AttemptPolicy::gives_back(granted(true, false), true));
    EXPECT_FALSE(AttemptPolicy::gives_back(AcquireReply{.acquired = false}, true));
}

// A coordinator without a feature never sees a request for it: no attempt opts in to direct
// grants it cannot make, no waiter listens for releases it does not announce, and a fair
// acquisition where there is no fair line fails as invalid rather than run unfairly.
TEST(AttemptPolicy, AsksNoCoordinatorForWhatItCannotDo) {
    auto no_grants = redis;
    no_grants.direct_grants = false;
    for (auto source : {sync_with_messages, async_loop}) {
        const AttemptPolicy policy(waiting(), source, no_grants);
        EXPECT_FALSE(policy.takes_direct_grants());
        EXPECT_EQ(policy.direct_mode(true, true), DirectGrants::refused);
        EXPECT_FALSE(policy.plan(*OwnerToken::make("o"), true, ClientOptions{}).direct_grants);
        EXPECT_EQ(policy.wait_place(), WaitPlace::sleepers);  // it still waits to be woken
    }

    auto no_watch = redis;
    no_watch.release_watch = false;
    ClientOptions client;
    client.release_notifications = true;
    EXPECT_EQ(AttemptPolicy::sync_source(client, no_watch), ReleaseSource::polling);

    auto no_line = redis;
    no_line.fair_line = false;
    const auto refused = AttemptPolicy::unsupported(waiting(5s, true), no_line);
    ASSERT_TRUE(refused.has_value());
    EXPECT_EQ(refused->field, "fair");
    EXPECT_FALSE(AttemptPolicy::unsupported(waiting(5s, false), no_line).has_value());
    EXPECT_FALSE(AttemptPolicy::unsupported(waiting(5s, true), redis).has_value());
}

// etcd's terms: whole-second leases of at least 2 s, no replica acknowledgement.
TEST(AttemptPolicy, RefusesLeasesAndReplicasTheCoordinatorCannotKeep) {
    const CoordinatorCapabilities etcd{.name = "etcd", .lease_step = 1s, .min_lease = 2s};
    const auto refusal = [&](AcquireOptions o) { return AttemptPolicy::unsupported(o, etcd); };
    EXPECT_FALSE(refusal({.lease = 2s}));
    EXPECT_FALSE(refusal({.lease = 30s}));
    ASSERT_TRUE(refusal({.lease = 1s}));
    EXPECT_EQ(refusal({.lease = 1s})->field, "lease");
    EXPECT_NE(refusal({.lease = 1s})->message.find("etcd keeps no lease shorter than 2000 ms"), std::string::npos);
    ASSERT_TRUE(refusal({.lease = 2500ms}));
    EXPECT_NE(refusal({.lease = 2500ms})->message.find("whole multiples of 1000 ms"), std::string::npos);
    ASSERT_TRUE(refusal({.lease = 5s, .replicas = 1}));
    EXPECT_EQ(refusal({.lease = 5s, .replicas = 1})->field, "replicas");
    // Redis keeps any valid lease and waits for replicas.
    EXPECT_FALSE(AttemptPolicy::unsupported({.lease = 10ms, .replicas = 1}, redis));
}

}  // namespace
}  // namespace fencelock::detail

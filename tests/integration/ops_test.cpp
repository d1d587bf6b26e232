// LockAdmin against a real redis-server: list, audited force-release, the audit log.
#include "fencelock/admin.hpp"
#include "integration/lock_fixture.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

TEST_F(LockTest, ListFindsHeldLocksByPattern) {
    auto c = client();
    LockAdmin admin(c);
    for (const char* name : {"order:1", "order:2", "invoice:7", "order:{odd} name"})
        ASSERT_TRUE(c.try_acquire(resource(name), {.lease = 30s}));
    auto released = c.try_acquire(resource("released"), {.lease = 30s});
    ASSERT_TRUE(released && released->acquired());
    ASSERT_TRUE(c.release(resource("released"), released->lease->owner));
    auto orders = admin.list_locks("order:*", 100);
    ASSERT_TRUE(orders);
    std::vector<std::string> names;
    for (const auto& l : *orders) names.push_back(l.resource.str());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"order:1", "order:2", "order:{odd} name"}));
    auto all = admin.list_locks("*", 100);
    ASSERT_TRUE(all);
    EXPECT_EQ(all->size(), 4u) << "released locks and fence counters are not listed";
    for (const auto& l : *all) {
        EXPECT_GT(l.holder.ttl, 20s);
        EXPECT_EQ(l.holder.pid, static_cast<std::int64_t>(::getpid()));
    }
    auto limited = admin.list_locks("*", 2);
    ASSERT_TRUE(limited);
    EXPECT_EQ(limited->size(), 2u);
}

// A lock whose record is damaged is listed as unreadable (it used to be left out silently, so
// an operator could not see what to repair or force-release).
TEST_F(LockTest, ListShowsALockItCouldNotRead) {
    auto c = client();
    LockAdmin admin(c);
    ASSERT_TRUE(c.try_acquire(resource("good"), {.lease = 30s}));
    ASSERT_TRUE(c.try_acquire(resource("damaged"), {.lease = 30s}));
    redis->cli({"HSET", "lock:{damaged}", "fence", "not-a-fence"});
    auto all = admin.list_locks("*", 100);
    ASSERT_TRUE(all) << all.error().message();
    ASSERT_EQ(all->size(), 2u) << "the damaged lock was left out";
    for (const auto& l : *all) {
        if (l.resource.str() == "damaged") EXPECT_EQ(l.unreadable, make_error_code(errc::corrupt_key));
        else EXPECT_FALSE(l.unreadable);
    }
}

TEST_F(LockTest, ForceReleaseRefusesAnActiveLeaseAndChangesNothing) {
    auto c = client();
    LockAdmin admin(c);
    const auto r = resource("stuck:1");
    auto a = c.try_acquire(r, {.lease = 30s});
    ASSERT_TRUE(a && a->acquired());
    const std::string before = redis->snapshot();
    auto refused = admin.force_release(r, {.reason = "looks stuck", .operator_name = "ops@test"});
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, ForceReleaseStatus::active);
    EXPECT_EQ(refused->lease, 30s);
    EXPECT_EQ(redis->snapshot(), before) << "a refused force-release must change nothing, audit included";
    auto log = admin.audit_log(std::nullopt, 10);
    ASSERT_TRUE(log);
    EXPECT_TRUE(log->empty());
}

TEST_F(LockTest, ForceReleaseOfAnIdleLeaseDeletesItAndAudits) {
    auto c = client();
    LockAdmin admin(c);
    const auto r = resource("stuck:2");
    auto a = c.try_acquire(r, {.lease = 30s});
    ASSERT_TRUE(a && a->acquired());
    // The holder stopped renewing long ago: pretend the last renewal was 60 s back.
    // Never renewed: its acquisition (meta's first number) is the last sign of life.
    const std::string meta = redis->cli({"HGET", "lock:{stuck:2}", "meta"});
    const long long renewed = std::stoll(meta.substr(0, meta.find(' '))) - 60'000;
    redis->cli({"HSET", "lock:{stuck:2}", "renewed_ms", std::to_string(renewed)});

    auto wrong =
        admin.force_release(r, {.reason = "r", .operator_name = "o", .expected_owner = OwnerToken::generate()});
    ASSERT_TRUE(wrong);
    EXPECT_EQ(wrong->status, ForceReleaseStatus::owner_mismatch);
    EXPECT_EQ(redis->cli({"EXISTS", "lock:{stuck:2}"}), "1");

    auto done = admin.force_release(
        r, {.reason = "worker host died", .operator_name = "alice@ops", .expected_owner = a->lease->owner});
    ASSERT_TRUE(done);
    EXPECT_EQ(done->status, ForceReleaseStatus::released);
    EXPECT_EQ(done->fence, a->lease->fence);
    EXPECT_GE(done->since_renew, 60s);
    EXPECT_EQ(redis->cli({"EXISTS", "lock:{stuck:2}"}), "0");
    EXPECT_EQ(redis->cli({"GET", "fence:{stuck:2}"}), std::to_string(a->lease->fence.value()))
        << "the counter survives";

    auto log = admin.audit_log(r, 10);
    ASSERT_TRUE(log);
    ASSERT_EQ(log->size(), 1u);
    const AuditEntry& e = log->front();
    EXPECT_EQ(e.id, done->audit_id);
    EXPECT_EQ(e.resource, "stuck:2");
    EXPECT_EQ(e.owner, a->lease->owner.str());
    EXPECT_EQ(e.fence, a->lease->fence);
    EXPECT_EQ(e.reason, "worker host died");
    EXPECT_EQ(e.operator_name, "alice@ops");
    EXPECT_FALSE(e.forced_active);
    EXPECT_GT(e.time_ms, 1'700'000'000'000);

    // The old holder's late release cannot touch the next owner.
    auto next = c.try_acquire(r, {.lease = 30s});
    ASSERT_TRUE(next && next->acquired());
    EXPECT_GT(next->lease->fence, a->lease->fence);
    auto late = c.release(r, a->lease->owner);
    ASSERT_TRUE(late);
    EXPECT_EQ(*late, ReleaseStatus::not_owner);
}

// The operator's last resort works on a damaged record too: a holder record whose times and
// fence are not numbers used to fail force-release with an error. It now counts as renewed just
// now for what is left of its TTL (refused without --even-if-active, nothing changed), and is
// deleted and audited with fence 0 when forced.
TEST_F(LockTest, ForceReleaseOfADamagedHolderRecordIsRefusedOrForcedNotAnError) {
    auto c = client();
    LockAdmin admin(c);
    const auto r = resource("damaged:1");
    ASSERT_TRUE(c.try_acquire(r, {.lease = 30s}));
    redis->cli({"HSET", "lock:{damaged:1}", "meta", "garbage", "fence", "not-a-fence"});
    const std::string before = redis->snapshot();
    auto refused = admin.force_release(r, {.reason = "damaged", .operator_name = "ops@test"});
    ASSERT_TRUE(refused) << refused.error().message();
    EXPECT_EQ(refused->status, ForceReleaseStatus::active);
    EXPECT_GT(refused->lease, 20s) << "what is left of its TTL";
    EXPECT_EQ(redis->snapshot(), before) << "a refused force-release must change nothing";
    auto forced = admin.force_release(r, {.reason = "damaged", .operator_name = "ops@test", .even_if_active = true});
    ASSERT_TRUE(forced) << forced.error().message();
    EXPECT_EQ(forced->status, ForceReleaseStatus::released);
    EXPECT_EQ(forced->fence, FencingToken{0}) << "a fence that is not one is reported as 0";
    EXPECT_EQ(redis->cli({"EXISTS", "lock:{damaged:1}"}), "0");
    auto log = admin.audit_log(r, 10);
    ASSERT_TRUE(log);
    ASSERT_EQ(log->size(), 1u);
}

TEST_F(LockTest, ForceReleaseEvenIfActiveIsAuditedAsSuch) {
    auto c = client();
    LockAdmin admin(c);
    ASSERT_TRUE(c.try_acquire(resource("stuck:3"), {.lease = 30s}));
    auto forced = admin.force_release(resource("stuck:3"),
                                      {.reason = "incident 42", .operator_name = "bob", .even_if_active = true});
    ASSERT_TRUE(forced);
    EXPECT_EQ(forced->status, ForceReleaseStatus::released);
    auto not_held = admin.force_release(resource("stuck:3"), {.reason = "again", .operator_name = "bob"});
    ASSERT_TRUE(not_held);
    EXPECT_EQ(not_held->status, ForceReleaseStatus::not_held);
    auto log = admin.audit_log(std::nullopt, 10);
    ASSERT_TRUE(log);
    ASSERT_EQ(log->size(), 1u) << "nothing audited when nothing was deleted";
    EXPECT_TRUE(log->front().forced_active);
    auto other = admin.audit_log(resource("elsewhere"), 10);
    ASSERT_TRUE(other);
    EXPECT_TRUE(other->empty());
}

TEST_F(LockTest, AdminKeepsWorkingAfterItsClientIsGone) {
    std::optional<LockAdmin> admin;
    {
        auto c = client();
        ASSERT_TRUE(c.try_acquire(resource("orphan"), {.lease = 30s}));
        admin.emplace(c);
    }
    auto locks = admin->list_locks("*", 10);
    ASSERT_TRUE(locks);
    ASSERT_EQ(locks->size(), 1u);
    EXPECT_EQ(locks->front().resource.str(), "orphan");
}

}  // namespace
}  // namespace fencelock::test_support

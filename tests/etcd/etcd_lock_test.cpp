// The lock contract on etcd, against a real etcd (one member, started once for this binary;
// each test has a key prefix of its own): fences from revisions, refusal while held, the
// same-owner retry after a lost reply, renewal and max hold, expiry, release by owner, options
// etcd cannot honour refused before anything is written, the keeper, the operator pages, and
// failing closed when etcd cannot be reached.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "coordinator/etcd/etcd_renewal_channel.hpp"
#include "fencelock/admin.hpp"
#include "fencelock/client.hpp"
#include "fencelock/error.hpp"
#include "fencelock/keeper.hpp"
#include "local_servers/etcd_server.hpp"
#include "local_servers/tls_files.hpp"
#include "support/eventually.hpp"

namespace fencelock {
namespace {

using namespace std::chrono_literals;
using test_support::eventually;

ResourceName resource(std::string_view name) { return *ResourceName::make(name); }

class EtcdLockTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() { etcd = std::make_unique<local::EtcdServer>(); }
    static void TearDownTestSuite() { etcd.reset(); }

    // A prefix of this test's own, so that no test sees another's keys.
    std::string prefix() const {
        return std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "/";
    }

    LockClient client(ClientOptions options = {}) {
        options.endpoint = *parse_redis_url(etcd->url());
        options.key_prefix = prefix();
        auto c = LockClient::create(std::move(options));
        EXPECT_TRUE(c.has_value());
        return std::move(*c);
    }

    // Every key this test's clients wrote (etcdctl, not fencelock, reads them).
    std::string keys_written() const {
        const auto out = etcd->etcdctl({"get", "--prefix", "--keys-only", prefix()});
        EXPECT_EQ(out.exit_code, 0) << out.err;
        return out.out;
    }

    static std::unique_ptr<local::EtcdServer> etcd;
};

std::unique_ptr<local::EtcdServer> EtcdLockTest::etcd;

TEST_F(EtcdLockTest, AFenceIsARevisionAndEveryGrantGetsALargerOne) {
    auto c = client();
    const auto r = resource("order-1");
    auto first = c.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(first && first->acquired());
    EXPECT_GT(first->lease->fence.value(), 0u);
    EXPECT_EQ(first->lease->ttl, 10s);

    auto refused = c.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(refused);
    EXPECT_FALSE(refused->acquired());

    ASSERT_EQ(c.release(r, first->lease->owner), ReleaseStatus::released);
    auto second = c.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(second && second->acquired());
    EXPECT_GT(second->lease->fence, first->lease->fence);
    auto info = c.inspect(r);
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->holder->owner, second->lease->owner.str());
    EXPECT_EQ(info->holder->fence, second->lease->fence);
    EXPECT_EQ(info->last_fence, second->lease->fence);
}

TEST_F(EtcdLockTest, TheSameOwnerRetryGetsTheSameFenceAndNoNewOne) {
    auto c = client();
    const auto r = resource("invoice-7");
    const auto owner = OwnerToken::generate();
    auto granted = c.try_acquire(r, owner, {.lease = 10s});
    ASSERT_TRUE(granted && granted->acquired());
    // As after a lost reply: the same token again.
    auto again = c.try_acquire(r, owner, {.lease = 10s});
    ASSERT_TRUE(again && again->acquired());
    EXPECT_TRUE(again->lease->reacquired);
    EXPECT_EQ(again->lease->fence, granted->lease->fence);
    EXPECT_GT(again->lease->ttl, 0ms);
    EXPECT_LE(again->lease->ttl, 10s);
    auto info = c.inspect(r);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->last_fence, granted->lease->fence);
}

TEST_F(EtcdLockTest, AnotherProcessRetryingWithTheOwnerTokenAdoptsTheGrant) {
    // As a retry from a restarted process would: a client that did not make the grant (its
    // book has no record of it) finds the key by the owner token and renews it before it
    // reports the grant, so the TTL it reports is a whole lease from its own attempt.
    auto granting = client(), retrying = client();
    const auto r = resource("adopted");
    const auto owner = OwnerToken::generate();
    auto granted = granting.try_acquire(r, owner, {.lease = 4s});
    ASSERT_TRUE(granted && granted->acquired());
    auto adopted = retrying.try_acquire(r, owner, {.lease = 4s});
    ASSERT_TRUE(adopted && adopted->acquired());
    EXPECT_TRUE(adopted->lease->reacquired);
    EXPECT_EQ(adopted->lease->fence, granted->lease->fence);
    EXPECT_EQ(adopted->lease->ttl, 4s) << "kept alive, not the TTL left";
    auto renewed = retrying.renew(r, owner, 4s);
    ASSERT_TRUE(renewed);
    EXPECT_EQ(renewed->status, RenewStatus::renewed);
    EXPECT_EQ(retrying.release(r, owner), ReleaseStatus::released);
}

// Counts the watchers etcd has open (its Prometheus gauge on the client port).
long etcd_watchers(const local::EtcdServer& etcd) {
    const auto metrics = local::etcd_http(etcd.client_port(), "GET", "/metrics", "", 2s);
    if (!metrics) return -1;
    const std::string name = "\netcd_debugging_mvcc_watcher_total ";
    const auto at = metrics->find(name);
    return at == std::string::npos ? -1 : std::stol(metrics->substr(at + name.size()));
}

TEST_F(EtcdLockTest, AWaiterIsWokenByTheReleaseThroughAWatch) {
    auto holder = client(), waiter = client();
    const auto r = resource("watched");
    auto held = holder.try_acquire(r, {.lease = 30s});
    ASSERT_TRUE(held && held->acquired());
    const long watchers_before = etcd_watchers(*etcd);
    ASSERT_GE(watchers_before, 0);
    // A poller would next try after its 30 s backoff, or the holder's 30 s lease: only the
    // release's delete event can wake it sooner.
    std::optional<Result<Acquisition>> got;
    std::atomic<bool> done{false};
    std::jthread waiting([&] {
        got = waiter.acquire(r, {.lease = 10s, .wait = 60s, .backoff = {.base = 30s, .max = 30s}});
        done = true;
    });
    ASSERT_TRUE(eventually([&] { return etcd_watchers(*etcd) > watchers_before; })) << "the waiter never watched";
    ASSERT_EQ(holder.release(r, held->lease->owner), ReleaseStatus::released);
    ASSERT_TRUE(eventually([&] { return done.load(); }, 10s)) << "the release did not wake the waiter";
    ASSERT_TRUE(*got && (*got)->acquired());
    EXPECT_GT((*got)->lease->fence, held->lease->fence);
    // One attempt before the watch, one once it stood (unless the release came first), one when
    // woken: no polling in between.
    EXPECT_LE((*got)->attempts, 3u);
    EXPECT_TRUE(eventually([&] { return etcd_watchers(*etcd) == watchers_before; })) << "the watch outlived its waiter";
    (void)waiter.release(r, (*got)->lease->owner);
}

TEST_F(EtcdLockTest, ReleaseTellsNotOwnerFromNotHeld) {
    auto c = client();
    const auto r = resource("account-3");
    EXPECT_EQ(c.release(r, OwnerToken::generate()), ReleaseStatus::not_held);
    auto held = c.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(held && held->acquired());
    EXPECT_EQ(c.release(r, OwnerToken::generate()), ReleaseStatus::not_owner);
    auto info = c.inspect(r);
    ASSERT_TRUE(info && info->holder);  // a stranger's release deleted nothing
    EXPECT_EQ(c.release(r, held->lease->owner), ReleaseStatus::released);
    EXPECT_EQ(c.release(r, held->lease->owner), ReleaseStatus::not_held);
}

TEST_F(EtcdLockTest, RenewalKeepsTheFenceAndAStrangerCannotRenew) {
    auto c = client();
    const auto r = resource("ledger");
    auto held = c.try_acquire(r, {.lease = 3s});
    ASSERT_TRUE(held && held->acquired());
    auto renewed = c.renew(r, held->lease->owner, 3s);
    ASSERT_TRUE(renewed);
    EXPECT_EQ(renewed->status, RenewStatus::renewed);
    EXPECT_EQ(renewed->fence, held->lease->fence);
    EXPECT_EQ(renewed->ttl, 3s);
    auto stranger = c.renew(r, OwnerToken::generate(), 3s);
    ASSERT_TRUE(stranger);
    EXPECT_EQ(stranger->status, RenewStatus::not_owner);
    ASSERT_EQ(c.release(r, held->lease->owner), ReleaseStatus::released);
    auto after = c.renew(r, held->lease->owner, 3s);
    ASSERT_TRUE(after);
    EXPECT_EQ(after->status, RenewStatus::not_owner);
}

TEST_F(EtcdLockTest, AnExpiredLeaseFreesTheLockAndItsOwnerCannotRenewIt) {
    auto c = client();
    const auto r = resource("expiring");
    auto held = c.try_acquire(r, {.lease = 2s});
    ASSERT_TRUE(held && held->acquired());
    // etcd deletes the key when the lease runs out (its leader checks every 500 ms).
    ASSERT_TRUE(eventually(
        [&] {
            auto info = c.inspect(r);
            return info && !info->holder;
        },
        10s));
    auto renewed = c.renew(r, held->lease->owner, 2s);
    ASSERT_TRUE(renewed);
    EXPECT_EQ(renewed->status, RenewStatus::not_owner);
    auto next = c.try_acquire(r, {.lease = 2s});
    ASSERT_TRUE(next && next->acquired());
    EXPECT_GT(next->lease->fence, held->lease->fence);
}

TEST_F(EtcdLockTest, RenewalsStopAtMaxHold) {
    auto c = client();
    const auto r = resource("bounded");
    auto held = c.try_acquire(r, {.lease = 2s, .max_hold = 2s});
    ASSERT_TRUE(held && held->acquired());
    ASSERT_TRUE(eventually(
        [&] {
            auto renewed = c.renew(r, held->lease->owner, 2s);
            return renewed && renewed->status == RenewStatus::max_hold_exceeded;
        },
        10s));
}

TEST_F(EtcdLockTest, OptionsEtcdCannotHonourAreRefusedAndNothingIsWritten) {
    auto c = client();
    const auto r = resource("refused");
    const AcquireOptions asked[] = {
        {.lease = 1500ms}, {.lease = 1s}, {.lease = 10s, .fair = true}, {.lease = 10s, .replicas = 1}};
    const char* fields[] = {"lease", "lease", "fair", "replicas"};
    for (std::size_t i = 0; i < std::size(asked); ++i) {
        auto no = c.supports(asked[i]);
        ASSERT_FALSE(no) << i;
        EXPECT_EQ(no.error().field, fields[i]);
        EXPECT_NE(no.error().message.find("etcd"), std::string::npos) << no.error().message;
        EXPECT_THROW((void)c.try_acquire(r, asked[i]), std::invalid_argument);
        EXPECT_THROW((void)c.hold(r, asked[i]), std::invalid_argument);
    }
    EXPECT_EQ(keys_written(), "");
    EXPECT_TRUE(c.supports({.lease = 2s}));
}

TEST_F(EtcdLockTest, TheKeeperKeepsALeasePastItsTtlAndReportsItsLoss) {
    auto c = client();
    const auto r = resource("kept");
    std::atomic<bool> lost{false};
    auto holding = c.hold(r, {.lease = 2s}, {.on_lost = [&](const LeaseLoss&) { lost = true; }});
    ASSERT_TRUE(holding && holding->acquired());
    HeldLease& lease = *holding->lease;
    const auto fence = lease.fence();
    // Three renewals at lease / 3 carry it past its first TTL.
    ASSERT_TRUE(eventually([&] { return lease.renewals() >= 4; }, 10s));
    EXPECT_TRUE(lease.valid());
    auto info = c.inspect(r);
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->holder->fence, fence);

    // An operator deletes it: the next renewal finds the key gone, and the loss is reported.
    LockAdmin admin(c);
    auto forced = admin.force_release(
        r, {.reason = "test", .operator_name = "tester", .expected_owner = std::nullopt, .even_if_active = true});
    ASSERT_TRUE(forced);
    EXPECT_EQ(forced->status, ForceReleaseStatus::released);
    ASSERT_TRUE(eventually([&] { return lost.load(); }, 10s));
    EXPECT_FALSE(lease.valid());
    EXPECT_EQ(lease.loss(), LossReason::not_owner);
}

TEST_F(EtcdLockTest, ABatchOfRenewalsLargerThanOneTransactionMayReadIsRenewedWhole) {
    // etcd refuses a transaction of more than 128 operations (--max-txn-ops). The keeper's
    // channel renews 150 leases in one batch, from a book that knows none of them (another
    // process's, as after a restart): both the lookups and the checks go in several reads.
    auto c = client();
    std::vector<std::pair<ResourceName, OwnerToken>> held;
    for (int i = 0; i < 150; ++i) {
        auto r = resource("many-" + std::to_string(i));
        auto got = c.try_acquire(r, {.lease = 10s});
        ASSERT_TRUE(got && got->acquired()) << i;
        held.emplace_back(r, got->lease->owner);
    }
    ClientOptions options;
    options.endpoint = *parse_redis_url(etcd->url());
    const detail::etcd::EtcdKeys keys(prefix());
    detail::etcd::EtcdRenewalChannel channel({.members = options.endpoint.etcd_members}, keys,
                                             std::make_shared<detail::etcd::LeaseBook>());
    std::vector<std::string> addresses;
    for (const auto& [r, owner] : held) addresses.push_back(channel.lease_address(r));
    std::vector<detail::RenewItem> items;
    for (std::size_t i = 0; i < held.size(); ++i)
        items.push_back({.address = addresses[i], .owner = held[i].second, .lease = 10s, .durability = {}});
    const auto batch = channel.renew_batch(items);
    ASSERT_EQ(batch.replies.size(), held.size());
    for (std::size_t i = 0; i < held.size(); ++i) {
        ASSERT_TRUE(batch.replies[i]) << i << ": " << batch.replies[i].error().message() << " "
                                      << error_detail(batch.replies[i].error());
        EXPECT_EQ(batch.replies[i]->status, RenewStatus::renewed) << i;
    }
}

TEST_F(EtcdLockTest, ListForceReleaseAndAuditShowEtcdsLocks) {
    auto c = client();
    LockAdmin admin(c);
    auto a = c.try_acquire(resource("a"), {.lease = 30s});
    auto ab = c.try_acquire(resource("a/b"), {.lease = 30s});  // its own range, not a's
    auto other = c.try_acquire(resource("zz"), {.lease = 30s});
    ASSERT_TRUE(a && a->acquired() && ab && ab->acquired() && other && other->acquired());

    auto listed = admin.list_locks("a*", 10);
    ASSERT_TRUE(listed);
    ASSERT_EQ(listed->size(), 2u);
    EXPECT_EQ((*listed)[0].resource.str(), "a");
    EXPECT_EQ((*listed)[0].holder.fence, a->lease->fence);
    EXPECT_EQ((*listed)[1].resource.str(), "a/b");

    auto active = admin.force_release(resource("a"), {.reason = "stuck", .operator_name = "ops@host"});
    ASSERT_TRUE(active);
    EXPECT_EQ(active->status, ForceReleaseStatus::active);
    auto mismatch = admin.force_release(resource("a"), {.reason = "stuck",
                                                        .operator_name = "ops@host",
                                                        .expected_owner = OwnerToken::generate(),
                                                        .even_if_active = true});
    ASSERT_TRUE(mismatch);
    EXPECT_EQ(mismatch->status, ForceReleaseStatus::owner_mismatch);
    auto info = c.inspect(resource("a"));
    ASSERT_TRUE(info && info->holder);  // both refusals left it alone

    auto forced = admin.force_release(resource("a"), {.reason = "stuck job 42",
                                                      .operator_name = "ops@host",
                                                      .expected_owner = a->lease->owner,
                                                      .even_if_active = true});
    ASSERT_TRUE(forced);
    EXPECT_EQ(forced->status, ForceReleaseStatus::released);
    EXPECT_EQ(forced->fence, a->lease->fence);
    info = c.inspect(resource("a"));
    ASSERT_TRUE(info);
    EXPECT_FALSE(info->holder);
    EXPECT_TRUE(c.inspect(resource("a/b"))->holder);

    auto audit = admin.audit_log(std::nullopt, 10);
    ASSERT_TRUE(audit);
    ASSERT_EQ(audit->size(), 1u);
    EXPECT_EQ((*audit)[0].resource, "a");
    EXPECT_EQ((*audit)[0].owner, a->lease->owner.str());
    EXPECT_EQ((*audit)[0].fence, a->lease->fence);
    EXPECT_EQ((*audit)[0].reason, "stuck job 42");
    EXPECT_EQ((*audit)[0].operator_name, "ops@host");
    EXPECT_TRUE((*audit)[0].forced_active);
    EXPECT_EQ((*audit)[0].id, forced->audit_id);
    EXPECT_EQ(admin.audit_log(resource("zz"), 10)->size(), 0u);
    EXPECT_EQ(admin.force_release(resource("a"), {.reason = "again", .operator_name = "ops"})->status,
              ForceReleaseStatus::not_held);
    EXPECT_EQ(c.release(resource("a"), a->lease->owner), ReleaseStatus::not_held);
}

TEST(EtcdAuth, AUsersLocksWorkAndWrongOrMissingCredentialsFailClosedWritingNothing) {
    local::EtcdServer etcd;
    const auto admin = [&](std::vector<std::string> args) {
        const auto out = etcd.etcdctl(args);
        ASSERT_EQ(out.exit_code, 0) << out.err;
    };
    admin({"user", "add", "root:rootpw"});
    admin({"user", "grant-role", "root", "root"});
    admin({"role", "add", "locks"});
    admin({"role", "grant-permission", "locks", "--prefix=true", "readwrite", "fencelock/"});
    admin({"user", "add", "app:apppw"});
    admin({"user", "grant-role", "app", "locks"});
    admin({"user", "add", "other:otherpw"});  // no role: may touch nothing
    admin({"auth", "enable"});
    const auto with = [&](const std::string& userinfo) {
        ClientOptions options{.connect_timeout = 1s, .command_timeout = 1s};
        options.endpoint = *parse_redis_url("etcd://" + userinfo + etcd.endpoint());
        return std::move(*LockClient::create(options));
    };
    const auto cause_of = [](const Result<Acquisition>& r) { return r ? std::string() : error_cause(r.error()); };

    auto app = with("app:apppw@");
    auto granted = app.try_acquire(resource("paid"), {.lease = 5s});
    ASSERT_TRUE(granted && granted->acquired()) << (granted ? "" : error_detail(granted.error()));

    auto wrong = with("app:nope@").try_acquire(resource("refused"), {.lease = 5s});
    ASSERT_FALSE(wrong);
    EXPECT_EQ(wrong.error(), errc::auth_failed);
    EXPECT_EQ(classify(wrong.error()), failure_kind::fatal);
    EXPECT_EQ(cause_of(wrong), "auth_rejected");
    auto anonymous = with("").try_acquire(resource("refused"), {.lease = 5s});
    ASSERT_FALSE(anonymous);
    EXPECT_EQ(anonymous.error(), errc::auth_failed);
    EXPECT_EQ(cause_of(anonymous), "auth_required");
    auto unprivileged = with("other:otherpw@").try_acquire(resource("refused"), {.lease = 5s});
    ASSERT_FALSE(unprivileged);
    EXPECT_EQ(unprivileged.error(), errc::auth_failed);
    EXPECT_EQ(cause_of(unprivileged), "noperm");

    const auto keys = etcd.etcdctl({"--user", "root:rootpw", "get", "--prefix", "--keys-only", "fencelock/lock/"});
    ASSERT_EQ(keys.exit_code, 0) << keys.err;
    EXPECT_NE(keys.out.find("fencelock/lock/paid/"), std::string::npos);
    EXPECT_EQ(keys.out.find("refused"), std::string::npos) << "a refused client wrote " << keys.out;
}

TEST(EtcdTls, LocksOverTlsVerifyTheServerAndPresentTheClientsCertificate) {
    const auto& files = local::shared_tls_files();
    local::EtcdServer etcd({.tls = local::EtcdTls{.cert_file = files.server_cert,
                                                  .key_file = files.server_key,
                                                  .ca_file = files.ca_cert,
                                                  .client_cert_auth = true}});
    ASSERT_TRUE(etcd.url().starts_with("etcds://"));
    const auto pct = [](const std::string& path) {  // a path as a URL query value
        std::string out;
        for (const char c : path) out += c == '/' ? std::string("%2F") : std::string(1, c);
        return out;
    };
    const auto with = [&](const std::string& query) {
        auto endpoint = parse_redis_url(etcd.url() + query);
        EXPECT_TRUE(endpoint) << (endpoint ? "" : endpoint.error().message);
        ClientOptions options{.connect_timeout = 1s, .command_timeout = 1s};
        options.endpoint = *endpoint;
        return std::move(*LockClient::create(options));
    };
    const std::string pair = "&tls_cert=" + pct(files.client_cert) + "&tls_key=" + pct(files.client_key);

    auto trusted = with("?tls_ca=" + pct(files.ca_cert) + pair);
    auto granted = trusted.try_acquire(resource("tls"), {.lease = 5s});
    ASSERT_TRUE(granted && granted->acquired()) << (granted ? "" : error_detail(granted.error()));
    EXPECT_EQ(trusted.release(resource("tls"), granted->lease->owner), ReleaseStatus::released);

    // A server the client's CA did not sign, and a client without a certificate: nothing granted.
    auto wrong_ca = with("?tls_ca=" + pct(files.other_ca_cert) + pair).try_acquire(resource("tls"), {.lease = 5s});
    EXPECT_FALSE(wrong_ca);
    auto no_pair = with("?tls_ca=" + pct(files.ca_cert)).try_acquire(resource("tls"), {.lease = 5s});
    EXPECT_FALSE(no_pair);
    auto missing_ca = with("?tls_ca=%2Fno%2Fsuch.pem" + pair).try_acquire(resource("tls"), {.lease = 5s});
    ASSERT_FALSE(missing_ca);
    EXPECT_NE(error_detail(missing_ca.error()).find("cannot read the CA file"), std::string::npos)
        << error_detail(missing_ca.error());

    // gRPC takes a CA file and always verifies: the other TLS keys are refused up front.
    EXPECT_FALSE(parse_redis_url(etcd.url() + "?tls_insecure=1"));
    EXPECT_FALSE(parse_redis_url(etcd.url() + "?tls_ca_dir=%2Fetc%2Fssl%2Fcerts"));
    EXPECT_FALSE(parse_redis_url("etcd://127.0.0.1:2379?tls_ca=%2Fca.pem")) << "TLS keys need etcds://";
}

TEST_F(EtcdLockTest, AnUnreachableEtcdFailsClosed) {
    ClientOptions options{.connect_timeout = 300ms, .command_timeout = 300ms};
    options.endpoint = *parse_redis_url("etcd://127.0.0.1:1");
    auto c = LockClient::create(options);
    ASSERT_TRUE(c);
    auto attempt = c->try_acquire(resource("x"), {.lease = 2s});
    ASSERT_FALSE(attempt);
    EXPECT_EQ(classify(attempt.error()), failure_kind::retryable) << attempt.error().message();
    EXPECT_NE(error_detail(attempt.error()).find("127.0.0.1:1"), std::string::npos) << error_detail(attempt.error());
}

}  // namespace
}  // namespace fencelock

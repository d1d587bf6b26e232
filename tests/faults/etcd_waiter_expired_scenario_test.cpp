// A waiter whose lease runs out while it waits (etcd-io/etcd#11456, which Jepsen found in
// etcd 3.4.3's lock: the waiter was told it held the lock after its key had expired).
//
// A holds R. B starts waiting with a 2 s lease that nothing keeps alive, as when a waiter is
// paused or cut off. Once B's lease has run out, C starts waiting too. Then A writes and
// releases, and B and C each write (read, append, write) once they are told they hold R.
//
// Fenced (fencelock on etcd): a waiter holds no key while it waits; each grant is one
// transaction on a lease granted just before. B and C are granted one after the other, never
// together, and both writes land in fence order: 0 violations.
// Unfenced, the negative control: the same waiters on etcd's own v3lock Lock RPC (a Mutex
// without a final ownership check) and an unfenced target. After A's unlock, etcd tells both B
// (whose key expired) and C that they hold R: their holds overlap, one append is lost, and the
// checker says so.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "faults/scenario.hpp"
#include "local_servers/etcd_server.hpp"
#include "rpc.grpc.pb.h"
#include "v3lock.grpc.pb.h"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;
using test_support::eventually;

// etcd's own lock, by its RPCs.
class EtcdsLock {
public:
    explicit EtcdsLock(const std::string& endpoint)
        : channel_(grpc::CreateChannel("ipv4:" + endpoint, grpc::InsecureChannelCredentials())),
          lease_(etcdserverpb::Lease::NewStub(channel_)),
          kv_(etcdserverpb::KV::NewStub(channel_)),
          lock_(v3lockpb::Lock::NewStub(channel_)) {}

    std::int64_t grant(std::int64_t ttl_seconds) {
        etcdserverpb::LeaseGrantRequest request;
        request.set_ttl(ttl_seconds);
        etcdserverpb::LeaseGrantResponse response;
        grpc::ClientContext context;
        EXPECT_TRUE(lease_->LeaseGrant(&context, request, &response).ok());
        return response.id();
    }
    /// Whether etcd still has the lease.
    bool alive(std::int64_t lease) {
        etcdserverpb::LeaseTimeToLiveRequest request;
        request.set_id(lease);
        etcdserverpb::LeaseTimeToLiveResponse response;
        grpc::ClientContext context;
        return lease_->LeaseTimeToLive(&context, request, &response).ok() && response.ttl() >= 0;
    }
    /// Blocks until etcd says `lease` holds `name`; the key it names, or nullopt on an error.
    std::optional<std::string> lock(const std::string& name, std::int64_t lease) {
        v3lockpb::LockRequest request;
        request.set_name(name);
        request.set_lease(lease);
        v3lockpb::LockResponse response;
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + 30s);
        if (!lock_->Lock(&context, request, &response).ok()) return std::nullopt;
        return response.key();
    }
    void unlock(const std::string& key) {
        v3lockpb::UnlockRequest request;
        request.set_key(key);
        v3lockpb::UnlockResponse response;
        grpc::ClientContext context;
        EXPECT_TRUE(lock_->Unlock(&context, request, &response).ok());
    }
    /// The keys under `prefix`, oldest first: (key, create revision).
    std::vector<std::pair<std::string, std::int64_t>> keys(const std::string& prefix) {
        etcdserverpb::RangeRequest request;
        request.set_key(prefix);
        std::string end = prefix;
        ++end.back();
        request.set_range_end(end);
        request.set_sort_target(etcdserverpb::RangeRequest::CREATE);
        request.set_sort_order(etcdserverpb::RangeRequest::ASCEND);
        etcdserverpb::RangeResponse response;
        grpc::ClientContext context;
        std::vector<std::pair<std::string, std::int64_t>> out;
        if (!kv_->Range(&context, request, &response).ok()) return out;
        for (const auto& kv : response.kvs()) out.emplace_back(kv.key(), kv.create_revision());
        return out;
    }

private:
    std::shared_ptr<grpc::Channel> channel_;
    std::unique_ptr<etcdserverpb::Lease::Stub> lease_;
    std::unique_ptr<etcdserverpb::KV::Stub> kv_;
    std::unique_ptr<v3lockpb::Lock::Stub> lock_;
};

class EtcdWaiterExpired : public ScenarioTest {
protected:
    void SetUp() override {
        ScenarioTest::SetUp();
        etcd = std::make_unique<local::EtcdServer>();
    }
    std::unique_ptr<local::EtcdServer> etcd;
};

// Two holders told at once meet here after their reads, so that they overlap as they would
// under load; one alone goes on after a few seconds (a control that stopped failing must not
// hang the test).
struct Meeting {
    std::atomic<int> arrived{0};
    void arrive() {
        ++arrived;
        (void)eventually([&] { return arrived.load() >= 2; }, 5s);
    }
};

// One holder's turn once it is told it holds R: read, meet the other if any, append, write.
void take_turn(RmwWorker& w, Recorder& rec, const std::string& r, const std::string& name, std::uint64_t fence,
               Meeting* together) {
    const auto start = now_ns();
    const std::string base = w.read(r, fence);
    if (together != nullptr) together->arrive();
    rec.hold(r, fence, start, now_ns());
    (void)w.write(r, base, name, fence);
}

TEST_P(EtcdWaiterExpired, AWaiterWhoseLeaseRanOutIsNeverToldItHoldsTheLock) {
    const std::string r = "waiter:expired";
    auto a_rec = recorder("A"), b_rec = recorder("B"), c_rec = recorder("C");
    RmwWorker a(*a_rec, *target), b(*b_rec, *target), c(*c_rec, *target);
    std::int64_t told_b = 0;

    if (fencing()) {
        auto client_a = client({}, etcd->url()), client_b = client({}, etcd->url()), client_c = client({}, etcd->url());
        auto lease_a = record_acquire(*a_rec, r, [&] { return client_a.try_acquire(res(r), {.lease = 10s}); });
        ASSERT_TRUE(lease_a);
        const auto waiter = [&](LockClient& cl, Recorder& rec, RmwWorker& w, const std::string& name) {
            auto lease = record_acquire(rec, r, [&] { return cl.acquire(res(r), {.lease = 2s, .wait = 20s}); });
            if (!lease) return;
            if (still_valid(*lease)) take_turn(w, rec, r, name, lease->fence.value(), nullptr);
            (void)cl.release(res(r), lease->owner);
        };
        std::jthread tb([&] { waiter(client_b, *b_rec, b, "B"); });
        // Longer than B's lease: an etcd Mutex waiter's own lease would have run out by now.
        const auto b_started = std::chrono::steady_clock::now();
        ASSERT_TRUE(eventually([&] { return std::chrono::steady_clock::now() - b_started >= 2500ms; }));
        std::jthread tc([&] { waiter(client_c, *c_rec, c, "C"); });
        take_turn(a, *a_rec, r, "A", lease_a->fence.value(), nullptr);
        ASSERT_TRUE(client_a.release(res(r), lease_a->owner));
    } else {
        EtcdsLock etcds(etcd->endpoint());
        // Every lock key seen, with its create revision: the fence etcd's lock gives its holder
        // (B's key is gone by the time B is told it holds R).
        std::map<std::string, std::uint64_t> created;
        std::mutex created_mutex;
        const auto look = [&] {
            const auto keys = etcds.keys(r);
            std::lock_guard lock(created_mutex);
            for (const auto& [key, revision] : keys) created.emplace(key, static_cast<std::uint64_t>(revision));
            return keys.size();
        };
        const auto fence_of = [&](const std::string& key) {
            std::lock_guard lock(created_mutex);
            const auto it = created.find(key);
            return it == created.end() ? std::uint64_t{0} : it->second;
        };
        const std::int64_t la = etcds.grant(30), lb = etcds.grant(2), lc = etcds.grant(30);
        const auto a_id = a_rec->invoke(OpKind::acquire, r);
        const auto key_a = etcds.lock(r, la);
        ASSERT_TRUE(key_a);
        look();
        a_rec->complete(a_id, Outcome::ok, fence_of(*key_a));

        Meeting together;
        const auto waiter = [&](std::int64_t lease, Recorder& rec, RmwWorker& w, const std::string& name) {
            const auto id = rec.invoke(OpKind::acquire, r);
            const auto key = etcds.lock(r, lease);
            const std::uint64_t fence = key ? fence_of(*key) : 0;
            rec.complete(id, key ? Outcome::ok : Outcome::fail, fence);
            if (!key) return;
            if (name == "B") told_b = static_cast<std::int64_t>(fence);
            take_turn(w, rec, r, name, fence, &together);
            etcds.unlock(*key);
        };
        std::jthread wb([&] { waiter(lb, *b_rec, b, "B"); });
        ASSERT_TRUE(eventually([&] { return look() == 2; })) << "B never got in line";
        // Nothing keeps B's lease alive (the Lock RPC does not): wait until etcd lets it go, and
        // B's key with it.
        ASSERT_TRUE(eventually([&] { return !etcds.alive(lb); }, 10s));
        ASSERT_TRUE(eventually([&] { return look() == 1; }));
        std::jthread wc([&] { waiter(lc, *c_rec, c, "C"); });
        ASSERT_TRUE(eventually([&] { return look() == 2; })) << "C never got in line";
        take_turn(a, *a_rec, r, "A", fence_of(*key_a), nullptr);
        etcds.unlock(*key_a);
    }

    const Report report = check_history();
    expect_verdict(report);
    summary("etcd_waiter_expired")
        .add("protection", fencing() ? "fencelock on etcd + target fence check" : "none (etcd's v3lock Lock RPC)")
        .add("coordinator", "etcd")
        .report(report)
        .linearizability(lin)
        .add("waiter_fence_after_expiry", told_b)
        .print();
}

INSTANTIATE_TEST_SUITE_P(Faults, EtcdWaiterExpired, ::testing::ValuesIn(no_postgres()), mode_name);

}  // namespace
}  // namespace fencelock::faults

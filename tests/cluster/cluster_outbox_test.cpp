// The outbox relay through redis-cluster://, on SQLite and on PostgreSQL: events whose streams
// live on every master are relayed, and a stream whose slot migrates between passes (the source
// still holding it, the keys moved so the source answers ASK, the slot reassigned so it answers
// MOVED) gets each event exactly once: a redirect-driven resend is an XADD the cluster said it
// did not run, never a second append. The CLI's `store relay` does the same.
#include <gtest/gtest.h>
#include <unistd.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/cluster_fixture.hpp"
#include "fencelock/store_outbox.hpp"
#include "local_servers/child_process.hpp"
#include "local_servers/cluster_group.hpp"
#include "local_servers/sentinel_group.hpp"
#include "redis/cluster_slot.hpp"
#include "store_fixture.hpp"

namespace fencelock::test_support {
namespace {

using Outcome = std::expected<void, StoreError>;

class ClusterOutbox : public StoreTest {
protected:
    void SetUp() override {
        StoreTest::SetUp();  // a fresh database with fencelock's schema
        if (HasFatalFailure()) return;
        create("order");
        // One stream on each master, named after the pid: reruns never meet old entries.
        for (std::uint16_t master : local::master_ports(cluster.ports().front()))
            for (int i = 0;; ++i) {
                const std::string name =
                    "outbox:" + std::to_string(::getpid()) + ":" + backend() + ":" + std::to_string(i);
                if (cluster.master_of(name) == master) {
                    streams.push_back(name);
                    break;
                }
            }
    }
    void TearDown() override {
        for (const auto& s : streams) cluster.cli_for(s, {"DEL", s});
    }
    std::string backend() const { return GetParam() == Backend::sqlite ? "sqlite" : "postgresql"; }

    /// One committed transaction publishing `per_stream` events to each stream in `to`.
    void publish(const std::vector<std::string>& to, int per_stream) {
        auto ok = store->transact(res("order"), FencingToken(++fence), {}, [&](Transaction& tx) -> Outcome {
            for (const auto& s : to)
                for (int i = 0; i < per_stream; ++i)
                    if (auto id = tx.publish(s, "p" + std::to_string(fence)); !id) return std::unexpected(id.error());
            return {};
        });
        ASSERT_TRUE(ok) << ok.error().detail;
        ASSERT_EQ(ok->status, TransactStatus::committed);
    }
    /// Relays until a pass publishes nothing; the events published.
    std::size_t relay_all(OutboxRelay& relay) {
        std::size_t total = 0;
        for (;;) {
            auto n = relay.relay_once();
            if (!n) ADD_FAILURE() << n.error().detail;
            if (!n || *n == 0) return total;
            total += *n;
        }
    }
    /// Every event_id in `stream`, in stream order, read from the master serving it now.
    std::vector<std::string> stream_ids(const std::string& stream) {
        std::istringstream in(cluster.cli_for(stream, {"--raw", "XRANGE", stream, "-", "+"}));
        std::vector<std::string> ids;
        std::string prev;
        for (std::string line; std::getline(in, line); prev = line)
            if (prev == "event_id") ids.push_back(line);
        return ids;
    }
    /// The outbox's event ids for `stream`, in publication order.
    std::vector<std::string> outbox_ids(const std::string& stream) {
        std::istringstream in(
            db->query("SELECT event_id FROM fencelock_outbox WHERE stream = '" + stream + "' ORDER BY seq"));
        std::vector<std::string> ids;
        for (std::string line; std::getline(in, line);) ids.push_back(line);
        return ids;
    }
    std::string unsent() { return db->query("SELECT count(*) FROM fencelock_outbox WHERE sent_at IS NULL"); }

    SharedCluster& cluster = SharedCluster::get();
    std::vector<std::string> streams;
    std::uint64_t fence = 0;
};

TEST_P(ClusterOutbox, RelaysToStreamsOnEveryMasterAndAMigratingSlotGetsEachEventOnce) {
    ASSERT_EQ(streams.size(), 3u);
    auto relay = OutboxRelay::create(*store, RelayOptions{.endpoint = cluster.endpoint(), .batch_size = 2});
    ASSERT_TRUE(relay);
    publish(streams, 2);
    EXPECT_EQ(relay_all(*relay), 6u);
    for (const auto& s : streams) EXPECT_EQ(stream_ids(s), outbox_ids(s)) << s;
    EXPECT_EQ(unsent(), "0\n");

    // The first stream's slot moves to another master while events keep coming.
    const std::string& moving = streams.front();
    const auto ports = cluster.ports();
    const std::uint16_t from = cluster.master_of(moving), to = cluster.master_of(streams.back());
    local::SlotMigration migration(ports, detail::key_slot(moving), to);
    migration.begin();
    publish({moving}, 2);  // the source still has the stream: it appends
    EXPECT_EQ(relay_all(*relay), 2u);
    // The stream, and any key other tests of the run left in its slot (fence counters).
    EXPECT_GE(migration.move_keys(), 1);
    EXPECT_EQ(local::cli_at(from, {"CLUSTER", "COUNTKEYSINSLOT", std::to_string(detail::key_slot(moving))}), "0");
    publish({moving}, 2);  // the stream is on the target: the source answers ASK
    EXPECT_EQ(relay_all(*relay), 2u);
    migration.finish();
    publish({moving}, 2);  // the slot is the target's: MOVED
    EXPECT_EQ(relay_all(*relay), 2u);
    EXPECT_EQ(cluster.master_of(moving), to);
    EXPECT_EQ(local::cli_at(to, {"XLEN", moving}), "8");
    EXPECT_EQ(stream_ids(moving), outbox_ids(moving));  // each event once, in order
    EXPECT_EQ(unsent(), "0\n");
    EXPECT_EQ(relay_all(*relay), 0u);

    // The slot goes home, leaving the shared cluster as the other tests expect it.
    local::SlotMigration back(ports, detail::key_slot(moving), from);
    back.begin();
    back.move_keys();
    back.finish();
    local::wait_cluster_ready(ports, 3, std::chrono::seconds(30));
}

#ifdef FENCELOCK_CLI
TEST_P(ClusterOutbox, TheCliRelaysThroughRedisCluster) {
    publish(streams, 1);
    const auto got = local::run_process(
        {FENCELOCK_CLI, "--redis", cluster.url(), "store", "relay", "--db", db->url(), "--batch", "2"});
    ASSERT_EQ(got.exit_code, 0) << got.err;
    EXPECT_EQ(nlohmann::json::parse(got.out)["published"], 3);
    for (const auto& s : streams) EXPECT_EQ(stream_ids(s), outbox_ids(s)) << s;
    EXPECT_EQ(unsent(), "0\n");
}
#endif

INSTANTIATE_TEST_SUITE_P(Backends, ClusterOutbox, ::testing::Values(Backend::sqlite, Backend::postgresql),
                         backend_name);

}  // namespace
}  // namespace fencelock::test_support

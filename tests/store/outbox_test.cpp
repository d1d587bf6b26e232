// The transactional outbox: events exist exactly when their transaction committed; the relay
// delivers each of them to a Redis stream at least once.
#include <set>
#include <sstream>

#include "fencelock/store_outbox.hpp"
#include "local_servers/redis_server.hpp"
#include "store_fixture.hpp"

namespace fencelock::test_support {
namespace {

using F = FencingToken;
using Outcome = std::expected<void, StoreError>;
using local::RedisServer;

class OutboxTest : public StoreTest {
protected:
    Mutation publish(std::vector<std::string> payloads, bool then_fail = false) {
        return [payloads, then_fail](Transaction& tx) -> Outcome {
            tx.set_value("changed");
            for (const auto& p : payloads) {
                if (auto id = tx.publish("orders", p); !id) return std::unexpected(id.error());
            }
            if (then_fail)
                return std::unexpected(StoreError{std::make_error_code(std::errc::operation_canceled), "no"});
            return {};
        };
    }
    std::string outbox() {
        return db->query("SELECT resource, fence, stream, payload FROM fencelock_outbox ORDER BY seq");
    }

    /// Every event_id in the stream, in stream order.
    static std::vector<std::string> stream_ids(const RedisServer& redis, const std::string& stream) {
        std::istringstream in(redis.cli({"--raw", "XRANGE", stream, "-", "+"}));
        std::vector<std::string> ids;
        std::string prev;
        for (std::string line; std::getline(in, line); prev = line)
            if (prev == "event_id") ids.push_back(line);
        return ids;
    }
};

TEST_P(OutboxTest, EventsExistExactlyWhenTheChangeCommitted) {
    create("order-1");
    auto ok = store->transact(res("order-1"), F(2), {}, publish({"created", "paid"}));
    ASSERT_TRUE(ok) << ok.error().detail;
    ASSERT_EQ(ok->status, TransactStatus::committed);
    EXPECT_EQ(outbox(), "order-1|2|orders|created\norder-1|2|orders|paid\n");

    auto aborted = store->transact(res("order-1"), F(3), {}, publish({"lost"}, true));
    ASSERT_TRUE(aborted);
    EXPECT_EQ(aborted->status, TransactStatus::aborted);
    auto stale = store->transact(res("order-1"), F(1), {}, publish({"stale"}));
    ASSERT_TRUE(stale);
    EXPECT_EQ(stale->status, TransactStatus::stale);
    auto dup_first = store->transact(res("order-1"), F(4), {.idempotency_key = "k"}, publish({"once"}));
    ASSERT_TRUE(dup_first);
    auto dup = store->transact(res("order-1"), F(5), {.idempotency_key = "k"}, publish({"twice"}));
    ASSERT_TRUE(dup);
    EXPECT_EQ(dup->status, TransactStatus::duplicate);

    EXPECT_EQ(outbox(), "order-1|2|orders|created\norder-1|2|orders|paid\norder-1|4|orders|once\n");
    EXPECT_EQ(db->query("SELECT count(DISTINCT event_id) FROM fencelock_outbox"), "3\n");
    EXPECT_EQ(db->query("SELECT count(*) FROM fencelock_outbox WHERE sent_at IS NULL"), "3\n");
}

TEST_P(OutboxTest, RelayDeliversEveryEventAtLeastOnce) {
    RedisServer redis;
    create("order-1");
    ASSERT_TRUE(store->transact(res("order-1"), F(1), {}, publish({"a", "b", "c"})));
    RedisEndpoint endpoint;
    endpoint.port = redis.port();
    auto relay = OutboxRelay::create(*store, RelayOptions{.endpoint = endpoint, .batch_size = 2});
    ASSERT_TRUE(relay);

    auto first = relay->relay_once();  // batch of 2
    ASSERT_TRUE(first) << first.error().detail;
    EXPECT_EQ(*first, 2u);
    auto second = relay->relay_once();
    ASSERT_TRUE(second) << second.error().detail;
    EXPECT_EQ(*second, 1u);
    EXPECT_EQ(*relay->relay_once(), 0u);
    EXPECT_EQ(redis.cli({"XLEN", "orders"}), "3");
    const auto ids = stream_ids(redis, "orders");
    EXPECT_EQ(db->query("SELECT event_id FROM fencelock_outbox ORDER BY seq"),
              ids.at(0) + "\n" + ids.at(1) + "\n" + ids.at(2) + "\n");
    EXPECT_EQ(db->query("SELECT count(*) FROM fencelock_outbox WHERE sent_at IS NULL"), "0\n");

    // Redis goes away: nothing is marked sent, and the events go out once it is back.
    ASSERT_TRUE(store->transact(res("order-1"), F(2), {}, publish({"d", "e"})));
    redis.kill();
    auto down = relay->relay_once();
    ASSERT_FALSE(down);
    EXPECT_NE(classify_store_error(down.error().code), failure_kind::fatal) << down.error().detail;
    EXPECT_EQ(db->query("SELECT count(*) FROM fencelock_outbox WHERE sent_at IS NULL"), "2\n");
    redis.start();  // empty: no persistence
    EXPECT_EQ(*relay->relay_once(), 2u);
    EXPECT_EQ(redis.cli({"XLEN", "orders"}), "2");

    // A relay that crashed after XADD but before marking: the events are sent again, and the
    // consumer sees duplicates it can remove by event_id.
    db->execute("UPDATE fencelock_outbox SET sent_at = NULL WHERE payload IN ('d', 'e')");
    EXPECT_EQ(*relay->relay_once(), 2u);
    const auto after = stream_ids(redis, "orders");
    EXPECT_EQ(after.size(), 4u);
    EXPECT_EQ(std::set<std::string>(after.begin(), after.end()).size(), 2u);
    EXPECT_EQ(redis.cli({"--raw", "XRANGE", "orders", "-", "+", "COUNT", "1"}).find("payload\nd") != std::string::npos,
              true);
}

INSTANTIATE_TEST_SUITE_P(Backends, OutboxTest, ::testing::Values(Backend::sqlite, Backend::postgresql), backend_name);

}  // namespace
}  // namespace fencelock::test_support

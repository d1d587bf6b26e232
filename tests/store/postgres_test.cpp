// PostgreSQL-only behaviour: a COMMIT whose connection dies is *unknown*, a connection lost
// before COMMIT is rolled back, deadlocks are retried.
#include <atomic>
#include <barrier>
#include <thread>

#include "store_fixture.hpp"

namespace fencelock::test_support {
namespace {

using F = FencingToken;
using Outcome = std::expected<void, StoreError>;

class PostgresTest : public ::testing::Test {
protected:
    void SetUp() override {
        db = std::make_unique<TestDatabase>(Backend::postgresql);
        store = std::make_unique<FencedStore>(open_store(db->url()));
        ASSERT_TRUE(store->init());
        ASSERT_EQ(store->create_resource(res("r"), "v0").value(), CreateStatus::created);
        db->execute(effects_table);
    }
    std::unique_ptr<TestDatabase> db;
    std::unique_ptr<FencedStore> store;
};

TEST_F(PostgresTest, ConnectionLostDuringCommitIsUnknownNotFailed) {
    // A deferred constraint trigger runs inside COMMIT and kills its own backend there: the
    // client sent COMMIT and never learns whether it happened.
    db->execute(
        "CREATE TABLE test_commit_killer (x int);"
        "CREATE FUNCTION test_kill_self() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NULL; END $$;"
        "CREATE CONSTRAINT TRIGGER test_kill_at_commit AFTER INSERT ON test_commit_killer "
        "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_kill_self();");
    auto r = store->transact(res("r"), F(5), {}, [](Transaction& tx) -> Outcome {
        if (auto e = tx.exec("INSERT INTO test_commit_killer VALUES (1)"); !e) return std::unexpected(e.error());
        return {};
    });
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, store_errc::commit_unknown) << r.error().detail;
    EXPECT_EQ(classify_store_error(r.error().code), failure_kind::outcome_unknown);
    // The store recovers: a fresh connection replaces the dead one.
    auto again = store->write(res("r"), F(6), "v6");
    ASSERT_TRUE(again) << again.error().detail;
    EXPECT_EQ(again->status, WriteStatus::applied);
}

TEST_F(PostgresTest, ConnectionLostBeforeCommitRollsBack) {
    const std::string before = db->snapshot();
    auto r = store->transact(res("r"), F(5), {}, [](Transaction& tx) -> Outcome {
        EXPECT_TRUE(tx.set_value("changed"));
        EXPECT_TRUE(tx.exec("INSERT INTO test_effects VALUES (1, 'x')"));
        if (auto e = tx.exec("SELECT pg_terminate_backend(pg_backend_pid())"); !e) return std::unexpected(e.error());
        return {};
    });
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, store_errc::connection_lost) << r.error().detail;
    EXPECT_EQ(classify_store_error(r.error().code), failure_kind::retryable);
    EXPECT_EQ(db->snapshot(), before);
    EXPECT_EQ(db->query("SELECT count(*) FROM test_effects"), "0\n");
}

// Two transactions lock two application rows in opposite order: PostgreSQL aborts one with a
// deadlock (40P01); transact() retries it and both commit.
void deadlock(FencedStore& store, unsigned& attempts_a, unsigned& attempts_b, StoreResult<TransactResult>& ra,
              StoreResult<TransactResult>& rb) {
    std::barrier both_locked_first(2);
    std::atomic<int> calls_a{0}, calls_b{0};
    auto mutation = [&](const char* first, const char* second, std::atomic<int>& calls) {
        return [&, first, second](Transaction& tx) -> Outcome {
            const bool first_attempt = calls++ == 0;
            if (auto e = tx.exec(std::string("UPDATE test_effects SET note = 'x' WHERE id = ") + first); !e)
                return std::unexpected(e.error());
            if (first_attempt) both_locked_first.arrive_and_wait();
            if (auto e = tx.exec(std::string("UPDATE test_effects SET note = 'y' WHERE id = ") + second); !e)
                return std::unexpected(e.error());
            return {};
        };
    };
    ASSERT_TRUE(store.create_resource(res("a")));
    ASSERT_TRUE(store.create_resource(res("b")));
    std::thread ta([&] { ra = store.transact(res("a"), F(1), {}, mutation("1", "2", calls_a)); });
    std::thread tb([&] { rb = store.transact(res("b"), F(1), {}, mutation("2", "1", calls_b)); });
    ta.join();
    tb.join();
    attempts_a = static_cast<unsigned>(calls_a.load());
    attempts_b = static_cast<unsigned>(calls_b.load());
}

TEST_F(PostgresTest, DeadlockIsRetried) {
    db->execute("INSERT INTO test_effects VALUES (1, ''), (2, '')");
    unsigned ca = 0, cb = 0;
    StoreResult<TransactResult> ra, rb;
    deadlock(*store, ca, cb, ra, rb);
    ASSERT_TRUE(ra) << ra.error().detail;
    ASSERT_TRUE(rb) << rb.error().detail;
    EXPECT_EQ(ra->status, TransactStatus::committed);
    EXPECT_EQ(rb->status, TransactStatus::committed);
    EXPECT_EQ(ra->attempts + rb->attempts, 3u) << "one of them was retried once";
    EXPECT_EQ(ca + cb, 3u);
}

TEST_F(PostgresTest, DeadlockWithoutRetriesIsExhausted) {
    store = std::make_unique<FencedStore>(open_store(db->url(), StoreOptions{.max_attempts = 1}));
    db->execute("INSERT INTO test_effects VALUES (1, ''), (2, '')");
    unsigned ca = 0, cb = 0;
    StoreResult<TransactResult> ra, rb;
    deadlock(*store, ca, cb, ra, rb);
    ASSERT_NE(ra.has_value(), rb.has_value()) << "exactly one of them loses";
    const auto& lost = ra ? rb : ra;
    EXPECT_EQ(lost.error().code, store_errc::serialization_exhausted) << lost.error().detail;
    // The loser changed nothing: its resource still has last_fence 0.
    EXPECT_EQ(db->query("SELECT count(*) FROM fencelock_resources WHERE last_fence = 0 AND resource IN ('a','b')"), "1\n");
}

}  // namespace
}  // namespace fencelock::test_support

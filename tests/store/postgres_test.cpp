// PostgreSQL-only behaviour: a COMMIT whose connection dies is *unknown*, a connection lost
// before COMMIT is rolled back, deadlocks are retried, a second transaction waits for ours.
#include <atomic>
#include <barrier>
#include <chrono>
#include <future>
#include <semaphore>
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
    // PostgreSQL aborts one of them, and rarely, on a loaded machine, both (each backend's
    // deadlock check can find the cycle before the other's abort has released its locks).
    EXPECT_GE(ra->attempts + rb->attempts, 3u) << "one of them at least was retried";
    EXPECT_EQ(ra->attempts + rb->attempts, ca + cb) << "attempts counts every run of the mutation";
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
    EXPECT_EQ(db->query("SELECT count(*) FROM fencelock_resources WHERE last_fence = 0 AND resource IN ('a','b')"),
              "1\n");
}

// What a second transact() sees while ours is open. The guard raises last_fence in the
// transaction's first statement; the row lock it takes is held to COMMIT, so the other
// transaction waits, then sees our raised fence, or after our rollback the old one: the raise
// is never visible early and a rollback takes it back.
class GuardWaitTest : public PostgresTest {
protected:
    void SetUp() override {
        PostgresTest::SetUp();
        ASSERT_EQ(store->write(res("r"), F(3), "v3")->status, WriteStatus::applied);
    }

    /// Blocks until `n` backends of this database wait for a lock (the second guard on ours).
    void wait_for_lock_waiters(int n) {
        const std::string want = std::to_string(n) + "\n";
        while (db->query("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                         "AND wait_event_type = 'Lock'") != want)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }

    struct Second {
        StoreResult<TransactResult> result;
        std::string value_seen;  ///< tx.value() in the second mutation: the row its guard locked
    };

    /// transact(5) sets "v5" and holds its transaction open until the second transact(fence)
    /// waits on the row; then it commits (or, `roll_back`, fails and rolls back).
    Second race(FencingToken second_fence, bool roll_back) {
        std::binary_semaphore inside(0), release(0);
        auto first = std::async(std::launch::async, [&] {
            return store->transact(res("r"), F(5), {}, [&](Transaction& tx) -> Outcome {
                if (auto r = tx.set_value("v5"); !r) return std::unexpected(r.error());
                inside.release();
                release.acquire();
                if (roll_back)
                    return std::unexpected(StoreError{std::make_error_code(std::errc::operation_canceled), "no"});
                return {};
            });
        });
        inside.acquire();
        EXPECT_EQ(read_fence_outside(), 3u) << "the raise is not visible before COMMIT";
        auto second = std::async(std::launch::async, [&] {
            Second out;
            out.result = store->transact(res("r"), second_fence, {}, [&](Transaction& tx) -> Outcome {
                out.value_seen = std::string(tx.value());
                return tx.set_value("v" + std::to_string(tx.fence().value()));
            });
            return out;
        });
        wait_for_lock_waiters(1);
        release.release();
        auto f = first.get();
        EXPECT_TRUE(f) << f.error().detail;
        EXPECT_EQ(f->status, roll_back ? TransactStatus::aborted : TransactStatus::committed);
        return second.get();
    }

    std::uint64_t read_fence_outside() {
        return std::stoull(db->query("SELECT last_fence FROM fencelock_resources WHERE resource = 'r'"));
    }
};

TEST_F(GuardWaitTest, ANewerFenceWaitsAndThenSeesOurCommit) {
    auto s = race(F(7), false);
    ASSERT_TRUE(s.result) << s.result.error().detail;
    EXPECT_EQ(s.result->status, TransactStatus::committed);
    EXPECT_EQ(s.value_seen, "v5") << "its guard locked the row version our COMMIT left";
    EXPECT_EQ(read_fence_outside(), 7u);
}

TEST_F(GuardWaitTest, AnOlderFenceWaitsAndIsStaleAfterOurCommit) {
    auto s = race(F(4), false);
    ASSERT_TRUE(s.result) << s.result.error().detail;
    EXPECT_EQ(s.result->status, TransactStatus::stale);
    EXPECT_EQ(s.result->last_fence, F(5));
    EXPECT_EQ(read_fence_outside(), 5u);
    EXPECT_EQ(db->query("SELECT value FROM fencelock_resources WHERE resource = 'r'"), "v5\n");
}

// Fence 4 is older than ours (5) but newer than the committed 3: once we roll back, it is the
// newest fence the store ever accepted, and it must be accepted. It would be refused if the
// raise to 5 survived the rollback.
TEST_F(GuardWaitTest, AfterOurRollbackTheWaiterSeesTheOldFence) {
    auto s = race(F(4), true);
    ASSERT_TRUE(s.result) << s.result.error().detail;
    EXPECT_EQ(s.result->status, TransactStatus::committed);
    EXPECT_EQ(s.value_seen, "v3") << "our value was rolled back with the raise";
    EXPECT_EQ(read_fence_outside(), 4u);
}

}  // namespace
}  // namespace fencelock::test_support

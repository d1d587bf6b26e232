// Guarded transactions on both backends: commit, rollback on any failure, idempotency races.
#include <atomic>
#include <latch>
#include <thread>

#include "store_fixture.hpp"

namespace fencelock::test_support {
namespace {

using F = FencingToken;
using Outcome = std::expected<void, StoreError>;

class TransactTest : public StoreTest {
protected:
    void SetUp() override {
        StoreTest::SetUp();
        db->execute(effects_table);
    }
    /// A mutation that inserts an effect row, changes the value and publishes an event.
    static Mutation effect(std::int64_t id, const std::string& value) {
        return [id, value](Transaction& tx) -> Outcome {
            if (auto r = tx.exec("INSERT INTO test_effects (id, note) VALUES ($1, $2)",
                                 {std::to_string(id), "fence " + std::to_string(tx.fence().value())});
                !r)
                return std::unexpected(r.error());
            if (auto r = tx.set_value(value); !r) return std::unexpected(r.error());
            if (auto r = tx.publish("events", value); !r) return std::unexpected(r.error());
            tx.set_outcome("effect " + std::to_string(id));
            return {};
        };
    }
    std::string effects() { return db->query("SELECT id, note FROM test_effects ORDER BY id"); }
};

TEST_P(TransactTest, CommitsMutationsWithTheFence) {
    create("r", "v0");
    auto t = store->transact(res("r"), F(5), {}, effect(1, "v1"));
    ASSERT_TRUE(t) << t.error().detail;
    EXPECT_EQ(t->status, TransactStatus::committed);
    EXPECT_EQ(t->last_fence, F(5));
    EXPECT_EQ(t->attempts, 1u);
    EXPECT_EQ(read("r").value, "v1");
    EXPECT_EQ(read("r").last_fence, F(5));
    EXPECT_EQ(effects(), "1|fence 5\n");
    // Placeholders may appear out of order and repeat, on both backends.
    auto t2 = store->transact(res("r"), F(6), {}, [](Transaction& tx) -> Outcome {
        auto r = tx.exec("SELECT CAST($2 AS TEXT) || CAST($1 AS TEXT) || $2", {"a", "b"});
        if (!r) return std::unexpected(r.error());
        tx.set_outcome(*r->rows.at(0).at(0));
        EXPECT_EQ(tx.value(), "v1");  // the value read under the guard lock
        return {};
    });
    ASSERT_TRUE(t2) << t2.error().detail;
    EXPECT_EQ(t2->status, TransactStatus::committed);
}

TEST_P(TransactTest, StaleAndNotFoundRunNothing) {
    create("r");
    ASSERT_EQ(store->write(res("r"), F(10), "ten")->status, WriteStatus::applied);
    bool ran = false;
    auto probe = [&](Transaction&) -> Outcome {
        ran = true;
        return {};
    };
    auto stale = store->transact(res("r"), F(10), {}, probe);
    ASSERT_TRUE(stale);
    EXPECT_EQ(stale->status, TransactStatus::stale);
    EXPECT_EQ(stale->last_fence, F(10));
    auto nf = store->transact(res("missing"), F(10), {}, probe);
    ASSERT_TRUE(nf);
    EXPECT_EQ(nf->status, TransactStatus::not_found);
    EXPECT_FALSE(ran);
    // Same-owner rule in transact.
    const auto a = owner("holder-a");
    EXPECT_EQ(store->transact(res("r"), F(11), {.owner = a}, probe)->status, TransactStatus::committed);
    EXPECT_EQ(store->transact(res("r"), F(11), {.owner = a}, probe)->status, TransactStatus::committed);
    EXPECT_EQ(store->transact(res("r"), F(11), {.owner = owner("holder-b")}, probe)->status, TransactStatus::stale);
    EXPECT_EQ(store->transact(res("r"), F(11), {}, probe)->status, TransactStatus::stale);
}

TEST_P(TransactTest, FailingMutationLeavesDataAndFenceUnchanged) {
    create("r", "v0");
    ASSERT_EQ(store->write(res("r"), F(3), "v3")->status, WriteStatus::applied);
    const std::string before = db->snapshot();

    // 1. The mutation decides to fail after doing everything.
    const Mutation give_up = [](Transaction& tx) -> Outcome {
        EXPECT_TRUE(effect(1, "changed")(tx));
        return std::unexpected(StoreError{std::make_error_code(std::errc::operation_canceled), "business rule"});
    };
    auto aborted = store->transact(res("r"), F(4), {.idempotency_key = "k"}, give_up);
    ASSERT_TRUE(aborted) << aborted.error().detail;
    EXPECT_EQ(aborted->status, TransactStatus::aborted);
    ASSERT_TRUE(aborted->cause);
    EXPECT_EQ(aborted->cause->detail, "business rule");

    // 2. A statement fails (duplicate primary key) and the mutation ignores it.
    const Mutation sloppy = [](Transaction& tx) -> Outcome {
        EXPECT_TRUE(tx.set_value("changed"));
        EXPECT_TRUE(tx.exec("INSERT INTO test_effects (id, note) VALUES (1, 'a')"));
        EXPECT_FALSE(tx.exec("INSERT INTO test_effects (id, note) VALUES (1, 'b')"));
        EXPECT_FALSE(tx.publish("events", "after the failure"));  // poisoned: not even sent
        return {};
    };
    auto failed = store->transact(res("r"), F(5), {.idempotency_key = "k"}, sloppy);
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error().code, store_errc::statement_failed) << failed.error().detail;

    // 3. The mutation throws.
    const Mutation thrower = [](Transaction& tx) -> Outcome {
        EXPECT_TRUE(effect(1, "changed")(tx));
        throw std::runtime_error("bug in the mutation");
    };
    EXPECT_THROW((void)store->transact(res("r"), F(6), {.idempotency_key = "k"}, thrower), std::runtime_error);

    EXPECT_EQ(db->snapshot(), before);
    EXPECT_EQ(effects(), "");
    EXPECT_EQ(read("r").value, "v3");
    EXPECT_EQ(read("r").last_fence, F(3));
    // The store (and its pooled connections) still work, and the key was never recorded.
    auto ok = store->transact(res("r"), F(4), {.idempotency_key = "k"}, effect(2, "v4"));
    ASSERT_TRUE(ok) << ok.error().detail;
    EXPECT_EQ(ok->status, TransactStatus::committed);
}

// A stale or not-found transaction leaves every fencelock table as it was: the guard raised
// nothing, not even updated_at of the guard row, and created no row.
TEST_P(TransactTest, StaleAndNotFoundChangeNothingNotEvenTheGuardRow) {
    create("r", "v0");
    ASSERT_EQ(store->write(res("r"), F(10), "ten", {.owner = owner("holder-a")})->status, WriteStatus::applied);
    const std::string before = db->snapshot();
    for (const FencingToken fence : {F(1), F(9), F(10)}) {
        auto stale = store->transact(res("r"), fence, {.idempotency_key = "k"}, effect(1, "changed"));
        ASSERT_TRUE(stale) << stale.error().detail;
        EXPECT_EQ(stale->status, TransactStatus::stale);
        EXPECT_EQ(stale->last_fence, F(10));
    }
    auto other_owner = store->transact(res("r"), F(10), {.owner = owner("holder-b")}, effect(1, "changed"));
    ASSERT_TRUE(other_owner) << other_owner.error().detail;
    EXPECT_EQ(other_owner->status, TransactStatus::stale);
    auto missing = store->transact(res("missing"), F(11), {}, effect(1, "changed"));
    ASSERT_TRUE(missing) << missing.error().detail;
    EXPECT_EQ(missing->status, TransactStatus::not_found);
    EXPECT_EQ(db->snapshot(), before);
    EXPECT_EQ(effects(), "");
}

// The guard raises the fence at the start of the transaction; a mutation that fails after it
// takes the raise back with everything else, so the same fence can be used again.
TEST_P(TransactTest, AFailedMutationRollsBackTheRaiseAndTheFenceCanBeUsedAgain) {
    create("r", "v0");
    ASSERT_EQ(store->write(res("r"), F(3), "v3")->status, WriteStatus::applied);
    const std::string before = db->snapshot();
    const Mutation refuses = [](Transaction& tx) -> Outcome {
        if (auto r = effect(1, "changed")(tx); !r) return r;
        return std::unexpected(StoreError{std::make_error_code(std::errc::operation_canceled), "business rule"});
    };
    const Mutation breaks = [](Transaction& tx) -> Outcome {
        if (auto r = effect(1, "changed")(tx); !r) return r;
        if (auto r = tx.exec("INSERT INTO test_effects (id, note) VALUES (1, 'twice')"); !r)
            return std::unexpected(r.error());
        return {};
    };
    auto aborted = store->transact(res("r"), F(4), {}, refuses);
    ASSERT_TRUE(aborted) << aborted.error().detail;
    EXPECT_EQ(aborted->status, TransactStatus::aborted);
    EXPECT_EQ(db->snapshot(), before);
    auto failed = store->transact(res("r"), F(4), {}, breaks);
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error().code, store_errc::statement_failed) << failed.error().detail;
    EXPECT_EQ(db->snapshot(), before);
    EXPECT_EQ(read("r").last_fence, F(3));
    auto again = store->transact(res("r"), F(4), {}, effect(2, "v4"));
    ASSERT_TRUE(again) << again.error().detail;
    EXPECT_EQ(again->status, TransactStatus::committed);
    EXPECT_EQ(read("r").last_fence, F(4));
    EXPECT_EQ(read("r").value, "v4");
    EXPECT_EQ(effects(), "2|fence 4\n");
}

// Regression: the fence raise ran unconditionally. A mutation that ended the transaction
// itself (COMMIT or ROLLBACK) made the raise run outside the guard's row lock, in autocommit:
// a newer holder's fence 9 written meanwhile was lowered to 5, transact() reported committed
// and a stale fence-7 write was accepted afterwards. A conditional raise alone was not enough
// either: COMMIT, a stale fence-7 write, then BEGIN, and transact(10) reported committed with
// the stale value in place. Now a statement that ends or restarts the transaction is refused
// before it runs, and the transaction is checked to be open after every statement.
class TransactEndedTest : public TransactTest {
protected:
    /// transact(fence 5) whose mutation writes, then tries `ending`: refused, nothing changed.
    void expect_refused_and_nothing_changed(const std::string& ending) {
        SCOPED_TRACE(ending);
        create("r", "v0");
        ASSERT_EQ(store->write(res("r"), F(4), "v4")->status, WriteStatus::applied);
        const std::string before = db->snapshot();
        bool ran_after = false;
        auto t = store->transact(res("r"), F(5), {}, [&](Transaction& tx) -> Outcome {
            if (auto r = tx.set_value("v5"); !r) return std::unexpected(r.error());
            if (auto r = tx.exec(ending); !r) return std::unexpected(r.error());
            ran_after = true;
            return {};
        });
        ASSERT_FALSE(t) << "reported " << to_string(t->status);
        EXPECT_EQ(t.error().code, store_errc::transaction_broken) << t.error().detail;
        EXPECT_EQ(classify_store_error(t.error().code), failure_kind::fatal);
        EXPECT_FALSE(ran_after) << "the refused statement must fail the mutation's call";
        EXPECT_EQ(db->snapshot(), before) << "everything the mutation did is rolled back";
        auto stale = store->write(res("r"), F(3), "stale");
        ASSERT_TRUE(stale) << stale.error().detail;
        EXPECT_EQ(to_string(stale->status), "stale");
        // The store still works: the session went back to the pool outside any transaction.
        EXPECT_EQ(store->transact(res("r"), F(9), {}, effect(++effects_, "v9"))->status, TransactStatus::committed);
        EXPECT_EQ(read("r").last_fence.value(), 9u);
        db->execute("DELETE FROM fencelock_resources");
    }
    std::int64_t effects_ = 0;
};

TEST_P(TransactEndedTest, StatementsThatEndOrRestartTheTransactionAreRefusedBeforeTheyRun) {
    for (const char* ending :
         {"COMMIT", "commit", "ROLLBACK", "ROLLBACK TRANSACTION", "END", "ABORT", "BEGIN", "START TRANSACTION",
          "COMMIT AND CHAIN", "PREPARE TRANSACTION 'x'", "  /* quiet */ COMMIT", "-- a comment\nCOMMIT"}) {
        expect_refused_and_nothing_changed(ending);
    }
}

// Savepoints stay inside the transaction: allowed.
TEST_P(TransactEndedTest, SavepointsStayAllowed) {
    create("r", "v0");
    auto t = store->transact(res("r"), F(5), {}, [&](Transaction& tx) -> Outcome {
        for (const char* sql : {"SAVEPOINT s1", "ROLLBACK TO SAVEPOINT s1", "RELEASE SAVEPOINT s1"})
            if (auto r = tx.exec(sql); !r) return std::unexpected(r.error());
        return tx.set_value("v5");
    });
    ASSERT_TRUE(t) << t.error().detail;
    EXPECT_EQ(t->status, TransactStatus::committed);
    EXPECT_EQ(read("r").value, "v5");
}

// SQLite ran only the first of several statements and said nothing; PostgreSQL refuses them.
// Both refuse now, and nothing of the mutation stays.
TEST_P(TransactEndedTest, SeveralStatementsInOneCallAreRefusedOnBothBackends) {
    create("r", "v0");
    const std::string before = db->snapshot();
    auto t = store->transact(res("r"), F(5), {}, [&](Transaction& tx) -> Outcome {
        if (auto r = tx.exec("INSERT INTO test_effects VALUES (1, 'a'); INSERT INTO test_effects VALUES (2, 'b')"); !r)
            return std::unexpected(r.error());
        return {};
    });
    ASSERT_FALSE(t) << "reported " << to_string(t->status);
    EXPECT_EQ(t.error().code, store_errc::statement_failed) << t.error().detail;
    EXPECT_EQ(db->snapshot(), before);
    EXPECT_EQ(db->query("SELECT count(*) FROM test_effects"), "0\n");
}

// A mutation that deletes the guard row, or moves its fence (down here), leaves a row the guard
// did not vouch for: an error, rolled back.
TEST_P(TransactEndedTest, MutationThatDeletesTheGuardRowOrMovesItsFenceIsAnError) {
    for (const char* sql : {"DELETE FROM fencelock_resources WHERE resource = $1",
                            "UPDATE fencelock_resources SET last_fence = 1 WHERE resource = $1"}) {
        SCOPED_TRACE(sql);
        create("r", "v0");
        const std::string before = db->snapshot();
        auto t = store->transact(res("r"), F(5), {}, [&](Transaction& tx) -> Outcome {
            if (auto r = tx.exec(sql, {tx.resource()}); !r) return std::unexpected(r.error());
            return {};
        });
        ASSERT_FALSE(t) << to_string(t->status);
        EXPECT_EQ(t.error().code, store_errc::transaction_broken) << t.error().detail;
        EXPECT_EQ(db->snapshot(), before);
        db->execute("DELETE FROM fencelock_resources");
    }
}

// The guard raises last_fence in the transaction's first statement (one round trip less than a
// SELECT ... FOR UPDATE and a raise before COMMIT): the mutation already sees its own fence.
TEST_P(TransactEndedTest, TheMutationSeesTheFenceAlreadyRaised) {
    create("r", "v0");
    std::string seen;
    auto t = store->transact(res("r"), F(5), {}, [&](Transaction& tx) -> Outcome {
        auto r = tx.exec("SELECT last_fence FROM fencelock_resources WHERE resource = $1", {tx.resource()});
        if (!r) return std::unexpected(r.error());
        seen = r->rows.at(0).at(0).value_or("");
        return {};
    });
    ASSERT_TRUE(t) << t.error().detail;
    EXPECT_EQ(t->status, TransactStatus::committed);
    EXPECT_EQ(seen, "5");
}

INSTANTIATE_TEST_SUITE_P(Backends, TransactEndedTest, ::testing::Values(Backend::sqlite, Backend::postgresql),
                         backend_name);

TEST_P(TransactTest, DuplicateKeyReturnsTheFirstOutcome) {
    create("r");
    auto first = store->transact(res("r"), F(1), {.idempotency_key = "job"}, effect(1, "one"));
    ASSERT_TRUE(first) << first.error().detail;
    EXPECT_EQ(first->status, TransactStatus::committed);
    bool ran = false;
    auto dup = store->transact(res("r"), F(2), {.idempotency_key = "job"}, [&](Transaction&) -> Outcome {
        ran = true;
        return {};
    });
    ASSERT_TRUE(dup) << dup.error().detail;
    EXPECT_EQ(dup->status, TransactStatus::duplicate);
    EXPECT_FALSE(ran);
    ASSERT_TRUE(dup->first);
    EXPECT_EQ(dup->first->outcome, "effect 1");
    EXPECT_EQ(dup->first->fence, F(1));
    EXPECT_EQ(read("r").last_fence, F(1));
}

// Eight workers race with the same key (and different fences): exactly one effect.
TEST_P(TransactTest, RacingWorkersWithOneKeyApplyOnce) {
    create("r");
    create("w");
    constexpr int workers = 8;
    std::latch start(workers);
    std::vector<StoreResult<TransactResult>> results(workers);
    std::vector<StoreResult<WriteResult>> writes(workers);
    std::vector<std::thread> threads;
    for (int i = 0; i < workers; ++i) {
        threads.emplace_back([&, i] {
            start.arrive_and_wait();
            const F fence(static_cast<std::uint64_t>(10 + i));
            results[i] = store->transact(res("r"), fence, {.idempotency_key = "job-42"}, effect(100 + i, "v"));
            writes[i] = store->write(res("w"), fence, "by " + std::to_string(i), {.idempotency_key = "write-42"});
        });
    }
    for (auto& t : threads) t.join();
    int committed = 0, duplicate = 0, applied = 0, wdup = 0;
    std::string winner;
    for (int i = 0; i < workers; ++i) {
        ASSERT_TRUE(results[i]) << results[i].error().detail;
        ASSERT_TRUE(writes[i]) << writes[i].error().detail;
        if (results[i]->status == TransactStatus::committed) {
            ++committed;
            winner = "effect " + std::to_string(100 + i);
        }
        if (results[i]->status == TransactStatus::duplicate) ++duplicate;
        if (writes[i]->status == WriteStatus::applied) ++applied;
        if (writes[i]->status == WriteStatus::duplicate) ++wdup;
    }
    EXPECT_EQ(committed, 1);
    EXPECT_EQ(duplicate, workers - 1);
    EXPECT_EQ(applied, 1);
    EXPECT_EQ(wdup, workers - 1);
    for (auto& r : results)
        if (r->status == TransactStatus::duplicate) {
            EXPECT_EQ(r->first->outcome, winner);
        }
    EXPECT_EQ(db->query("SELECT count(*) FROM test_effects"), "1\n");
    EXPECT_EQ(db->query("SELECT count(*) FROM fencelock_outbox"), "1\n");
}

INSTANTIATE_TEST_SUITE_P(Backends, TransactTest, ::testing::Values(Backend::sqlite, Backend::postgresql), backend_name);

}  // namespace
}  // namespace fencelock::test_support

// The FencedStore contract, run on both backends: schema, conditional write, same-owner rule,
// the stale-worker story and the claim interleaving.
#include <latch>
#include <thread>

#include "store_fixture.hpp"

namespace fencelock::test_support {
namespace {

using F = FencingToken;

TEST_P(StoreTest, InitIsIdempotentAndRecordsTheVersion) {
    create("r");
    auto again = store->init();
    ASSERT_TRUE(again) << again.error().detail;
    EXPECT_EQ(*again, 1);
    EXPECT_EQ(db->query("SELECT version FROM fencelock_schema"), "1\n");
    EXPECT_EQ(read("r").last_fence, F(0));  // data survives a second init
}

TEST_P(StoreTest, OtherSchemaVersionIsRefused) {
    db->execute("UPDATE fencelock_schema SET version = 99");
    auto fresh = open_store(db->url());
    auto r = fresh.read(res("r"));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, store_errc::invalid_schema);
    auto i = fresh.init();
    ASSERT_FALSE(i);
    EXPECT_EQ(i.error().code, store_errc::invalid_schema);
}

TEST_P(StoreTest, CreateAndRead) {
    create("order-1", "v0");
    auto again = store->create_resource(res("order-1"), "other");
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, CreateStatus::exists);
    Record r = read("order-1");
    EXPECT_EQ(r.value, "v0");
    EXPECT_EQ(r.last_fence, F(0));
    EXPECT_FALSE(r.last_owner);
    auto missing = store->read(res("nope"));
    ASSERT_TRUE(missing);
    EXPECT_FALSE(*missing);
}

// Regression: the default empty value was bound as SQL NULL on SQLite and refused.
TEST_P(StoreTest, CreateWithTheDefaultValueStoresAnEmptyValue) {
    auto created = store->create_resource(res("empty"));
    ASSERT_TRUE(created) << created.error().detail;
    EXPECT_EQ(*created, CreateStatus::created);
    EXPECT_EQ(read("empty").value, "");
    auto written = store->write(res("empty"), F(1), std::string_view{});
    ASSERT_TRUE(written) << written.error().detail;
    EXPECT_EQ(written->status, WriteStatus::applied);
    EXPECT_EQ(read("empty").value, "");
}

TEST_P(StoreTest, WriteTellsAppliedStaleAndNotFoundApart) {
    create("r", "v0");
    auto a = store->write(res("r"), F(5), "v5");
    ASSERT_TRUE(a) << a.error().detail;
    EXPECT_EQ(a->status, WriteStatus::applied);
    EXPECT_EQ(a->last_fence, F(5));

    for (std::uint64_t older : {5u, 4u, 1u}) {
        auto s = store->write(res("r"), F(older), "old");
        ASSERT_TRUE(s);
        EXPECT_EQ(s->status, WriteStatus::stale) << older;
        EXPECT_EQ(s->last_fence, F(5)) << "stale returns the current last_fence";
    }
    auto nf = store->write(res("missing"), F(100), "x");
    ASSERT_TRUE(nf);
    EXPECT_EQ(nf->status, WriteStatus::not_found);
    EXPECT_EQ(nf->last_fence, F(0));
    EXPECT_FALSE(store->read(res("missing")).value()) << "not_found must not create the row";

    Record r = read("r");
    EXPECT_EQ(r.value, "v5");
    EXPECT_EQ(r.last_fence, F(5));
    auto gap = store->write(res("r"), F(1000), "v1000");  // gaps are normal
    ASSERT_TRUE(gap);
    EXPECT_EQ(gap->status, WriteStatus::applied);
}

// A fence no lease can carry (above 2^53 - 1) is refused before anything is sent: accepted, it
// would leave the row refusing every real fence for good.
TEST_P(StoreTest, FencesAboveTheIssuingCapAreRefusedAndChangeNothing) {
    create("r", "v0");
    ASSERT_EQ(store->write(res("r"), F(max_fence), "top")->status, WriteStatus::applied) << "the cap itself is a fence";
    const std::string before = db->snapshot();
    const Mutation transact_noop = [](Transaction&) -> std::expected<void, StoreError> { return {}; };
    for (const std::uint64_t bogus : {max_fence + 1, std::uint64_t{1} << 62, std::uint64_t{9223372036854775807u}}) {
        try {
            (void)store->write(res("r"), F(bogus), "bogus");
            ADD_FAILURE() << "write accepted fence " << bogus;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("9007199254740991"), std::string::npos) << e.what();
        }
        EXPECT_THROW((void)store->claim(res("r"), F(bogus), owner("o")), std::invalid_argument);
        EXPECT_THROW((void)store->transact(res("r"), F(bogus), {}, transact_noop), std::invalid_argument);
    }
    EXPECT_EQ(db->snapshot(), before) << "a refused fence changed a table";
}

TEST_P(StoreTest, SameOwnerRuleIsOptIn) {
    create("r");
    const auto a = owner("owner-a"), b = owner("owner-b");
    ASSERT_EQ(store->write(res("r"), F(7), "1", {.owner = a})->status, WriteStatus::applied);
    EXPECT_EQ(read("r").last_owner, "owner-a");
    // Several writes under one lease: same fence, same owner.
    ASSERT_EQ(store->write(res("r"), F(7), "2", {.owner = a})->status, WriteStatus::applied);
    // Another owner with the same fence, or the same fence without an owner (strict): stale.
    EXPECT_EQ(store->write(res("r"), F(7), "x", {.owner = b})->status, WriteStatus::stale);
    EXPECT_EQ(store->write(res("r"), F(7), "x")->status, WriteStatus::stale);
    EXPECT_EQ(read("r").value, "2");
    // A strict write with a newer fence clears the owner; the old owner's equal fence is over.
    ASSERT_EQ(store->write(res("r"), F(8), "3")->status, WriteStatus::applied);
    EXPECT_FALSE(read("r").last_owner);
    EXPECT_EQ(store->write(res("r"), F(8), "x", {.owner = a})->status, WriteStatus::stale);
    EXPECT_EQ(read("r").value, "3");
}

// The stale-worker story, made reproducible with latches instead of sleeps.
TEST_P(StoreTest, StaleWorkerIsRejectedAndTheNewerValueStays) {
    create("invoice-7", "draft");
    std::latch a_has_fence(1), b_wrote(1);
    StoreResult<WriteResult> a_result, b_result;
    std::thread worker_a([&] {
        const F fence(41);  // A acquires the lease with fence 41...
        a_has_fence.count_down();
        b_wrote.wait();  // ...and stalls (GC pause, slow I/O) while its lease expires.
        a_result = store->write(res("invoice-7"), fence, "written by A");
    });
    std::thread worker_b([&] {
        a_has_fence.wait();  // A's lease has expired; B acquires with fence 42 and writes.
        b_result = store->write(res("invoice-7"), F(42), "written by B");
        b_wrote.count_down();
    });
    worker_a.join();
    worker_b.join();
    ASSERT_TRUE(b_result) << b_result.error().detail;
    EXPECT_EQ(b_result->status, WriteStatus::applied);
    ASSERT_TRUE(a_result) << a_result.error().detail;
    EXPECT_EQ(a_result->status, WriteStatus::stale);
    EXPECT_EQ(a_result->last_fence, F(42));
    Record r = read("invoice-7");
    EXPECT_EQ(r.value, "written by B");
    EXPECT_EQ(r.last_fence, F(42));
}

// Item 5: fencing only the write does not protect a read-think-write cycle...
TEST_P(StoreTest, WithoutClaimAnOlderHolderWritesBetweenReadAndWrite) {
    create("acct", "100");
    ASSERT_EQ(store->write(res("acct"), F(40), "100")->status, WriteStatus::applied);
    const std::string b_saw = read("acct").value;                                        // B (fence 42) reads: 100
    EXPECT_EQ(store->write(res("acct"), F(41), "100-A")->status, WriteStatus::applied);  // A sneaks in
    EXPECT_EQ(store->write(res("acct"), F(42), b_saw + "+B")->status, WriteStatus::applied);
    EXPECT_EQ(read("acct").value, "100+B") << "A's change is lost: both writes were accepted";
}

// ...a claim does: it raises last_fence at read time.
TEST_P(StoreTest, ClaimRejectsTheOlderHolderAndAdmitsTheClaimersWrite) {
    create("acct", "100");
    ASSERT_EQ(store->write(res("acct"), F(40), "100")->status, WriteStatus::applied);
    const auto b = owner("worker-b");
    auto claimed = store->claim(res("acct"), F(42), b);  // B reads with its fence
    ASSERT_TRUE(claimed) << claimed.error().detail;
    EXPECT_EQ(claimed->status, ClaimStatus::claimed);
    EXPECT_EQ(claimed->value, "100");
    EXPECT_EQ(claimed->last_fence, F(42));

    auto a = store->write(res("acct"), F(41), "100-A");  // A is now stale
    ASSERT_TRUE(a);
    EXPECT_EQ(a->status, WriteStatus::stale);
    EXPECT_EQ(a->last_fence, F(42));
    EXPECT_EQ(store->write(res("acct"), F(42), "x", {.owner = owner("worker-c")})->status, WriteStatus::stale);
    auto bw = store->write(res("acct"), F(42), claimed->value + "+B", {.owner = b});
    ASSERT_TRUE(bw);
    EXPECT_EQ(bw->status, WriteStatus::applied);
    EXPECT_EQ(read("acct").value, "100+B");
    EXPECT_EQ(read("acct").last_fence, F(42));

    // Claims follow the same rules: re-claim by the same owner is fine, older or foreign is stale.
    EXPECT_EQ(store->claim(res("acct"), F(42), b)->status, ClaimStatus::claimed);
    auto older = store->claim(res("acct"), F(41), owner("worker-a"));
    ASSERT_TRUE(older);
    EXPECT_EQ(older->status, ClaimStatus::stale);
    EXPECT_EQ(older->last_fence, F(42));
    EXPECT_EQ(store->claim(res("acct"), F(42), owner("worker-c"))->status, ClaimStatus::stale);
    EXPECT_EQ(store->claim(res("nope"), F(50), b)->status, ClaimStatus::not_found);
    // A newer claim makes B's pending write stale in turn.
    EXPECT_EQ(store->claim(res("acct"), F(43), owner("worker-d"))->status, ClaimStatus::claimed);
    EXPECT_EQ(store->write(res("acct"), F(42), "late", {.owner = b})->status, WriteStatus::stale);
    EXPECT_EQ(read("acct").value, "100+B");
}

TEST_P(StoreTest, IdempotentWriteAppliesOnceAndReturnsTheFirstCompletion) {
    create("r");
    auto first = store->write(res("r"), F(3), "first", {.idempotency_key = "job-1"});
    ASSERT_TRUE(first) << first.error().detail;
    EXPECT_EQ(first->status, WriteStatus::applied);
    // The same job again, even under a newer lease: nothing applied, first completion returned.
    auto again = store->write(res("r"), F(9), "second", {.idempotency_key = "job-1"});
    ASSERT_TRUE(again) << again.error().detail;
    EXPECT_EQ(again->status, WriteStatus::duplicate);
    EXPECT_EQ(again->last_fence, F(3));
    ASSERT_TRUE(again->first);
    EXPECT_EQ(again->first->outcome, "first");
    EXPECT_EQ(again->first->fence, F(3));
    EXPECT_EQ(again->first->resource, "r");
    EXPECT_EQ(read("r").value, "first");
    // A stale or not_found attempt records no key: the job can still complete later.
    EXPECT_EQ(store->write(res("r"), F(2), "x", {.idempotency_key = "job-2"})->status, WriteStatus::stale);
    EXPECT_EQ(store->write(res("r"), F(4), "job2", {.idempotency_key = "job-2"})->status, WriteStatus::applied);
    EXPECT_EQ(db->query("SELECT key, fence, outcome FROM fencelock_idempotency ORDER BY key"),
              "job-1|3|first\njob-2|4|job2\n");
}

// The baseline the demo shows: with enforce_fencing = false the stale worker's write lands.
TEST_P(StoreTest, UnfencedStoreAcceptsTheStaleWrite) {
    create("r", "v0");
    auto unfenced = open_store(db->url(), StoreOptions{.enforce_fencing = false});
    ASSERT_EQ(unfenced.write(res("r"), F(42), "B")->status, WriteStatus::applied);
    ASSERT_EQ(unfenced.write(res("r"), F(41), "A")->status, WriteStatus::applied);
    EXPECT_EQ(read("r").value, "A") << "B's newer value is lost";
    EXPECT_EQ(read("r").last_fence, F(41));
    EXPECT_EQ(unfenced.claim(res("r"), F(1), owner("x"))->status, ClaimStatus::claimed);
    EXPECT_EQ(unfenced.transact(res("r"), F(1), {}, [](Transaction&) -> std::expected<void, StoreError> { return {}; })
                  ->status,
              TransactStatus::committed);
    EXPECT_EQ(unfenced.write(res("nope"), F(1), "x")->status, WriteStatus::not_found);
    // The default store still refuses it.
    EXPECT_EQ(store->write(res("r"), F(1), "late")->status, WriteStatus::stale);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::Values(Backend::sqlite, Backend::postgresql), backend_name);

}  // namespace
}  // namespace fencelock::test_support

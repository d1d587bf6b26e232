// Store text on both backends: every byte of a resource name, idempotency key, value, outcome,
// outbox stream and payload round-trips exactly, or the call is refused with invalid_input
// before anything is sent. Regression: PostgreSQL got parameters as C strings, so `R` and
// `R\0x` were one row there (and two on SQLite); names that are not UTF-8 failed every call.
#include <functional>

#include "store_fixture.hpp"

namespace fencelock::test_support {
namespace {

using F = FencingToken;
using Outcome = std::expected<void, StoreError>;

struct TextCase {
    const char* what;
    std::string bytes;
};

/// Valid UTF-8 without NUL: must round-trip byte for byte.
const std::vector<TextCase> valid = {
    {"quotes, backslash, placeholders", R"( 'b' "c" \d %00 $1 )"},
    {"two-byte", "caf\xc3\xa9"},
    {"three-byte", "\xe2\x82\xac"},
    {"four-byte", "\xf0\x9f\x94\x92"},
    {"U+10FFFF", "\xf4\x8f\xbf\xbf"},
};

/// Not store text: must be refused on both backends.
const std::vector<TextCase> invalid = {
    {"NUL in the middle", std::string("\0x", 2)},
    {"NUL at the end", std::string("\0", 1)},
    {"lone continuation byte", "\x80"},
    {"0xFF 0xFE", "\xff\xfe"},
    {"overlong NUL", "\xc0\x80"},
    {"overlong slash", "\xe0\x80\xaf"},
    {"UTF-16 surrogate", "\xed\xa0\x80"},
    {"above U+10FFFF", "\xf4\x90\x80\x80"},
    {"truncated sequence", "\xe2\x82"},
};

class TextTest : public StoreTest {
protected:
    template <typename T>
    void expect_refused(const StoreResult<T>& r, const std::string& what) {
        ASSERT_FALSE(r) << what << ": accepted";
        EXPECT_EQ(r.error().code, store_errc::invalid_input) << what << ": " << r.error().detail;
        EXPECT_EQ(classify_store_error(r.error().code), failure_kind::fatal);
    }
    Mutation probe(bool& ran) {
        return [&ran](Transaction&) -> Outcome {
            ran = true;
            return {};
        };
    }
};

TEST_P(TextTest, NulInAResourceNameDoesNotReachAnotherResource) {
    create("R");
    const std::string before = db->snapshot();
    expect_refused(store->write(res(std::string("R\0x", 3)), F(7), "by the other name"), "write R\\0x");
    EXPECT_EQ(db->snapshot(), before);
    auto holder = store->write(res("R"), F(6), "by the holder");
    ASSERT_TRUE(holder) << holder.error().detail;
    EXPECT_EQ(holder->status, WriteStatus::applied) << "the real holder's fence-6 write must not be stale";
}

TEST_P(TextTest, ResourceNamesRoundTripOrAreRefusedBeforeAnythingIsWritten) {
    create("R", "v0");
    std::uint64_t fence = 1;
    for (const auto& c : valid) {
        const std::string name = "R" + c.bytes;
        create(name, name);
        ASSERT_EQ(store->write(res(name), F(++fence), name)->status, WriteStatus::applied) << c.what;
        EXPECT_EQ(read(name).value, name) << c.what;
        EXPECT_EQ(store->claim(res(name), F(++fence), owner("o"))->status, ClaimStatus::claimed) << c.what;
        EXPECT_EQ(store->transact(res(name), F(++fence), {}, [](Transaction&) -> Outcome { return {}; })->status,
                  TransactStatus::committed)
            << c.what;
        EXPECT_EQ(read(name).last_fence, F(fence)) << c.what;
    }
    EXPECT_EQ(db->query("SELECT count(*) FROM fencelock_resources"), std::to_string(1 + valid.size()) + "\n");
    EXPECT_EQ(read("R").last_fence, F(0)) << "no other name reached R's row";

    const std::string before = db->snapshot();
    for (const auto& c : invalid) {
        const auto name = res("R" + c.bytes);
        bool ran = false;
        expect_refused(store->create_resource(name, "x"), std::string("create ") + c.what);
        expect_refused(store->read(name), std::string("read ") + c.what);
        expect_refused(store->write(name, F(100), "x"), std::string("write ") + c.what);
        expect_refused(store->write(name, F(100), "x", {.idempotency_key = "k"}), std::string("keyed write ") + c.what);
        expect_refused(store->claim(name, F(100), owner("o")), std::string("claim ") + c.what);
        expect_refused(store->transact(name, F(100), {}, probe(ran)), std::string("transact ") + c.what);
        EXPECT_FALSE(ran) << c.what;
    }
    EXPECT_EQ(db->snapshot(), before);
}

TEST_P(TextTest, IdempotencyKeysRoundTripOrAreRefused) {
    create("r");
    // Keys that differ only after a NUL were one key on PostgreSQL: one effect, one "duplicate".
    const std::string before = db->snapshot();
    expect_refused(store->write(res("r"), F(7), "a", {.idempotency_key = std::string("k\0a", 3)}), "write k\\0a");
    expect_refused(store->write(res("r"), F(8), "b", {.idempotency_key = std::string("k\0b", 3)}), "write k\\0b");
    for (const auto& c : invalid) {
        bool ran = false;
        const std::string key = "k" + c.bytes;
        expect_refused(store->write(res("r"), F(9), "x", {.idempotency_key = key}), std::string("write ") + c.what);
        expect_refused(store->transact(res("r"), F(9), {.idempotency_key = key}, probe(ran)),
                       std::string("transact ") + c.what);
        EXPECT_FALSE(ran) << c.what;
    }
    EXPECT_EQ(db->snapshot(), before);

    std::uint64_t fence = 10;
    for (const auto& c : valid) {
        const std::string key = "k" + c.bytes;
        ASSERT_EQ(store->write(res("r"), F(++fence), "w", {.idempotency_key = key + "w"})->status, WriteStatus::applied)
            << c.what;
        auto t = store->transact(res("r"), F(++fence), {.idempotency_key = key + "t"}, [&](Transaction& tx) -> Outcome {
            tx.set_outcome(key);
            return {};
        });
        ASSERT_EQ(t->status, TransactStatus::committed) << c.what;
        bool ran = false;
        auto dup = store->transact(res("r"), F(++fence), {.idempotency_key = key + "t"}, probe(ran));
        ASSERT_EQ(dup->status, TransactStatus::duplicate) << c.what;
        EXPECT_FALSE(ran) << c.what;
        EXPECT_EQ(dup->first->outcome, key) << c.what;
        EXPECT_EQ(store->write(res("r"), F(++fence), "w", {.idempotency_key = key + "w"})->status,
                  WriteStatus::duplicate)
            << c.what;
    }
    EXPECT_EQ(db->query("SELECT count(*) FROM fencelock_idempotency"), std::to_string(2 * valid.size()) + "\n");
}

TEST_P(TextTest, ValuesOutcomesAndOutboxTextRoundTripOrAreRefused) {
    db->execute(effects_table);
    create("r", "v0");
    std::uint64_t fence = 1;
    for (const auto& c : valid) {
        ASSERT_EQ(store->write(res("r"), F(++fence), c.bytes)->status, WriteStatus::applied) << c.what;
        EXPECT_EQ(read("r").value, c.bytes) << c.what;
        auto t = store->transact(res("r"), F(++fence), {}, [&](Transaction& tx) -> Outcome {
            if (auto r = tx.set_value(c.bytes + "t"); !r) return std::unexpected(r.error());
            if (auto r = tx.publish("s" + c.bytes, "p" + c.bytes); !r) return std::unexpected(r.error());
            if (auto r =
                    tx.exec("INSERT INTO test_effects (id, note) VALUES ($1, $2)", {std::to_string(fence), c.bytes});
                !r)
                return std::unexpected(r.error());
            return {};
        });
        ASSERT_TRUE(t) << c.what << ": " << t.error().detail;
        EXPECT_EQ(read("r").value, c.bytes + "t") << c.what;
        EXPECT_EQ(db->query("SELECT note FROM test_effects WHERE id = " + std::to_string(fence)), c.bytes + "\n");
    }
    auto events = store->pending_events(100);
    ASSERT_TRUE(events) << events.error().detail;
    ASSERT_EQ(events->size(), valid.size());
    for (std::size_t i = 0; i < valid.size(); ++i) {
        EXPECT_EQ((*events)[i].stream, "s" + valid[i].bytes) << valid[i].what;
        EXPECT_EQ((*events)[i].payload, "p" + valid[i].bytes) << valid[i].what;
    }

    const std::string before = db->snapshot();
    const std::string effects_before = db->query("SELECT count(*) FROM test_effects");
    using Step = std::function<StoreResult<void>(Transaction&, const std::string&)>;
    const std::vector<std::pair<const char*, Step>> steps = {
        {"set_value", [](Transaction& tx, const std::string& t) { return tx.set_value(t); }},
        {"publish stream",
         [](Transaction& tx, const std::string& t) -> StoreResult<void> {
             if (auto r = tx.publish(t, "{}"); !r) return std::unexpected(r.error());
             return {};
         }},
        {"publish payload",
         [](Transaction& tx, const std::string& t) -> StoreResult<void> {
             if (auto r = tx.publish("s", t); !r) return std::unexpected(r.error());
             return {};
         }},
        {"exec parameter",
         [](Transaction& tx, const std::string& t) -> StoreResult<void> {
             if (auto r = tx.exec("INSERT INTO test_effects (id, note) VALUES (1000, $1)", {t}); !r)
                 return std::unexpected(r.error());
             return {};
         }},
        {"set_outcome",
         [](Transaction& tx, const std::string& t) -> StoreResult<void> {
             tx.set_outcome(t);
             return {};
         }},
    };
    for (const auto& c : invalid) {
        const std::string what = c.what;
        expect_refused(store->write(res("r"), F(100), c.bytes), "write " + what);
        expect_refused(store->create_resource(res("new"), c.bytes), "create " + what);
        for (const auto& [step, run] : steps) {
            auto t = store->transact(res("r"), F(100), {.idempotency_key = "k"}, [&](Transaction& tx) -> Outcome {
                if (auto r = run(tx, c.bytes); !r) {
                    EXPECT_EQ(r.error().code, store_errc::invalid_input) << step << " " << what;
                    return std::unexpected(r.error());
                }
                return {};
            });
            expect_refused(t, std::string(step) + " " + what);
        }
    }
    EXPECT_EQ(db->snapshot(), before);
    EXPECT_EQ(db->query("SELECT count(*) FROM test_effects"), effects_before);
}

INSTANTIATE_TEST_SUITE_P(Backends, TextTest, ::testing::Values(Backend::sqlite, Backend::postgresql), backend_name);

}  // namespace
}  // namespace fencelock::test_support

// SQLite-only behaviour: the write lock taken up front, busy timeouts, a missing file.
#include "store/session.hpp"
#include "store_fixture.hpp"

namespace fencelock::test_support {
namespace {

using F = FencingToken;
using Outcome = std::expected<void, StoreError>;

TEST(SqliteStore, MissingFileIsUnavailableAndNotCreated) {
    const std::string path = "/tmp/fencelock-missing-" + std::to_string(::getpid()) + ".db";
    auto store = open_store("sqlite://" + path);
    auto r = store.write(res("r"), F(1), "x");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, store_errc::unavailable);
    EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(SqliteStore, WriterWaitsForTheLockThenTimesOut) {
    TestDatabase db(Backend::sqlite);
    auto store = open_store(db.url(), StoreOptions{.statement_timeout = std::chrono::milliseconds(200)});
    ASSERT_TRUE(store.init());
    ASSERT_TRUE(store.create_resource(res("r"), "v0"));
    // Another connection holds the write lock.
    auto url = parse_database_url(db.url()).value();
    auto holder = detail::open_session(url, StoreOptions{.url = db.url()}, false).value();
    ASSERT_TRUE(holder->exec_script("BEGIN IMMEDIATE"));
    const std::string before = db.snapshot();

    const auto start = std::chrono::steady_clock::now();
    auto w = store.write(res("r"), F(2), "v2");
    ASSERT_FALSE(w);
    EXPECT_EQ(w.error().code, store_errc::timeout) << w.error().detail;
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(150)) << "busy_timeout waited";
    auto t = store.transact(res("r"), F(2), {}, [](Transaction&) -> Outcome { return {}; });
    ASSERT_FALSE(t);
    EXPECT_EQ(t.error().code, store_errc::timeout);
    EXPECT_EQ(classify_store_error(t.error().code), failure_kind::retryable);

    ASSERT_TRUE(holder->exec_script("ROLLBACK"));
    EXPECT_EQ(db.snapshot(), before);
    EXPECT_EQ(store.write(res("r"), F(2), "v2")->status, WriteStatus::applied);
}

TEST(SqliteStore, InitUsesWriteAheadLogging) {
    TestDatabase db(Backend::sqlite);
    auto store = open_store(db.url());
    ASSERT_TRUE(store.init());
    EXPECT_EQ(db.query("PRAGMA journal_mode"), "wal\n");
}

}  // namespace
}  // namespace fencelock::test_support

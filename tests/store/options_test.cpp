// Pure tests: URL parsing, option validation, error classification. No database.
#include <gtest/gtest.h>

#include "fencelock/store.hpp"

namespace fencelock {
namespace {

TEST(DatabaseUrl, ParsesBothSchemes) {
    auto s = parse_database_url("sqlite:///var/lib/app/store.db");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->backend, StoreBackend::sqlite);
    EXPECT_EQ(s->target, "/var/lib/app/store.db");
    auto p = parse_database_url("postgresql://app:secret@db.example:5433/orders?sslmode=disable");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->backend, StoreBackend::postgresql);
    EXPECT_EQ(p->redacted(), "postgresql://app:***@db.example:5433/orders?sslmode=disable");
    EXPECT_TRUE(parse_database_url("postgres://u@h/d"));
}

TEST(DatabaseUrl, RejectsWhatItCannotUse) {
    for (const char* bad : {"", "mysql://h/d", "sqlite://", "/tmp/x.db", "sqlite:///x.db?mode=ro",
                            "postgresql://h/d?nosuchparam=1"}) {
        auto r = parse_database_url(bad);
        EXPECT_FALSE(r) << bad;
        if (!r) {
            EXPECT_EQ(r.error().message.find("secret"), std::string::npos);
        }
    }
    EXPECT_NE(parse_database_url("redis://x").error().message.find("unknown database URL scheme 'redis'"),
              std::string::npos);
}

TEST(StoreOptions, ValidateNamesTheField) {
    EXPECT_EQ(StoreOptions{}.validate().error().field, "url");
    const std::string u = "sqlite:///tmp/x.db";
    EXPECT_TRUE((StoreOptions{.url = u}.validate()));
    EXPECT_EQ((StoreOptions{.url = u, .statement_timeout = milliseconds(0)}.validate().error().field), "statement_timeout");
    EXPECT_EQ((StoreOptions{.url = u, .max_attempts = 0}.validate().error().field), "max_attempts");
    EXPECT_EQ((StoreOptions{.url = u, .pool_size = 0}.validate().error().field), "pool_size");
    EXPECT_FALSE(FencedStore::create(StoreOptions{.url = "mysql://x"}));
}

TEST(StoreErrors, ClassifiedByWhatTheCallerMustDo) {
    EXPECT_EQ(classify_store_error(store_errc::unavailable), failure_kind::retryable);
    EXPECT_EQ(classify_store_error(store_errc::connection_lost), failure_kind::retryable);
    EXPECT_EQ(classify_store_error(store_errc::commit_unknown), failure_kind::outcome_unknown);
    EXPECT_EQ(classify_store_error(store_errc::serialization_exhausted), failure_kind::retryable);
    EXPECT_EQ(classify_store_error(store_errc::invalid_schema), failure_kind::fatal);
    EXPECT_EQ(classify_store_error(errc::reply_timeout), failure_kind::outcome_unknown);
    EXPECT_EQ(to_name(store_errc::commit_unknown), "commit_unknown");
    EXPECT_STREQ(store_error_category().name(), "fencelock.store");
}

}  // namespace
}  // namespace fencelock

// Pure tests: URL parsing, option validation, error classification. No database.
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

TEST(StoreText, IsValidUtf8WithoutNul) {
    for (std::string ok : {std::string(), std::string("plain ascii ~!"), std::string("caf\xc3\xa9 \xe2\x82\xac"),
                           std::string("\xef\xbf\xbf \xf0\x90\x80\x80 \xf4\x8f\xbf\xbf")})
        EXPECT_TRUE(validate_store_text(ok)) << ok;
    const std::vector<std::pair<std::string, std::string>> bad = {
        {std::string("ab\0c", 4), "a NUL byte at byte offset 2"},
        {"a\x80", "an invalid UTF-8 lead byte at byte offset 1"},
        {"\xc1\xbf", "an invalid UTF-8 lead byte at byte offset 0"},  // overlong 2-byte
        {"\xe0\x9f\xbf", "an invalid UTF-8 sequence at byte offset 0"},  // overlong 3-byte
        {"\xf0\x8f\xbf\xbf", "an invalid UTF-8 sequence at byte offset 0"},  // overlong 4-byte
        {"x\xed\xbf\xbf", "an invalid UTF-8 sequence at byte offset 1"},  // surrogate
        {"\xf4\x90\x80\x80", "an invalid UTF-8 sequence at byte offset 0"},  // above U+10FFFF
        {"\xf5\x80\x80\x80", "an invalid UTF-8 lead byte at byte offset 0"},
        {"\xe2\x28\xa1", "an invalid UTF-8 sequence at byte offset 0"},
        {"\xf0\x9f\x94\x28", "an invalid UTF-8 sequence at byte offset 0"},
        {"ok\xe2\x82", "a truncated UTF-8 sequence at byte offset 2"},
    };
    for (const auto& [text, why] : bad) {
        auto r = validate_store_text(text);
        ASSERT_FALSE(r) << why;
        EXPECT_EQ(r.error().message, "is not store text (valid UTF-8 without NUL): " + why);
    }
    EXPECT_EQ(classify_store_error(store_errc::invalid_input), failure_kind::fatal);
    EXPECT_EQ(to_name(store_errc::invalid_input), "invalid_input");
    EXPECT_EQ(to_name(store_errc::transaction_broken), "transaction_broken");
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

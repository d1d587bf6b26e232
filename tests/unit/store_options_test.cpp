// Pure tests: URL parsing, option validation, error classification. No database.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fencelock/store.hpp"
#include "support/secrets.hpp"

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
    for (const char* bad :
         {"", "mysql://h/d", "sqlite://", "/tmp/x.db", "sqlite:///x.db?mode=ro", "postgresql://h/d?nosuchparam=1"}) {
        auto r = parse_database_url(bad);
        EXPECT_FALSE(r) << bad;
        if (!r) {
            EXPECT_EQ(r.error().message.find("secret"), std::string::npos);
        }
    }
    EXPECT_NE(parse_database_url("redis://x").error().message.find("unknown database URL scheme 'redis'"),
              std::string::npos);
}

// Regression: redacted() hid only what lay between the first ':' and the FIRST '@'.
TEST(DatabaseUrl, RedactedHidesEveryByteOfThePassword) {
    const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
        {"postgresql://u:p@ss@db.example:5432/orders", {"p@ss"}},
        {"postgresql://u:Qz@9vK:x@Jw7@db.example/orders", {"Qz@9vK:x@Jw7"}},
        {"postgresql://u:Hb%40tr7%2Fk@db.example/orders", {"Hb%40tr7%2Fk", "Hb@tr7/k"}},
        {"postgresql://u@db.example/orders?sslmode=disable&password=Hb%40tr7%3A", {"Hb%40tr7%3A", "Hb@tr7:"}},
    };
    for (const auto& [url, secrets] : cases) {
        auto p = parse_database_url(url);
        ASSERT_TRUE(p) << p.error().message;
        const std::string shown = p->redacted();
        for (const auto& s : secrets)
            EXPECT_EQ(test_support::leaked_fragments(shown, s), std::vector<std::string>{}) << shown;
        EXPECT_NE(shown.find("db.example"), std::string::npos) << shown;
        EXPECT_NE(shown.find("/orders"), std::string::npos) << shown;
    }
}

using Settings = std::vector<std::pair<std::string, std::string>>;

TEST(DatabaseUrl, PostgresUrlBecomesLibpqKeywords) {
    const std::vector<std::pair<std::string, Settings>> cases = {
        {"postgresql://u:p@ss@127.0.0.1:5432/db",
         {{"user", "u"}, {"password", "p@ss"}, {"host", "127.0.0.1"}, {"port", "5432"}, {"dbname", "db"}}},
        // The LAST '@' before the host ends the password; ':' after the first belongs to it.
        {"postgres://u:Qz@9vK:x@Jw7@h/d",
         {{"user", "u"}, {"password", "Qz@9vK:x@Jw7"}, {"host", "h"}, {"dbname", "d"}}},
        {"postgresql://u%40corp:Hb%40tr7%2Fk%3F%25@h/my%20db",
         {{"user", "u@corp"}, {"password", "Hb@tr7/k?%"}, {"host", "h"}, {"dbname", "my db"}}},
        {"postgresql://h", {{"host", "h"}}},
        {"postgresql:///db", {{"dbname", "db"}}},
        {"postgresql://:pw@h", {{"password", "pw"}, {"host", "h"}}},
        {"postgresql://[::1]:5433,db2:5434,db3/d", {{"host", "::1,db2,db3"}, {"port", "5433,5434,"}, {"dbname", "d"}}},
        {"postgresql://%2Fvar%2Frun%2Fpostgresql/d", {{"host", "/var/run/postgresql"}, {"dbname", "d"}}},
        {"postgresql://u@h/d?sslmode=disable&options=-csearch_path%3Dapp&password=a%40b",
         {{"user", "u"},
          {"host", "h"},
          {"dbname", "d"},
          {"sslmode", "disable"},
          {"options", "-csearch_path=app"},
          {"password", "a@b"}}},
    };
    for (const auto& [url, settings] : cases) {
        auto p = parse_database_url(url);
        ASSERT_TRUE(p) << url << ": " << p.error().message;
        EXPECT_EQ(p->backend, StoreBackend::postgresql);
        EXPECT_EQ(p->settings, settings) << url;
    }
    EXPECT_EQ(parse_database_url("postgresql://u:p@ss@h:5432/db?password=x%40y&sslmode=disable")->redacted(),
              "postgresql://u:***@h:5432/db?password=***&sslmode=disable");
    EXPECT_EQ(parse_database_url("postgresql://u:a%40b@h/d")->secrets(), (std::vector<std::string>{"a@b", "a%40b"}));
    EXPECT_TRUE(parse_database_url("sqlite:///x.db")->settings.empty());
}

TEST(DatabaseUrl, MalformedPostgresUrlsAreRefusedWithoutQuotingThem) {
    const std::vector<std::string> bad = {
        "postgresql://u:Se/cret@h/d",    // a raw '/' ends the host part inside the password
        "postgresql://u:Se?cret@h/d",    // so does a raw '?'
        "postgresql://u:p@Se/cret@h/d",  // ... even after an '@'
        "postgresql://h/d?application_name=Se@cret",
        "postgresql://u:Se%zzcret@h/d",     // bad escape
        "postgresql://u:Se%00cret@h/d",     // NUL
        "postgresql://u:Secret@h:99999/d",  // port
        "postgresql://u:Secret@h:5x/d",
        "postgresql://u:Secret@[::1/d",           // unterminated IPv6
        "postgresql://u:Secret@h/d?Secretkey=1",  // not a libpq keyword
        "postgresql://u:Secret@h/d?sslmode",      // no '='
    };
    for (const auto& url : bad) {
        auto r = parse_database_url(url);
        ASSERT_FALSE(r) << url;
        EXPECT_EQ(test_support::leaked_fragments(r.error().message, "Secret"), std::vector<std::string>{})
            << url << ": " << r.error().message;
        EXPECT_EQ(test_support::leaked_fragments(r.error().message, "cret"), std::vector<std::string>{})
            << url << ": " << r.error().message;
    }
}

TEST(StoreOptions, ValidateNamesTheField) {
    EXPECT_EQ(StoreOptions{}.validate().error().field, "url");
    const std::string u = "sqlite:///tmp/x.db";
    EXPECT_TRUE((StoreOptions{.url = u}.validate()));
    EXPECT_EQ((StoreOptions{.url = u, .statement_timeout = milliseconds(0)}.validate().error().field),
              "statement_timeout");
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
        {"\xc1\xbf", "an invalid UTF-8 lead byte at byte offset 0"},         // overlong 2-byte
        {"\xe0\x9f\xbf", "an invalid UTF-8 sequence at byte offset 0"},      // overlong 3-byte
        {"\xf0\x8f\xbf\xbf", "an invalid UTF-8 sequence at byte offset 0"},  // overlong 4-byte
        {"x\xed\xbf\xbf", "an invalid UTF-8 sequence at byte offset 1"},     // surrogate
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

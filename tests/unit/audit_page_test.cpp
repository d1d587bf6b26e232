// Decoding pages of the audit stream (XREVRANGE replies) and of SCAN.
#include "coordinator/redis/calls/audit_page.hpp"
#include "coordinator/redis/calls/scan_page.hpp"

#include <gtest/gtest.h>

#include "reply_builders.hpp"

namespace {

using namespace fencelock;
using namespace fencelock::test_support;
using detail::decode_audit_page;
using detail::decode_scan_page;
using std::chrono::milliseconds;

Reply entry(std::string id, std::string resource) {
    return A({S(std::move(id)), A({S("resource"), S(std::move(resource)), S("owner"), S("3f2a"), S("fence"), S("12"),
                                   S("reason"), S("host died"), S("operator"), S("alice@ops"), S("time_ms"),
                                   S("1700000000000"), S("since_renew_ms"), S("61000"), S("forced_active"), S("1")})});
}

TEST(DecodeAuditPage, EveryFieldNewestFirst) {
    const auto page = decode_audit_page(A({entry("2-0", "order:2"), entry("1-0", "order:1")})).value();
    ASSERT_EQ(page.size(), 2u);
    EXPECT_EQ(page[0].id, "2-0");
    EXPECT_EQ(page[1].resource, "order:1");
    const AuditEntry& a = page[0];
    EXPECT_EQ(a.resource, "order:2");
    EXPECT_EQ(a.owner, "3f2a");
    EXPECT_EQ(a.fence, FencingToken{12});
    EXPECT_EQ(a.reason, "host died");
    EXPECT_EQ(a.operator_name, "alice@ops");
    EXPECT_EQ(a.time_ms, 1'700'000'000'000);
    EXPECT_EQ(a.since_renew, milliseconds(61'000));
    EXPECT_TRUE(a.forced_active);
}

TEST(DecodeAuditPage, AnEmptyStreamIsAnEmptyPage) { EXPECT_TRUE(decode_audit_page(A({})).value().empty()); }

TEST(DecodeAuditPage, MalformedItemsAreProtocolErrors) {
    for (const Reply& bad : {A({A({S("1-0")})}), A({S("1-0")}), A({A({S("1-0"), A({}), S("x")})})})
        EXPECT_EQ(decode_audit_page(bad).error(), err(errc::protocol_error));
}

TEST(DecodeAuditPage, AnErrorReplyIsClassified) {
    EXPECT_EQ(decode_audit_page(Reply::make_error("WRONGTYPE Operation against a key holding the wrong kind of value"))
                  .error(),
              err(errc::corrupt_key));
}

TEST(DecodeScanPage, CursorAndKeys) {
    const auto page = decode_scan_page(A({S("17"), A({S("lock:{a}"), S("lock:{b}")})})).value();
    EXPECT_EQ(page.cursor, "17");
    EXPECT_EQ(page.keys, (std::vector<std::string>{"lock:{a}", "lock:{b}"}));
}

TEST(DecodeScanPage, MalformedShapesAreProtocolErrors) {
    for (const Reply& bad : {Nil(), I(0), A({}), A({S("0")}), A({S("0"), A({}), A({})})})
        EXPECT_EQ(decode_scan_page(bad).error(), err(errc::protocol_error));
}

TEST(GlobEscape, ThePrefixMatchesLiterally) {
    EXPECT_EQ(detail::glob_escape(R"(a*b?c[d]e\f)"), R"(a\*b\?c\[d\]e\\f)");
    EXPECT_EQ(detail::glob_escape("plain:"), "plain:");
}

}  // namespace

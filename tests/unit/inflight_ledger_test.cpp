// The multiplexer's rule for a broken connection, without a socket: a request any byte of which
// was written may have run (outcome unknown); one that starts past the written prefix never left.
#include <gtest/gtest.h>

#include "redis/inflight_ledger.hpp"

namespace fencelock::detail {
namespace {

TEST(InflightLedger, NothingWrittenMeansEveryRequestIsUnsent) {
    InflightLedger ledger;
    const auto first = ledger.handed();
    ledger.hand_over(30);
    ledger.note_buffered(30);
    EXPECT_EQ(first, 0u);
    EXPECT_EQ(ledger.written(), 0u);
    EXPECT_FALSE(ledger.was_written(first));
}

TEST(InflightLedger, AWrittenHandshakeDoesNotCountAsAWrittenRequest) {
    InflightLedger ledger;
    ledger.hand_over(40);  // the handshake's commands go first
    ledger.note_buffered(0);
    const auto request = ledger.handed();
    ledger.hand_over(25);
    ledger.note_buffered(25);  // the connection breaks before the request leaves
    EXPECT_EQ(request, 40u);
    EXPECT_FALSE(ledger.was_written(request));
}

TEST(InflightLedger, APartlyWrittenRequestCountsAsWritten) {
    InflightLedger ledger;
    const auto a = ledger.handed();
    ledger.hand_over(10);
    const auto b = ledger.handed();
    ledger.hand_over(10);  // a pipeline of two commands is one request: its offset is its first byte
    ledger.hand_over(5);
    const auto c = ledger.handed();
    ledger.hand_over(10);
    ledger.note_buffered(20);  // 15 bytes out: all of a, the first 5 of b
    EXPECT_EQ(ledger.written(), 15u);
    EXPECT_TRUE(ledger.was_written(a));
    EXPECT_TRUE(ledger.was_written(b));
    EXPECT_FALSE(ledger.was_written(c));
}

TEST(InflightLedger, ARequestStartingExactlyWhereTheWrittenBytesEndIsUnsent) {
    InflightLedger ledger;
    ledger.hand_over(10);
    const auto next = ledger.handed();
    ledger.hand_over(10);
    ledger.note_buffered(10);
    EXPECT_FALSE(ledger.was_written(next));
    ledger.note_buffered(9);  // one more byte out
    EXPECT_TRUE(ledger.was_written(next));
}

TEST(InflightLedger, WrittenGrowsAsMoreIsHandedAndFlushed) {
    InflightLedger ledger;
    ledger.hand_over(10);
    ledger.note_buffered(0);
    EXPECT_EQ(ledger.written(), 10u);
    ledger.hand_over(7);  // handed but not yet written: the prefix stays where it was
    ledger.note_buffered(7);
    EXPECT_EQ(ledger.written(), 10u);
    ledger.note_buffered(0);
    EXPECT_EQ(ledger.written(), 17u);
}

TEST(InflightLedger, ANewConnectionStartsANewStream) {
    InflightLedger ledger;
    ledger.hand_over(50);
    ledger.note_buffered(0);
    ledger.reset();
    EXPECT_EQ(ledger.handed(), 0u);
    EXPECT_EQ(ledger.written(), 0u);
    const auto request = ledger.handed();
    ledger.hand_over(10);
    EXPECT_FALSE(ledger.was_written(request)) << "the old connection's bytes say nothing about the new one";
}

}  // namespace
}  // namespace fencelock::detail

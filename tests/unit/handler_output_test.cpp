// How the worker cuts a handler's output into log lines (handler_output.hpp): lines across
// chunk borders, the cap with `continues`, a last line without a newline, valid UTF-8 always.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "handler_output.hpp"

namespace fencelock::cli {
namespace {

std::vector<std::string> texts(const std::vector<OutputLine>& lines) {
    std::vector<std::string> out;
    for (const auto& l : lines) out.push_back(l.text + (l.continues ? "+" : ""));
    return out;
}

TEST(HandlerOutput, LinesSplitAcrossChunksComeOutWholeAndCrlfLosesItsCr) {
    LineSplitter s;
    EXPECT_TRUE(s.feed("hel").empty());
    EXPECT_EQ(texts(s.feed("lo\nwor")), (std::vector<std::string>{"hello"}));
    EXPECT_EQ(texts(s.feed("ld\r\n\nlast")), (std::vector<std::string>{"world", ""}));
    EXPECT_EQ(texts(s.finish()), (std::vector<std::string>{"last"}));
    EXPECT_TRUE(s.finish().empty());
}

TEST(HandlerOutput, ALineLongerThanTheCapComesInPiecesMarkedContinues) {
    LineSplitter s(8);
    EXPECT_EQ(texts(s.feed("12345678\n")), (std::vector<std::string>{"12345678"}));  // exactly the cap: whole
    EXPECT_TRUE(s.feed("abcdefgh").empty());                                         // might still end here
    EXPECT_EQ(texts(s.feed("ijklmnopqrst\nx")), (std::vector<std::string>{"abcdefgh+", "ijklmnop+", "qrst"}));
    EXPECT_EQ(texts(s.finish()), (std::vector<std::string>{"x"}));

    LineSplitter big;
    const std::string megabyte(1 << 20, 'a');
    const auto lines = big.feed(megabyte + "\n");
    ASSERT_EQ(lines.size(), (1u << 20) / LineSplitter::default_max_line_bytes);
    for (std::size_t i = 0; i < lines.size(); ++i) {
        EXPECT_EQ(lines[i].text.size(), LineSplitter::default_max_line_bytes);
        EXPECT_EQ(lines[i].continues, i + 1 < lines.size());
    }
}

TEST(HandlerOutput, APieceIsNeverCutInsideACharacter) {
    LineSplitter s(4);
    // "abc" then "é" (2 bytes) then "€" (3 bytes): the cap of 4 falls inside each in turn.
    const auto lines = s.feed("abc\xC3\xA9\xE2\x82\xAC!\n");
    EXPECT_EQ(texts(lines), (std::vector<std::string>{"abc+", "\xC3\xA9+", "\xE2\x82\xAC!"}));
}

TEST(HandlerOutput, InvalidUtf8BecomesReplacementCharacters) {
    const std::string fffd = "\xEF\xBF\xBD";
    EXPECT_EQ(valid_utf8("plain ascii"), "plain ascii");
    EXPECT_EQ(valid_utf8("\xC3\xA9\xF0\x9F\x98\x80"), "\xC3\xA9\xF0\x9F\x98\x80");  // é 😀 stay
    EXPECT_EQ(valid_utf8("caf\xE9"), "caf" + fffd);                                 // Latin-1 é
    EXPECT_EQ(valid_utf8("\xC0\x80"), fffd + fffd);                                 // overlong NUL
    EXPECT_EQ(valid_utf8("\xED\xA0\x80"), fffd + fffd + fffd);                      // surrogate
    EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);           // above U+10FFFF
    EXPECT_EQ(valid_utf8("\xE2\x82"), fffd + fffd);                                 // cut short
    LineSplitter s;
    EXPECT_EQ(texts(s.feed("\xFFok\n")), (std::vector<std::string>{fffd + "ok"}));
}

}  // namespace
}  // namespace fencelock::cli

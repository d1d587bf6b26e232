// The caller-thread I/O of the multiplexed connection's borrowed socket (redis/blocking_io.hpp), on a
// socket pair standing in for Redis: no SIGPIPE when the peer is gone, replies split across
// reads, pipelined replies, end of stream, the deadline, and the checks made before writing.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "fencelock/error.hpp"
#include "redis/blocking_io.hpp"
#include "redis/transport.hpp"

namespace fencelock::detail::blocking_io {
using fencelock::detail::Transport;
namespace {

// A connected, non-blocking pair: `ours` is the connection's socket (its transport owns it),
// `theirs` plays Redis.
struct SocketPair {
    int ours = -1, theirs = -1;
    Transport transport;
    SocketPair() {
        int fds[2];
        EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
        ours = fds[0];
        transport = Transport::adopt(ours, {"127.0.0.1", 6379});
        theirs = fds[1];
    }
    ~SocketPair() { close_theirs(); }
    void close_theirs() {
        if (theirs >= 0) ::close(theirs);
        theirs = -1;
    }
    void answer(std::string_view bytes) const {
        ASSERT_EQ(::write(theirs, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    }
    std::string received() const {
        char buffer[256];
        const auto n = ::read(theirs, buffer, sizeof buffer);
        return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
    }
};

struct ReaderDeleter {
    void operator()(redisReader* r) const noexcept { redisReaderFree(r); }
};
std::unique_ptr<redisReader, ReaderDeleter> make_reader() { return {redisReaderCreate(), {}}; }

// Far enough that nothing here waits for it: every read below has its bytes already there.
clock::time_point later() { return clock::now() + std::chrono::minutes(1); }

TEST(BlockingIo, SendsEveryByte) {
    SocketPair pair;
    const auto sent = send_all(pair.transport, "*1\r\n$4\r\nPING\r\n", later());
    EXPECT_FALSE(sent.error);
    EXPECT_EQ(sent.bytes, 14u);
    EXPECT_EQ(sent.calls, 1u);
    EXPECT_EQ(pair.received(), "*1\r\n$4\r\nPING\r\n");
}

TEST(BlockingIo, WritingToAGonePeerFailsWithoutSigpipe) {
    // The default action of SIGPIPE ends the process: this test lives only if send_all raises
    // none (the loop thread blocks signals; a caller's thread does not).
    struct sigaction previous {};
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    ASSERT_EQ(::sigaction(SIGPIPE, &default_action, &previous), 0);
    SocketPair pair;
    pair.close_theirs();
    const auto sent = send_all(pair.transport, "*1\r\n$4\r\nPING\r\n", later());
    ::sigaction(SIGPIPE, &previous, nullptr);
    EXPECT_EQ(sent.error, errc::connection_lost);
    EXPECT_EQ(sent.bytes, 0u) << "nothing was written: the caller fails it as unavailable";
}

TEST(BlockingIo, AFullSocketWaitsForRoomUntilTheDeadline) {
    SocketPair pair;
    const std::string big(8u << 20, 'x');  // more than a socket pair buffers; nobody reads
    const auto sent = send_all(pair.transport, big, clock::now());
    EXPECT_EQ(sent.error, errc::reply_timeout);
    EXPECT_GT(sent.bytes, 0u) << "the part that fit was written: the outcome is unknown";
    EXPECT_LT(sent.bytes, big.size());
}

TEST(BlockingIo, ReadsAReplySplitAcrossReadsAndPipelinedReplies) {
    SocketPair pair;
    auto reader = make_reader();
    pair.answer("$5\r\nhel");
    pair.answer("lo\r\n:42\r\n");
    auto replies = read_replies(pair.transport, *reader, 1, later());
    ASSERT_TRUE(replies) << replies.error().message();
    EXPECT_EQ(replies->at(0).str, "hello");
    EXPECT_TRUE(holds_more(*reader)) << ":42 was read with it and nobody asked for it yet";
    auto next = read_replies(pair.transport, *reader, 1, later());
    ASSERT_TRUE(next);
    EXPECT_EQ(next->at(0).integer, 42);
    EXPECT_FALSE(holds_more(*reader));

    pair.answer("+OK\r\n*2\r\n$1\r\na\r\n$-1\r\n-ERR no\r\n");
    auto three = read_replies(pair.transport, *reader, 3, later());
    ASSERT_TRUE(three);
    EXPECT_EQ(three->at(0).str, "OK");
    EXPECT_EQ(three->at(1).elements.at(0).str, "a");
    EXPECT_EQ(three->at(1).elements.at(1).kind, Reply::Kind::nil);
    EXPECT_EQ(three->at(2).kind, Reply::Kind::error) << "an error reply is a reply";
}

TEST(BlockingIo, HalfAReplyCountsAsHeld) {
    auto reader = make_reader();
    ASSERT_EQ(redisReaderFeed(reader.get(), "*2\r\n:1\r\n", 8), REDIS_OK);
    void* none = nullptr;
    ASSERT_EQ(redisReaderGetReply(reader.get(), &none), REDIS_OK);
    EXPECT_EQ(none, nullptr);
    EXPECT_TRUE(holds_more(*reader)) << "an array begun and every byte parsed: still not idle";

    SocketPair pair;
    auto fresh = make_reader();
    pair.answer("*2\r\n:1\r\n");
    // The half reply is read at once; the wait for the rest ends at the deadline.
    auto replies = read_replies(pair.transport, *fresh, 1, clock::now() + std::chrono::milliseconds(20));
    ASSERT_FALSE(replies);
    EXPECT_EQ(replies.error(), errc::reply_timeout);
    EXPECT_TRUE(holds_more(*fresh));
}

TEST(BlockingIo, EndOfStreamAndGarbageAreConnectionLost) {
    {
        SocketPair pair;
        auto reader = make_reader();
        pair.answer("$5\r\nhe");
        pair.close_theirs();
        auto replies = read_replies(pair.transport, *reader, 1, later());
        ASSERT_FALSE(replies);
        EXPECT_EQ(replies.error(), errc::connection_lost);
    }
    {
        SocketPair pair;
        auto reader = make_reader();
        pair.answer("not resp\r\n");
        auto replies = read_replies(pair.transport, *reader, 1, later());
        ASSERT_FALSE(replies);
        EXPECT_EQ(replies.error(), errc::connection_lost);
    }
}

TEST(BlockingIo, NoReplyByTheDeadlineIsATimeout) {
    SocketPair pair;
    auto reader = make_reader();
    auto replies = read_replies(pair.transport, *reader, 1, clock::now());
    ASSERT_FALSE(replies);
    EXPECT_EQ(replies.error(), errc::reply_timeout);
}

TEST(BlockingIo, LookTellsAQuietSocketFromAClosedOrTalkingOne) {
    SocketPair quiet;
    EXPECT_EQ(look(quiet.transport), IdleSocket::quiet);
    SocketPair closed;
    closed.close_theirs();
    EXPECT_EQ(look(closed.transport), IdleSocket::closed);
    SocketPair talking;
    talking.answer("-ERR max number of clients reached\r\n");
    EXPECT_EQ(look(talking.transport), IdleSocket::closed) << "bytes nobody asked for";
    auto reader = make_reader();
    auto left = read_replies(talking.transport, *reader, 1, later());
    ASSERT_TRUE(left) << "look() only peeks: the bytes are still there";
}

}  // namespace
}  // namespace fencelock::detail::blocking_io

// The multiplexer without a socket: what one write carries, what a short write leaves, how
// replies (split, bunched, errors) find their requests, and who fails how when the connection
// is lost. The bytes a test "writes" and "reads" are RESP strings it builds itself.
#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "fencelock/error.hpp"
#include "redis/multiplexer.hpp"
#include "redis/wire.hpp"

namespace fencelock::detail {
namespace {

using Request = Multiplexer::Request;

// A request carrying `commands` (several make a pipeline() request), optionally with a completion.
Request make_request(const std::vector<std::vector<std::string>>& commands, bool with_completion = false) {
    auto r = std::make_shared<AsyncRequest>();
    for (const auto& argv : commands) {
        append_resp(r->wire, std::span<const std::string>(argv));
        r->ends.push_back(r->wire.size());
    }
    if (with_completion) r->on_done = [](std::error_code, std::vector<Reply>&) {};
    return r;
}

Request get(const std::string& key) { return make_request({{"GET", key}}); }

// A started connection with no handshake, so the tests see only their requests' bytes.
Multiplexer connected() {
    Multiplexer mux;
    mux.start_connection({}, 0);
    return mux;
}

// Queues `requests`, hands them over and writes every byte: they await their replies.
void write_all(Multiplexer& mux, std::initializer_list<Request> requests) {
    for (const auto& r : requests) mux.add(r);
    mux.prepare_write();
    mux.commit_write(mux.write_buffer().size());
}

TEST(Multiplexer, QueuedRequestsLeaveTogetherInOneWriteInQueueOrder) {
    auto mux = connected();
    const auto a = get("a");
    const auto b = make_request({{"INCR", "n"}, {"GET", "n"}});  // one pipeline() request
    const auto c = get("c");
    for (const auto& r : {a, b, c}) mux.add(r);
    EXPECT_EQ(mux.counts().queued, 3u);
    EXPECT_TRUE(mux.write_buffer().empty());  // add() writes nothing by itself

    const auto batch = mux.prepare_write();
    EXPECT_EQ(batch.requests, 3u);
    EXPECT_EQ(batch.commands, 4u);
    EXPECT_EQ(mux.write_buffer(), a->wire + b->wire + c->wire);
    const auto counts = mux.counts();
    EXPECT_EQ(counts.queued, 0u);
    EXPECT_EQ(counts.writing, 3u);
    EXPECT_EQ(counts.awaiting_reply, 0u);
    EXPECT_FALSE(mux.idle());
}

TEST(Multiplexer, AnEmptyQueueHandsOverNothing) {
    auto mux = connected();
    const auto batch = mux.prepare_write();
    EXPECT_EQ(batch.requests, 0u);
    EXPECT_TRUE(mux.write_buffer().empty());
    EXPECT_TRUE(mux.idle());
}

TEST(Multiplexer, AShortWriteLeavesTheRestForTheNextWrite) {
    auto mux = connected();
    const auto a = get("a");
    const auto b = get("b");
    mux.add(a);
    mux.add(b);
    mux.prepare_write();
    const std::string all(mux.write_buffer());

    const std::size_t first = a->wire.size() + 3;  // all of a and three bytes of b
    mux.commit_write(first);
    EXPECT_EQ(mux.write_buffer(), all.substr(first));
    auto counts = mux.counts();
    EXPECT_EQ(counts.awaiting_reply, 1u);  // a: its last byte went out
    EXPECT_EQ(counts.writing, 1u);         // b: partly written

    mux.commit_write(mux.write_buffer().size());
    EXPECT_TRUE(mux.write_buffer().empty());
    counts = mux.counts();
    EXPECT_EQ(counts.awaiting_reply, 2u);
    EXPECT_EQ(counts.writing, 0u);
}

TEST(Multiplexer, ARequestIsNotAwaitingItsReplyUntilItsLastByteIsWritten) {
    auto mux = connected();
    const auto a = get("a");
    mux.add(a);
    mux.prepare_write();
    mux.commit_write(a->wire.size() - 1);
    EXPECT_EQ(mux.counts().writing, 1u);
    EXPECT_EQ(mux.write_buffer().size(), 1u);
    mux.commit_write(1);
    EXPECT_EQ(mux.counts().awaiting_reply, 1u);
}

TEST(Multiplexer, RepliesCompleteTheirRequestsInOrderAcrossSplitReads) {
    auto mux = connected();
    const auto a = get("a");
    const auto b = get("b");
    write_all(mux, {a, b});

    const std::string replies = "$5\r\nalpha\r\n$4\r\nbeta\r\n";
    auto part = mux.consume(replies.substr(0, 6));  // half of a's reply
    EXPECT_EQ(part.replies, 0u);
    EXPECT_TRUE(part.completed.empty());
    EXPECT_EQ(a->replies.size(), 0u);

    part = mux.consume(replies.substr(6, 8));  // the rest of a's reply and the start of b's
    EXPECT_FALSE(part.error);
    EXPECT_EQ(part.replies, 1u);
    ASSERT_EQ(part.completed.size(), 1u);
    EXPECT_EQ(part.completed[0], a);
    ASSERT_EQ(a->replies.size(), 1u);
    EXPECT_EQ(a->replies[0].str, "alpha");

    part = mux.consume(replies.substr(14));
    ASSERT_EQ(part.completed.size(), 1u);
    EXPECT_EQ(part.completed[0], b);
    EXPECT_EQ(b->replies[0].str, "beta");
    EXPECT_FALSE(b->error);
    EXPECT_TRUE(mux.idle());
}

TEST(Multiplexer, SeveralRepliesInOneReadCompleteSeveralRequestsAndAPipelineWaitsForAllOfItsReplies) {
    auto mux = connected();
    const auto a = get("a");
    const auto pipeline = make_request({{"INCR", "n"}, {"INCR", "n"}});
    const auto c = get("c");
    write_all(mux, {a, pipeline, c});

    auto consumed = mux.consume("$1\r\nx\r\n:1\r\n");  // a's reply and the pipeline's first
    EXPECT_EQ(consumed.replies, 2u);
    ASSERT_EQ(consumed.completed.size(), 1u);
    EXPECT_EQ(consumed.completed[0], a);
    EXPECT_EQ(pipeline->replies.size(), 1u);  // half answered: not complete

    consumed = mux.consume(":2\r\n$-1\r\n");
    ASSERT_EQ(consumed.completed.size(), 2u);
    EXPECT_EQ(consumed.completed[0], pipeline);
    EXPECT_EQ(consumed.completed[1], c);
    ASSERT_EQ(pipeline->replies.size(), 2u);
    EXPECT_EQ(pipeline->replies[0].integer, 1);
    EXPECT_EQ(pipeline->replies[1].integer, 2);
    EXPECT_EQ(c->replies[0].kind, Reply::Kind::nil);
}

TEST(Multiplexer, AnErrorReplyIsTheRequestsReplyNotAFailure) {
    auto mux = connected();
    const auto a = get("a");
    const auto b = get("b");
    write_all(mux, {a, b});

    const auto consumed = mux.consume("-WRONGTYPE Operation against a key\r\n+OK\r\n");
    EXPECT_FALSE(consumed.error);
    EXPECT_FALSE(consumed.asks_for_another_server);
    ASSERT_EQ(consumed.completed.size(), 2u);
    EXPECT_FALSE(a->error);
    ASSERT_EQ(a->replies.size(), 1u);
    EXPECT_EQ(a->replies[0].kind, Reply::Kind::error);
    EXPECT_EQ(a->replies[0].str, "WRONGTYPE Operation against a key");
    EXPECT_EQ(b->replies[0].kind, Reply::Kind::status);  // the next request still gets its own
}

TEST(Multiplexer, AReadonlyReplyAsksForAnotherServer) {
    auto mux = connected();
    write_all(mux, {get("a")});
    const auto consumed = mux.consume("-READONLY You can't write against a read only replica.\r\n");
    EXPECT_TRUE(consumed.asks_for_another_server);
    EXPECT_EQ(consumed.completed.size(), 1u);
}

TEST(Multiplexer, AReplyNobodyAskedForOrBytesThatAreNotRespBreakTheStream) {
    auto stray = connected();
    EXPECT_EQ(stray.consume("+OK\r\n").error, errc::connection_lost);

    auto garbage = connected();
    const auto a = get("a");
    write_all(garbage, {a});
    const auto consumed = garbage.consume(":7\r\n!!not resp\r\n");
    EXPECT_EQ(consumed.error, errc::connection_lost);
    ASSERT_EQ(consumed.completed.size(), 1u);  // the reply before the garbage still counted
    EXPECT_EQ(a->replies[0].integer, 7);
}

TEST(Multiplexer, WhileABatchAwaitsRepliesAWaitersRequestIsHeldBack) {
    auto mux = connected();
    const auto a = get("a");
    write_all(mux, {a});

    const auto b = get("b");
    const auto c = get("c");
    mux.add(b);
    mux.add(c);
    EXPECT_EQ(mux.prepare_write().requests, 0u);  // a's reply is due: b and c wait
    EXPECT_TRUE(mux.write_buffer().empty());
    EXPECT_EQ(mux.counts().queued, 2u);

    mux.consume("+OK\r\n");
    const auto batch = mux.prepare_write();  // a answered: b and c leave together
    EXPECT_EQ(batch.requests, 2u);
    EXPECT_EQ(mux.write_buffer(), b->wire + c->wire);
}

TEST(Multiplexer, ARequestWithACompletionJoinsTheStreamBehindTheUnwrittenRestOfABatch) {
    auto mux = connected();
    const auto a = get("a");
    mux.add(a);
    mux.prepare_write();
    mux.commit_write(4);  // a short write: the rest of a is still unwritten

    const auto b = make_request({{"SET", "k", "v"}}, /*with_completion=*/true);
    const auto c = get("c");  // behind b in the queue: it goes with b
    mux.add(b);
    mux.add(c);
    const auto batch = mux.prepare_write();
    EXPECT_EQ(batch.requests, 2u);
    EXPECT_EQ(mux.write_buffer(), a->wire.substr(4) + b->wire + c->wire);

    mux.commit_write(mux.write_buffer().size());
    const auto consumed = mux.consume("$1\r\n1\r\n+OK\r\n$1\r\n3\r\n");
    ASSERT_EQ(consumed.completed.size(), 3u);
    EXPECT_EQ(consumed.completed[0], a);
    EXPECT_EQ(consumed.completed[1], b);
    EXPECT_EQ(consumed.completed[2], c);
}

TEST(Multiplexer, ConnectionLostFailsEachRequestByHowFarItGot) {
    auto mux = connected();
    const auto answered = get("answered");
    const auto half_answered = make_request({{"INCR", "n"}, {"INCR", "n"}});
    const auto awaiting = get("awaiting");
    const auto partly_written = get("partly");
    const auto unwritten = get("unwritten");
    for (const auto& r : {answered, half_answered, awaiting, partly_written, unwritten}) mux.add(r);
    mux.prepare_write();
    const std::size_t written = answered->wire.size() + half_answered->wire.size() + awaiting->wire.size() + 1;
    mux.commit_write(written);  // the connection breaks one byte into `partly_written`
    mux.consume("+OK\r\n:1\r\n");
    const auto queued = get("queued");
    mux.add(queued);  // held back: replies are due

    EXPECT_TRUE(mux.would_fail_unsent(Multiplexer::Queued::fail));
    const auto failed =
        mux.cancel_on_connection_lost(errc::connection_lost, errc::unavailable, Multiplexer::Queued::fail);
    ASSERT_EQ(failed.size(), 5u);  // everyone but the answered request, handed-over ones first
    EXPECT_EQ(failed[0], half_answered);
    EXPECT_EQ(failed[3], unwritten);
    EXPECT_EQ(failed[4], queued);
    EXPECT_FALSE(answered->error);
    EXPECT_EQ(half_answered->error, errc::connection_lost);
    EXPECT_TRUE(half_answered->replies.empty());  // half an answer is no answer
    EXPECT_EQ(awaiting->error, errc::connection_lost);
    EXPECT_EQ(partly_written->error, errc::connection_lost);  // one byte out: outcome unknown
    EXPECT_EQ(unwritten->error, errc::unavailable);           // in the buffer, never written
    EXPECT_EQ(queued->error, errc::unavailable);
    EXPECT_TRUE(mux.idle());
    EXPECT_TRUE(mux.write_buffer().empty());
}

TEST(Multiplexer, ConnectionLostCanKeepQueuedRequestsForTheNextConnection) {
    auto mux = connected();
    const auto awaiting = get("awaiting");
    write_all(mux, {awaiting});
    const auto queued = get("queued");
    mux.add(queued);

    EXPECT_FALSE(mux.would_fail_unsent(Multiplexer::Queued::keep));  // the only unsent one is kept
    const auto failed =
        mux.cancel_on_connection_lost(errc::reply_timeout, errc::unavailable, Multiplexer::Queued::keep);
    ASSERT_EQ(failed.size(), 1u);
    EXPECT_EQ(awaiting->error, errc::reply_timeout);
    EXPECT_FALSE(queued->error);
    EXPECT_EQ(mux.counts().queued, 1u);

    mux.start_connection({}, 0);
    EXPECT_EQ(mux.prepare_write().requests, 1u);  // it leaves on the next connection
    EXPECT_EQ(mux.write_buffer(), queued->wire);
}

TEST(Multiplexer, ANewConnectionStartsAFreshStreamAndParser) {
    auto mux = connected();
    write_all(mux, {get("a")});
    mux.consume("$10\r\nhal");  // half a reply when the connection breaks
    mux.cancel_on_connection_lost(errc::connection_lost, errc::unavailable, Multiplexer::Queued::fail);

    mux.start_connection({}, 0);
    const auto b = get("b");
    mux.add(b);
    mux.prepare_write();
    EXPECT_EQ(b->first_byte, 0u);
    mux.commit_write(mux.write_buffer().size());
    const auto consumed = mux.consume("+OK\r\n");  // not glued to the old half reply
    EXPECT_FALSE(consumed.error);
    ASSERT_EQ(consumed.completed.size(), 1u);
    EXPECT_EQ(b->replies[0].str, "OK");
}

TEST(Multiplexer, ThePreambleGoesFirstAndTakesTheFirstReplies) {
    Multiplexer mux;
    std::string handshake;
    const std::vector<std::string> ping = {"PING"};
    append_resp(handshake, std::span<const std::string>(ping));
    append_resp(handshake, std::span<const std::string>(ping));
    mux.start_connection(handshake, 2);
    const auto a = get("a");
    mux.add(a);
    mux.prepare_write();
    EXPECT_EQ(mux.write_buffer(), handshake + a->wire);
    EXPECT_EQ(a->first_byte, handshake.size());

    mux.commit_write(handshake.size());  // the handshake went out, the request did not
    EXPECT_TRUE(mux.would_fail_unsent(Multiplexer::Queued::fail));

    mux.commit_write(mux.write_buffer().size());
    auto consumed = mux.consume("+PONG\r\n");
    EXPECT_FALSE(consumed.preamble);  // one of two
    EXPECT_EQ(mux.preamble_left(), 1u);
    consumed = mux.consume("+PONG\r\n+OK\r\n");
    ASSERT_TRUE(consumed.preamble);
    EXPECT_EQ(consumed.preamble->size(), 2u);
    EXPECT_EQ(mux.preamble_left(), 0u);
    EXPECT_EQ(consumed.replies, 2u);
    ASSERT_EQ(consumed.completed.size(), 1u);  // the reply after the preamble's is the request's
    EXPECT_EQ(a->replies[0].str, "OK");
}

TEST(Multiplexer, AWrittenPreambleDoesNotMakeAnUnwrittenRequestWritten) {
    Multiplexer mux;
    mux.start_connection("*1\r\n$4\r\nPING\r\n", 1);
    const auto a = get("a");
    mux.add(a);
    mux.prepare_write();
    mux.commit_write(14);  // exactly the preamble
    mux.cancel_on_connection_lost(errc::connection_lost, errc::unavailable, Multiplexer::Queued::fail);
    EXPECT_EQ(a->error, errc::unavailable);
}

TEST(Multiplexer, TheBorrowedSocketCountsItsBytesInTheSameStream) {
    auto mux = connected();
    AsyncRequest alone;
    alone.wire = "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
    mux.hand_over_alone(alone);
    EXPECT_EQ(alone.first_byte, 0u);
    mux.commit_write_alone(alone, 0);
    EXPECT_FALSE(mux.was_written(alone));  // send(2) failed before any byte: safe to retry
    mux.commit_write_alone(alone, 1);
    EXPECT_TRUE(mux.was_written(alone));
    EXPECT_TRUE(mux.idle());  // neither queued nor in the write buffer

    const auto next = get("next");  // the loop's next request starts after it
    mux.add(next);
    mux.prepare_write();
    EXPECT_EQ(next->first_byte, alone.wire.size());
}

}  // namespace
}  // namespace fencelock::detail

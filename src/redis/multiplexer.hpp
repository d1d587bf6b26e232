#pragma once
// The request side of a multiplexed connection, without I/O: the queue, the batching of queued
// requests into one write, the matching of replies to requests, and who fails how when the
// connection ends. The event loop (redis/async_loop.hpp) owns the socket and feeds this object
// what it wrote (commit_write) and what it read (consume); this object never blocks, polls or
// touches a file descriptor, so every rule below is unit-tested without a server
// (tests/unit/multiplexer_test.cpp). Modelled on boost.redis's detail/multiplexer.
//
// A request's life: queued (add) -> handed over (prepare_write put its bytes in the write
// buffer) -> written (commit_write counted its last byte) -> answered (consume matched its last
// reply; it comes back in Consumed::completed). Handed-over requests stay in one FIFO in stream
// order, whether their bytes are written yet or not: Redis answers a connection's commands in
// order, so the k-th reply belongs to the k-th command handed over.
//
// Batching. prepare_write() hands over everything queued at once, so commands issued during a
// round trip leave together in one write (a pipeline() request stays contiguous: requests are
// handed over whole). While earlier requests await replies it hands over nothing, unless the
// next request has a completion (on_done): see prepare_write().
//
// Failure. Every byte handed over has an offset in the connection's output stream (the preamble,
// i.e. the handshake, included; redis/inflight_ledger.hpp), and the bytes written are a prefix of
// it. When the connection ends, a request any byte of which was written may have run (outcome
// unknown); one none of whose bytes left is safe to retry. cancel_on_connection_lost() fails
// each with the error its case calls for.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "redis/inflight_ledger.hpp"
#include "redis/reply.hpp"
#include "redis/wire.hpp"

namespace fencelock::detail {

/// One command() or pipeline() call on its way to Redis and back.
struct AsyncRequest {
    std::string wire;               ///< the commands in RESP, back to back
    std::vector<std::size_t> ends;  ///< where each command ends in `wire`
    std::chrono::steady_clock::time_point deadline;

    // Written by the loop thread, read by the caller once `done` is set.
    std::vector<Reply> replies;
    std::error_code error;
    std::atomic<int> done{0};

    // Loop thread only: offset of the first byte in the connection's output stream.
    std::uint64_t first_byte = 0;

    /// Set before submit(): the loop calls it on its thread once the request is done (replies
    /// or error filled in), instead of waking a waiter. A request submitted to a stopping loop
    /// is completed at once, on the submitting thread.
    std::move_only_function<void(std::error_code error, std::vector<Reply>& replies)> on_done;

    /// Blocks the caller until the loop has finished with this request.
    void wait() const noexcept;
    /// The loop's side of wait(): replies or error are filled in.
    void release_waiter() noexcept;
};

/// The queue, batching and reply matching of one multiplexed connection at a time (see the top
/// of this file). Not thread-safe: the loop thread (or the thread the loop lent the connection
/// to) alone uses it.
class Multiplexer {
public:
    using Request = std::shared_ptr<AsyncRequest>;

    /// What prepare_write() handed over.
    struct Batch {
        std::size_t requests = 0;  ///< requests moved from the queue to the write buffer
        std::size_t commands = 0;  ///< their commands (a pipeline() request holds several)
    };

    /// What consume() made of the bytes it was given (hiredis's reader keeps every byte: a reply
    /// split across calls completes in a later one).
    struct Consumed {
        std::size_t replies = 0;  ///< whole replies parsed in this call, the preamble's included
        /// Requests whose last reply came in this call, in order, replies filled in and no error.
        std::vector<Request> completed;
        /// Every preamble reply, in order, when the last of them came in this call.
        std::optional<std::vector<Reply>> preamble;
        /// A request's reply (not the preamble's) was READONLY, MASTERDOWN or LOADING
        /// (asks_for_another_server()).
        bool asks_for_another_server = false;
        /// errc::connection_lost when the bytes are not RESP or a reply came that no request
        /// asked for: the stream can no longer be matched. The replies before it still counted.
        std::error_code error;
    };

    /// What cancel_on_connection_lost() does with requests still queued (never handed over).
    enum class Queued {
        fail,  ///< they fail with `unsent`, as handed-over requests none of whose bytes left
        keep,  ///< they stay queued for the next connection (nothing of them reached this one)
    };

    /// How many requests are at each step (tests and the loop's idle check).
    struct Counts {
        std::size_t queued = 0;          ///< added, not handed over
        std::size_t writing = 0;         ///< handed over, some bytes not written yet
        std::size_t awaiting_reply = 0;  ///< every byte written, a reply still due
    };

    /// Queues `request` behind the others; prepare_write() hands it over.
    void add(Request request);

    /// A new connection: its stream starts at offset 0 with `preamble` (commands in RESP, the
    /// handshake), whose `preamble_replies` replies come before any request's and are returned by
    /// consume() as Consumed::preamble. Precondition: nothing handed over (a fresh object, or
    /// cancel_on_connection_lost() since the last connection). Queued requests stay queued.
    void start_connection(std::string preamble, std::size_t preamble_replies);

    /// Hands every queued request over at once: appends their bytes to the write buffer (after
    /// whatever of an earlier batch is not written yet) and records each one's offset in the
    /// stream. One batch awaits replies at a time: while any handed-over request still waits
    /// for a reply, nothing is handed over unless the next request has a completion (on_done):
    /// the loop thread submitted it while handling a turn's replies, so a turn's worth leaves
    /// together anyway, and holding it back would leave Redis idle while the loop handles the
    /// previous batch (16 async lockers: 15,466 -> 18,073 cycles/s, 2026-12-02). Holding a
    /// waiter's command back costs it at most the round trip already under way; writing at once
    /// instead gave ~1.5 commands per write and less throughput on a loaded 2-core machine than
    /// this (~4-6 per write). Returns what it handed over (nothing when the queue is empty or
    /// held back).
    Batch prepare_write();

    /// The bytes handed over and not written yet, from the first unwritten one: write a prefix
    /// of them, then commit_write() how many went out.
    std::string_view write_buffer() const noexcept { return out_; }

    /// `n` bytes from the front of write_buffer() reached the socket. A short write leaves the
    /// rest in write_buffer() for the next write; a request whose last byte went out now awaits
    /// its replies. Precondition: n <= write_buffer().size().
    void commit_write(std::size_t n) noexcept;

    /// Feeds `bytes` read from the socket to the reply parser (hiredis's reader) and hands out
    /// every whole reply, in order: first to the preamble, then each to the oldest handed-over
    /// request, which completes once it has one reply per command. An error reply is a reply like
    /// any other: it goes into the request's `replies`, and the request completes without error.
    Consumed consume(std::string_view bytes);

    /// The connection ended (closed, failed, timed out, or left). Every handed-over request
    /// fails, in stream order: with `written` when at least one of its bytes reached the socket
    /// (Redis may have run it: outcome unknown; partly written counts as written), with `unsent`
    /// when none did, even if its bytes were in the write buffer (safe to retry). Then the queued
    /// requests fail with `unsent` (Queued::fail) or stay queued (Queued::keep). A failed request
    /// has `error` set and `replies` cleared (replies of a half-answered pipeline included).
    /// The write buffer, the parser, the preamble and the stream offsets start over. Returns the
    /// failed requests, handed-over first, for the caller to wake or call back.
    std::vector<Request> cancel_on_connection_lost(std::error_code written, std::error_code unsent, Queued queued);
    /// Whether cancel_on_connection_lost(…, queued) would give someone `unsent`.
    bool would_fail_unsent(Queued queued) const noexcept;

    /// Nothing queued, handed over or unwritten.
    bool idle() const noexcept { return queued_.empty() && handed_.empty() && out_.empty(); }
    Counts counts() const noexcept;
    /// The oldest handed-over request (replies due), or null. Deadlines grow along each queue.
    const AsyncRequest* oldest_handed_over() const noexcept {
        return handed_.empty() ? nullptr : handed_.front().get();
    }
    /// The oldest queued request, or null.
    const AsyncRequest* oldest_queued() const noexcept { return queued_.empty() ? nullptr : queued_.front().get(); }
    /// Preamble replies still due on this connection.
    std::size_t preamble_left() const noexcept { return preamble_left_; }

    /// The borrowed socket (redis/async_loop_borrowed.cpp): on an idle connection a caller writes `r`
    /// itself, outside the queue and the write buffer, and reads its replies with reader().
    /// hand_over_alone() gives `r` the next bytes of the stream; commit_write_alone() records
    /// that `written` of them reached the socket; was_written() classifies a failure as
    /// cancel_on_connection_lost() would.
    void hand_over_alone(AsyncRequest& r) noexcept;
    void commit_write_alone(const AsyncRequest& r, std::size_t written) noexcept;
    bool was_written(const AsyncRequest& r) const noexcept { return ledger_.was_written(r.first_byte); }
    /// The parser of the current connection (made by start_connection(), or by the first
    /// consume() of an object that never started one). Precondition: one was made.
    redisReader& reader() noexcept { return *reader_; }

private:
    static void fail(AsyncRequest& r, std::error_code ec);

    std::deque<Request> queued_;  ///< not handed over yet
    std::deque<Request> handed_;  ///< handed over, replies due, in stream order
    std::string out_;             ///< handed-over bytes not written yet
    InflightLedger ledger_;       ///< bytes handed over on this connection, and written
    ReaderPtr reader_;            ///< parses this connection's replies
    std::vector<Reply> preamble_replies_;
    std::size_t preamble_left_ = 0;
};

}  // namespace fencelock::detail

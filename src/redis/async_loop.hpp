#pragma once
// The event loop behind a multiplexed connection: one thread owns a Transport (TCP, Unix or
// TLS) and carries the requests of many caller threads over it.
//
// Queue, batching and matching live in a Multiplexer (redis/multiplexer.hpp), which does no I/O:
// callers' requests queue there, the loop writes what prepare_write() batches (everything
// queued, while no earlier batch is waiting for replies) and feeds back what it wrote and
// read. With one caller this is a plain round trip; with many, one write and one read carry
// all of them.
//
// Failure. Whatever ends the connection (a timeout, EOF, a reset, shutdown), the multiplexer
// knows how many bytes reached the socket, so each request either was not written at all
// (unavailable: safe to retry) or was at least partly written (reply_timeout /
// connection_lost: outcome unknown). A request whose deadline passes drops the whole
// connection: replies still on the way can then never reach the wrong caller.
//
// The borrowed socket (synchronous callers; async_loop_borrowed.cpp). A handed-over command costs two
// thread hand-offs: an eventfd wake-up of the loop, and the loop waking its caller once the
// reply is in. When the connection is ready and idle and callers do not overlap, a caller
// without a completion does the round trip on its own thread instead, as a blocking connection
// would; callers that come meanwhile queue, and the loop batches them once the caller gives the
// socket back. The top of async_loop_borrowed.cpp says why this keeps every guarantee above.
//
// Completions and tasks (the asynchronous lock API). A request with `on_done` is completed by
// calling it on the loop thread instead of waking a waiter, and post_at() runs a task there at
// a given time. Both run between I/O turns, outside the reply handling and without the loop's
// lock, so they may submit and post again; what the loop thread submits needs no wake-up (the
// loop looks at its queue before it polls again). They must not block: every caller of the
// connection waits behind them.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "redis/handshake.hpp"
#include "redis/multiplexed_connection.hpp"
#include "redis/multiplexer.hpp"
#include "redis/reply.hpp"
#include "redis/transport.hpp"

namespace fencelock::detail {

class AsyncLoop {
public:
    using clock = std::chrono::steady_clock;

    explicit AsyncLoop(ConnectionSettings settings);
    /// Stops the loop: requests not written fail with unavailable, written ones with
    /// connection_lost. Joins the thread.
    ~AsyncLoop();
    AsyncLoop(const AsyncLoop&) = delete;
    AsyncLoop& operator=(const AsyncLoop&) = delete;

    /// Queues a request (its deadline set from now); the loop completes it exactly once.
    void submit(std::shared_ptr<AsyncRequest> request);

    /// Carries out a request without a completion and returns once it is done (replies or
    /// error filled in): on the calling thread when the connection is ready and idle
    /// (run_here()), otherwise through the loop (submit() and wait()).
    void call(const std::shared_ptr<AsyncRequest>& request);

    /// The borrowed socket: when the connection is ready and idle (handshake done, nothing queued,
    /// handed over or unwritten, no move of the master pending, the loop's last batch a lone
    /// request) and this is not the loop's thread, borrows the socket and does the round trip on this thread: send(2)
    /// with MSG_NOSIGNAL, poll(2) and recv(2) until the request's deadline. Returns true when the request is done,
    /// false when it was not started (the connection was busy, not ready, closed while idle, or due to move): then
    /// submit() it. Errors are the loop's: unavailable when none of its bytes was written, reply_timeout /
    /// connection_lost when any was, and a failed request drops the connection (the loop closes it before any other
    /// command).
    bool run_here(AsyncRequest& request);

    MultiplexedStats stats() const noexcept;

    using Task = std::move_only_function<void()>;
    /// Runs `task` on the loop thread at `at` (or at its next turn, if that passed). False when
    /// the loop is stopping: the task is then destroyed without running.
    bool post_at(clock::time_point at, Task task);
    /// Every task posted so far runs at the loop's next turn, whatever its time (used to end
    /// the waits of asynchronous operations when their client is destroyed).
    void hurry() noexcept;
    /// Whether the calling thread is this loop's.
    bool on_loop_thread() const noexcept;

private:
    enum class State { idle, connecting, ready };
    /// Who may use the socket (under mutex_). Only the loop moves loop -> parked (idle and
    /// ready) and parked -> loop; only a caller moves parked -> caller, and back to parked or
    /// (when the loop waits for the socket, or the connection must go) to loop.
    enum class Holder { loop, parked, caller };
    /// How a caller left the socket it borrowed, for the loop to act on.
    enum class Returned { healthy, leave, broken };

    void give_back(Returned how, std::error_code failure) noexcept;
    void park_if_idle();
    void reclaim();
    void take_back(Returned how, std::error_code failure);

    void wake() noexcept;
    void run();
    bool take_submissions();
    int poll_timeout_ms(clock::time_point now) const;
    short poll_events() const;
    void handle_events(short revents);
    void read_now();
    void write_now();
    void after_io();
    void broken();
    clock::time_point deadline_of(const AsyncRequest& r) const;
    void expire(clock::time_point now);
    void pump();
    void connect();
    /// Acts on what one consume() parsed: the handshake's outcome, a server that asks us to
    /// leave, the requests it completed.
    void take_replies(Multiplexer::Consumed& consumed);
    /// Closes the connection and fails what it carried: `written` for requests any byte of
    /// which left, `unsent` for the others (queued ones too, unless `queued` keeps them for the
    /// next connection). `why` (when unsent is errc::unavailable and someone gets it) becomes
    /// its detail, "<server>: <why>".
    void drop(std::error_code written, std::error_code unsent, std::string_view why = {},
              Multiplexer::Queued queued = Multiplexer::Queued::fail);
    void fail_all(std::error_code written, std::error_code unsent, std::string_view why = {},
                  Multiplexer::Queued queued = Multiplexer::Queued::fail);
    /// Wakes the request's waiter, or queues its completion (its outcome is filled in).
    void deliver(const std::shared_ptr<AsyncRequest>& r);
    void run_completions();
    void run_due_tasks(clock::time_point now);
    /// After a submission or post: a wake-up unless the loop thread made it.
    void wake_from(bool first) noexcept;

    const ConnectionSettings settings_;
    const std::shared_ptr<Topology> topology_;
    int wake_fd_ = -1;

    // Shared with callers.
    mutable std::mutex mutex_;
    std::vector<std::shared_ptr<AsyncRequest>> submitted_;
    std::vector<std::pair<clock::time_point, Task>> posted_;
    bool hurry_ = false;
    bool stopping_ = false;
    Holder holder_ = Holder::loop;
    int socket_fd_ = -1;                     ///< the socket while parked or lent (the destructor shuts it down)
    bool wake_on_return_ = false;            ///< the loop saw the socket lent and waits for it
    Returned returned_ = Returned::healthy;  ///< set by the borrower, taken by the loop
    std::error_code returned_failure_;       ///< what broke a returned connection
    std::atomic<std::uint64_t> requests_{0}, commands_{0}, writes_{0}, connects_{0}, borrowed_{0}, loop_turns_{0};

    // Loop thread only, or the thread the socket is lent to (holder_ == caller): the lending
    // and the return go through mutex_, so one of them at a time uses these.
    std::optional<Transport> transport_;  ///< the connection, from connect() until drop()
    ServerAddress server_;                ///< what topology_ named for the current connection
    bool read_wants_write_ = false;       ///< TLS: a read waits for the socket to take a write
    State state_ = State::idle;
    clock::time_point connect_deadline_;
    clock::time_point ready_at_;
    std::vector<HandshakeStep> handshake_;  ///< sent on connect, before any caller's command
    std::error_code handshake_error_;
    bool leaving_ = false;          ///< the server asked us to go elsewhere (READONLY...): leave when idle
    std::uint64_t generation_ = 0;  ///< topology_->generation() when this connection was made
    std::vector<std::shared_ptr<AsyncRequest>> taken_;  ///< swapped with submitted_
    Multiplexer mux_;  ///< requests queued and handed over, the write buffer, the reply parser
    std::vector<std::shared_ptr<AsyncRequest>> completed_;  ///< with on_done, not yet called
    std::multimap<clock::time_point, Task> tasks_;          ///< posted, by time
    bool self_submitted_ = false;                           ///< the loop thread queued work: look before polling
    bool parked_ = false;                                   ///< the loop parked the socket before its poll (loop only)
    bool lent_ = false;           ///< the socket was lent when the loop last looked (loop only)
    std::size_t last_batch_ = 0;  ///< requests the last pump() handed over (loop only)

    std::thread thread_;  // started in the constructor body, once every member is ready
};

}  // namespace fencelock::detail

#include "redis/async_loop.hpp"
#include "redis/connect_failure.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <utility>

#include "fencelock/error.hpp"
#include "redis/handshake.hpp"
#include "redis/hiredis_connection.hpp"
#include "redis/signal_free_thread.hpp"
#include "redis/wire.hpp"

namespace fencelock::detail {
namespace {

// The loop whose thread this is, if any.
thread_local const AsyncLoop* current_loop = nullptr;

}  // namespace

AsyncLoop::AsyncLoop(ConnectionSettings settings) : settings_(std::move(settings)), topology_(topology_of(settings_)) {
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) throw std::system_error(errno, std::system_category(), "eventfd");
    try {
        thread_ = start_signal_free_thread([this] { run(); });
    } catch (...) {
        ::close(wake_fd_);
        throw;
    }
}

AsyncLoop::~AsyncLoop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        // A caller doing a round trip on the borrowed socket sees it end at once (end of stream,
        // or a failed send: nothing written) and gives it back; the loop stops after that.
        if (holder_ == Holder::caller) ::shutdown(socket_fd_, SHUT_RDWR);
    }
    wake();
    thread_.join();
    ::close(wake_fd_);
}

void AsyncLoop::submit(std::shared_ptr<AsyncRequest> request) {
    bool first = false;
    {
        std::unique_lock lock(mutex_);
        if (stopping_) {
            lock.unlock();
            request->error = lost_at(server_, "the client is closing");
            if (request->on_done) return std::exchange(request->on_done, nullptr)(request->error, request->replies);
            return request->release_waiter();
        }
        // Stamped under the lock, so deadlines grow in queue order.
        request->deadline = clock::now() + settings_.command_timeout;
        submitted_.push_back(std::move(request));
        requests_.fetch_add(1, std::memory_order_relaxed);
        first = submitted_.size() == 1;
    }
    wake_from(first);
}

bool AsyncLoop::post_at(clock::time_point at, Task task) {
    bool first = false;
    {
        std::lock_guard lock(mutex_);
        if (stopping_) return false;
        posted_.emplace_back(at, std::move(task));
        first = posted_.size() == 1 && submitted_.empty();
    }
    wake_from(first);
    return true;
}

void AsyncLoop::hurry() noexcept {
    {
        std::lock_guard lock(mutex_);
        hurry_ = true;
    }
    wake_from(true);
}

bool AsyncLoop::on_loop_thread() const noexcept { return current_loop == this; }

// One wake-up per batch: while work is queued, the loop has a wake-up pending. The loop
// thread itself looks at its queues before it polls again.
void AsyncLoop::wake_from(bool first) noexcept {
    if (on_loop_thread()) self_submitted_ = true;
    else if (first) wake();
}

MultiplexedStats AsyncLoop::stats() const noexcept {
    bool parked = false;
    {
        std::lock_guard lock(mutex_);
        parked = holder_ == Holder::parked;
    }
    return {requests_.load(std::memory_order_relaxed),
            commands_.load(std::memory_order_relaxed),
            writes_.load(std::memory_order_relaxed),
            connects_.load(std::memory_order_relaxed),
            borrowed_.load(std::memory_order_relaxed),
            loop_turns_.load(std::memory_order_relaxed),
            parked};
}

void AsyncLoop::wake() noexcept {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(wake_fd_, &one, sizeof one);
}

void AsyncLoop::run() {
    current_loop = this;
    for (;;) {
        pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {-1, 0, 0}};  // poll ignores fd -1
        // Parked, the loop watches the socket only for the server closing it: poll(2) wakes a
        // waiter only for the events it asked for, so the reply a caller on the borrowed socket
        // waits for does not wake the loop. Lent, the socket is not the loop's to watch.
        if (transport_ && !lent_) fds[1] = {transport_->fd(), parked_ ? short(POLLRDHUP) : poll_events(), 0};
        const int ready = ::poll(fds, 2, poll_timeout_ms(clock::now()));
        loop_turns_.fetch_add(1, std::memory_order_relaxed);
        if (ready > 0 && fds[0].revents != 0) {
            std::uint64_t count;
            [[maybe_unused]] const auto n = ::read(wake_fd_, &count, sizeof count);
        }
        if (parked_ || lent_) reclaim();  // a caller may have borrowed the socket meanwhile
        // A drop in reclaim() leaves no transport: a new connection is made only in pump().
        if (ready > 0 && fds[1].revents != 0 && transport_ && !lent_) handle_events(fds[1].revents);
        run_completions();
        if (!take_submissions()) break;
        const auto now = clock::now();
        run_due_tasks(now);
        if (!lent_) {
            expire(now);
            pump();
        }
        run_completions();  // what pump() or expire() failed
        if (!lent_) park_if_idle();
    }
    drop(errc::connection_lost, errc::unavailable, "the client is closing");
    run_completions();
    // Tasks left when the loop stops run now, so that no operation is forgotten; what they
    // submit fails at once (submit() on a stopping loop).
    run_due_tasks(clock::time_point::max());
}

void AsyncLoop::run_completions() {
    while (!completed_.empty()) {
        auto done = std::exchange(completed_, {});
        for (auto& r : done) {
            auto callback = std::exchange(r->on_done, nullptr);
            callback(r->error, r->replies);
        }
    }
}

void AsyncLoop::run_due_tasks(clock::time_point now) {
    while (!tasks_.empty() && tasks_.begin()->first <= now) {
        auto task = std::move(tasks_.begin()->second);
        tasks_.erase(tasks_.begin());
        task();
    }
}

bool AsyncLoop::take_submissions() {
    bool stop = false;
    bool hurry = false;
    std::vector<std::pair<clock::time_point, Task>> posted;
    {
        std::lock_guard lock(mutex_);
        taken_.swap(submitted_);
        posted.swap(posted_);
        hurry = std::exchange(hurry_, false);
        stop = stopping_ && !lent_;  // a lent socket comes back first (the destructor shut it down)
    }
    self_submitted_ = false;
    for (auto& r : taken_) mux_.add(std::move(r));
    taken_.clear();
    for (auto& [at, task] : posted) tasks_.emplace(at, std::move(task));
    if (hurry) {
        // Everything posted so far becomes due now, in its order.
        std::multimap<clock::time_point, Task> due;
        for (auto& [at, task] : tasks_) due.emplace(clock::time_point::min(), std::move(task));
        tasks_ = std::move(due);
    }
    return !stop;
}

// A request handed to a fresh connection gets its full command_timeout from the moment the
// connection is ready: the connect has a budget of its own.
AsyncLoop::clock::time_point AsyncLoop::deadline_of(const AsyncRequest& r) const {
    return std::max(r.deadline, ready_at_ + settings_.command_timeout);
}

int AsyncLoop::poll_timeout_ms(clock::time_point now) const {
    if (self_submitted_) return 0;
    auto next = tasks_.empty() ? clock::time_point::max() : tasks_.begin()->first;
    if (state_ == State::connecting) next = std::min(next, connect_deadline_);
    // Deadlines grow along each queue and handed-over requests are older: the fronts decide.
    // While a caller has the socket its own deadline comes first (requests queued behind it
    // were stamped later), and it gives the socket back by then, waking the loop.
    if (state_ == State::ready && !lent_) {
        if (const auto* r = mux_.oldest_handed_over()) next = std::min(next, deadline_of(*r));
        if (const auto* r = mux_.oldest_queued()) next = std::min(next, deadline_of(*r));
    }
    if (next == clock::time_point::max()) return -1;
    if (next <= now) return 0;
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
    return static_cast<int>(std::min<std::int64_t>(ms, INT_MAX));
}

short AsyncLoop::poll_events() const {
    const Transport& t = *transport_;
    if (!t.is_open()) return t.want() == Transport::Want::read ? POLLIN : POLLOUT;  // connect or TLS handshake
    return static_cast<short>(POLLIN | (!mux_.write_buffer().empty() || read_wants_write_ ? POLLOUT : 0));
}

void AsyncLoop::handle_events(short revents) {
    Transport& t = *transport_;
    if (!t.is_open()) {
        const auto io = t.advance();
        if (io.status == Transport::Io::Status::failed) {
            // advance() recorded why (refused, a TLS verification failure...).
            topology_->report_failure(server_, errc::unavailable);
            return drop(errc::unavailable, errc::unavailable);
        }
        if (io.ok()) write_now();  // the handshake, queued at connect
        return;
    }
    // Errors and hang-ups go to the read side, which reports the end of the stream.
    if ((revents & (POLLIN | POLLERR | POLLHUP | POLLRDHUP)) != 0 || read_wants_write_) read_now();
    if (transport_ && !mux_.write_buffer().empty()) write_now();
}

void AsyncLoop::read_now() {
    constexpr std::size_t read_size = 16 * 1024;
    for (;;) {
        char buffer[read_size];
        const auto io = transport_->read_some(buffer, sizeof buffer);
        read_wants_write_ = io.status == Transport::Io::Status::again && transport_->want() == Transport::Want::write;
        // Replies that came before an end of stream still reach their callers.
        if (io.ok()) {
            auto consumed = mux_.consume({buffer, io.bytes});
            take_replies(consumed);
            if (consumed.error) return broken();
        }
        if (io.status == Transport::Io::Status::closed || io.status == Transport::Io::Status::failed) return broken();
        // One more read may find bytes without polling: this one filled the buffer, or TLS
        // holds bytes poll(2) cannot see.
        if (!(io.ok() && io.bytes == read_size) && !transport_->holds_bytes()) break;
    }
    after_io();
}

void AsyncLoop::write_now() {
    bool wrote = false;
    Transport::Io io;
    while (!mux_.write_buffer().empty()) {
        io = transport_->write_some(mux_.write_buffer());
        if (!io.ok()) break;
        mux_.commit_write(io.bytes);  // a short write leaves the rest for the next one
        wrote = true;
    }
    if (wrote) writes_.fetch_add(1, std::memory_order_relaxed);
    if (io.status == Transport::Io::Status::failed || io.status == Transport::Io::Status::closed) return broken();
    after_io();
}

void AsyncLoop::broken() {
    // The stream ended or failed; the multiplexer still counts what reached the socket.
    const auto& why = transport_->last_failure();
    std::error_code unsent = handshake_error_;
    std::string lost_because;
    if (!unsent && state_ == State::connecting) {
        unsent = handshake_ended(server_, why.words, why.cause);
    } else if (!unsent) {
        unsent = errc::unavailable;
        lost_because = why.words.empty() ? "connection lost" : why.words;
        remember_error_detail(errc::connection_lost, server_name(server_) + ": " + lost_because, why.cause);
    }
    topology_->report_failure(server_, handshake_error_ ? handshake_error_ : errc::connection_lost);
    drop(errc::connection_lost, unsent, lost_because);
}

void AsyncLoop::after_io() {
    if (handshake_error_) {
        topology_->report_failure(server_, handshake_error_);
        drop(errc::connection_lost, handshake_error_);
    } else if (state_ == State::connecting && transport_->is_open() && mux_.preamble_left() == 0) {
        state_ = State::ready;
        ready_at_ = clock::now();
    }
}

void AsyncLoop::expire(clock::time_point now) {
    if (state_ == State::connecting && now >= connect_deadline_) {
        // Connected and unanswered, or connect(2) itself still pending.
        const std::error_code ec = transport_->is_open() ? handshake_timed_out(server_) : transport_->timed_out();
        topology_->report_failure(server_, ec);
        drop(ec, ec);  // no caller's command was handed over yet
    } else if (const auto* handed = mux_.oldest_handed_over(), *queued = mux_.oldest_queued();
               state_ == State::ready &&
               ((handed && deadline_of(*handed) <= now) || (queued && deadline_of(*queued) <= now))) {
        // A reply that may still come would be read as the answer to the next command.
        topology_->report_failure(server_, errc::reply_timeout);
        remember_error_detail(errc::reply_timeout, server_name(server_) + ": no reply within the command timeout");
        drop(errc::reply_timeout, errc::unavailable,
             "an earlier command got no reply in time: the connection was closed");
    }
}

void AsyncLoop::pump() {
    // A server that answered READONLY, MASTERDOWN or LOADING is no master now: once the replies
    // of what was handed to it are in, close it (failing no one) and let the requests waiting
    // meanwhile go to the server the topology names next.
    if (state_ == State::ready && topology_->generation() != generation_) leaving_ = true;  // master moved
    if (leaving_ && !mux_.oldest_handed_over()) {
        topology_->report_failure(server_, errc::not_master);
        drop(errc::connection_lost, errc::unavailable, "the server is no longer the master", Multiplexer::Queued::keep);
    }
    if (!mux_.oldest_queued()) return;
    if (state_ == State::idle) connect();
    // One batch in flight at a time (Multiplexer::prepare_write() says why, and what goes at
    // once anyway); a server we are leaving gets nothing more while replies are due.
    if (state_ != State::ready) return;
    if (leaving_ && mux_.oldest_handed_over()) return;
    const auto batch = mux_.prepare_write();
    if (batch.requests == 0) return;
    last_batch_ = batch.requests;
    commands_.fetch_add(batch.commands, std::memory_order_relaxed);
    write_now();  // the socket is almost always writable: no need to wait for poll
}

void AsyncLoop::connect() {
    connects_.fetch_add(1, std::memory_order_relaxed);
    const RedisEndpoint& ep = settings_.endpoint;
    generation_ = topology_->generation();  // before resolve(): a move during it counts
    auto server = topology_->resolve();
    if (!server) {
        fail_all(server.error(), server.error());
        return;
    }
    server_ = std::move(*server);
    auto transport = Transport::start(server_, ep.tls);
    if (!transport) {
        topology_->report_failure(server_, transport.error());
        fail_all(transport.error(), transport.error());
        return;
    }
    transport_.emplace(std::move(*transport));
    read_wants_write_ = false;
    state_ = State::connecting;
    connect_deadline_ = clock::now() + settings_.connect_timeout;

    // The handshake goes first, and callers' commands wait for all of its replies: none may run
    // unauthenticated, in the wrong database, or on a server that may evict keys. It is queued
    // now and written once the transport is open.
    handshake_ = handshake_steps(ep, {.confirm_master = topology_->follows_master()});
    std::string preamble;
    for (const auto& step : handshake_) append_resp(preamble, step.argv);
    mux_.start_connection(std::move(preamble), handshake_.size());
}

void AsyncLoop::take_replies(Multiplexer::Consumed& consumed) {
    if (consumed.preamble) {
        const ErrorPlace place(server_name(server_));
        handshake_error_ = judge_handshake(handshake_, *consumed.preamble);
        note_clock_offset(server_name(server_),
                          clock_offset_in(handshake_, *consumed.preamble, std::chrono::system_clock::now()));
        // after_io() acts on the outcome
    }
    if (consumed.asks_for_another_server && topology_->follows_master()) leaving_ = true;
    for (const auto& r : consumed.completed) deliver(r);
}

void AsyncLoop::drop(std::error_code written, std::error_code unsent, std::string_view why,
                     Multiplexer::Queued queued) {
    transport_.reset();
    fail_all(written, unsent, why, queued);
}

void AsyncLoop::fail_all(std::error_code written, std::error_code unsent, std::string_view why,
                         Multiplexer::Queued queued) {
    // The detail is recorded only for someone who gets it: an idle close must not replace the
    // cause of an earlier failure a caller is still reporting.
    if (mux_.would_fail_unsent(queued) && !why.empty() && unsent == errc::unavailable) unsent = lost_at(server_, why);
    for (const auto& r : mux_.cancel_on_connection_lost(written, unsent, queued)) deliver(r);
    state_ = State::idle;
    handshake_error_ = {};
    leaving_ = false;
    read_wants_write_ = false;
}

void AsyncLoop::deliver(const std::shared_ptr<AsyncRequest>& request) {
    // A callback runs later, between I/O turns, outside the reply handling.
    if (request->on_done) return completed_.push_back(request);
    request->release_waiter();
}

}  // namespace fencelock::detail

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

namespace fencelock::detail {
namespace {

// The loop whose thread this is, if any.
thread_local const AsyncLoop* current_loop = nullptr;

}  // namespace

void AsyncRequest::release_waiter() noexcept {
    done.store(1, std::memory_order_release);
    done.notify_one();
}

void AsyncRequest::wait() const noexcept {
    while (done.load(std::memory_order_acquire) == 0) done.wait(0, std::memory_order_acquire);
}

AsyncLoop::AsyncLoop(ConnectionSettings settings)
    : settings_(std::move(settings)), topology_(topology_of(settings_)) {
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
    return {requests_.load(std::memory_order_relaxed), commands_.load(std::memory_order_relaxed),
            writes_.load(std::memory_order_relaxed),   connects_.load(std::memory_order_relaxed),
            direct_.load(std::memory_order_relaxed),   loop_turns_.load(std::memory_order_relaxed),
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
        // waiter only for the events it asked for, so the reply a caller on the direct path
        // waits for does not wake the loop. Lent, the socket is not the loop's to watch.
        if (wire_ && !lent_) fds[1] = {wire_->transport().fd(), parked_ ? short(POLLRDHUP) : poll_events(), 0};
        const int ready = ::poll(fds, 2, poll_timeout_ms(clock::now()));
        loop_turns_.fetch_add(1, std::memory_order_relaxed);
        if (ready > 0 && fds[0].revents != 0) {
            std::uint64_t count;
            [[maybe_unused]] const auto n = ::read(wake_fd_, &count, sizeof count);
        }
        if (parked_ || lent_) reclaim();  // a caller may have borrowed the socket meanwhile
        // A drop in reclaim() leaves no wire: a new connection is made only in pump().
        if (ready > 0 && fds[1].revents != 0 && wire_ && !lent_) handle_events(fds[1].revents);
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
    for (auto& r : taken_) waiting_.push_back(std::move(r));
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
    if (state_ == State::ready && !lent_ && !in_flight_.empty()) next = std::min(next, deadline_of(*in_flight_.front()));
    if (state_ == State::ready && !lent_ && !waiting_.empty()) next = std::min(next, deadline_of(*waiting_.front()));
    if (next == clock::time_point::max()) return -1;
    if (next <= now) return 0;
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
    return static_cast<int>(std::min<std::int64_t>(ms, INT_MAX));
}

short AsyncLoop::poll_events() const {
    const Transport& t = wire_->transport();
    if (!t.is_open()) return t.want() == Transport::Want::read ? POLLIN : POLLOUT;  // connect or TLS handshake
    return static_cast<short>(POLLIN | (wire_->unsent() > 0 || read_wants_write_ ? POLLOUT : 0));
}

void AsyncLoop::handle_events(short revents) {
    Transport& t = wire_->transport();
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
    if (wire_ && wire_->unsent() > 0) write_now();
}

void AsyncLoop::read_now() {
    for (;;) {
        const auto io = wire_->fill();
        read_wants_write_ = io.status == Transport::Io::Status::again && wire_->transport().want() == Transport::Want::write;
        // Replies that came before an end of stream still reach their callers.
        for (;;) {
            auto reply = wire_->parsed_reply();
            if (!reply) return broken();
            if (!*reply) break;
            on_reply(std::move(**reply));
        }
        if (io.status == Transport::Io::Status::closed || io.status == Transport::Io::Status::failed) return broken();
        if (!wire_->may_hold_more(io)) break;
    }
    after_io();
}

void AsyncLoop::write_now() {
    const std::uint64_t before = ledger_.written();
    const auto io = wire_->flush();
    ledger_.note_buffered(wire_->unsent());
    if (ledger_.written() > before) writes_.fetch_add(1, std::memory_order_relaxed);
    if (io.status == Transport::Io::Status::failed || io.status == Transport::Io::Status::closed) return broken();
    after_io();
}

void AsyncLoop::broken() {
    // The stream ended or failed; the ledger still counts what reached the socket.
    const auto& why = wire_->transport().last_failure();
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
    } else if (state_ == State::connecting && wire_->transport().is_open() && handshake_left_ == 0) {
        state_ = State::ready;
        ready_at_ = clock::now();
    }
}

void AsyncLoop::expire(clock::time_point now) {
    if (state_ == State::connecting && now >= connect_deadline_) {
        // Connected and unanswered, or connect(2) itself still pending.
        const std::error_code ec = wire_->transport().is_open() ? handshake_timed_out(server_)
                                                                : wire_->transport().timed_out();
        topology_->report_failure(server_, ec);
        drop(ec, ec);  // no caller's command was handed over yet
    } else if (state_ == State::ready &&
               ((!in_flight_.empty() && deadline_of(*in_flight_.front()) <= now) ||
                (!waiting_.empty() && deadline_of(*waiting_.front()) <= now))) {
        // A reply that may still come would be read as the answer to the next command.
        topology_->report_failure(server_, errc::reply_timeout);
        remember_error_detail(errc::reply_timeout, server_name(server_) + ": no reply within the command timeout");
        drop(errc::reply_timeout, errc::unavailable, "an earlier command got no reply in time: the connection was closed");
    }
}

void AsyncLoop::pump() {
    // A server that answered READONLY, MASTERDOWN or LOADING is no master now: once the replies
    // of what was handed to it are in, close it (failing no one) and let the requests waiting
    // meanwhile go to the server the topology names next.
    if (state_ == State::ready && topology_->generation() != generation_) leaving_ = true;  // master moved
    if (leaving_ && in_flight_.empty()) {
        topology_->report_failure(server_, errc::not_master);
        auto keep = std::exchange(waiting_, {});
        drop(errc::connection_lost, errc::unavailable, "the server is no longer the master");
        waiting_ = std::move(keep);
    }
    if (waiting_.empty()) return;
    if (state_ == State::idle) connect();
    // One batch in flight at a time: whatever queues meanwhile leaves in the next write. A
    // request with a completion goes at once: the loop thread submitted it while handling a
    // turn's replies, so a turn's worth leaves together anyway, and holding it back would leave
    // Redis idle while the loop handles the previous batch (16 async lockers: 15,466 -> 18,073
    // cycles/s, 2026-12-02).
    if (state_ != State::ready) return;
    if (!in_flight_.empty() && (leaving_ || !waiting_.front()->on_done)) return;
    last_batch_ = waiting_.size();
    while (!waiting_.empty()) {
        in_flight_.push_back(std::move(waiting_.front()));
        waiting_.pop_front();
        AsyncRequest& r = *in_flight_.back();
        r.first_byte = ledger_.handed();
        wire_->append_raw(r.wire);
        ledger_.hand_over(r.wire.size());
        commands_.fetch_add(r.ends.size(), std::memory_order_relaxed);
    }
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
    wire_.emplace(std::move(*transport));
    read_wants_write_ = false;
    state_ = State::connecting;
    connect_deadline_ = clock::now() + settings_.connect_timeout;

    // The handshake goes first, and callers' commands wait for all of its replies: none may run
    // unauthenticated, in the wrong database, or on a server that may evict keys. It is queued
    // now and written once the transport is open.
    handshake_ = handshake_steps(ep, {.confirm_master = topology_->follows_master()});
    handshake_replies_.clear();
    handshake_left_ = handshake_.size();
    for (const auto& step : handshake_) wire_->append(step.argv);
    ledger_.hand_over(wire_->unsent());
}

void AsyncLoop::on_reply(Reply reply) {
    if (handshake_left_ > 0) {
        handshake_replies_.push_back(std::move(reply));
        if (--handshake_left_ == 0) {
            const ErrorPlace place(server_name(server_));
            handshake_error_ = judge_handshake(handshake_, handshake_replies_);
            note_clock_offset(server_name(server_),
                              clock_offset_in(handshake_, handshake_replies_, std::chrono::system_clock::now()));
        }
        return;  // after_io() acts on the outcome
    }
    AsyncRequest& r = *in_flight_.front();
    r.replies.push_back(std::move(reply));
    if (topology_->follows_master() && asks_for_another_server(r.replies.back())) leaving_ = true;
    if (r.replies.size() == r.ends.size()) {
        complete(in_flight_.front(), {});
        in_flight_.pop_front();
    }
}

void AsyncLoop::drop(std::error_code written, std::error_code unsent, std::string_view why) {
    wire_.reset();
    fail_all(written, unsent, why);
}

void AsyncLoop::fail_all(std::error_code written, std::error_code unsent, std::string_view why) {
    // The detail is recorded only for someone who gets it: an idle close must not replace the
    // cause of an earlier failure a caller is still reporting.
    const bool someone_unsent = !waiting_.empty() || std::ranges::any_of(in_flight_, [&](const auto& r) {
        return !ledger_.was_written(r->first_byte);
    });
    if (someone_unsent && !why.empty() && unsent == errc::unavailable) unsent = lost_at(server_, why);
    for (auto& r : in_flight_) complete(r, ledger_.was_written(r->first_byte) ? written : unsent);
    for (auto& r : waiting_) complete(r, unsent);
    in_flight_.clear();
    waiting_.clear();
    state_ = State::idle;
    handshake_left_ = 0;
    handshake_replies_.clear();
    handshake_error_ = {};
    ledger_.reset();
    leaving_ = false;
    read_wants_write_ = false;
}

void AsyncLoop::complete(const std::shared_ptr<AsyncRequest>& request, std::error_code ec) {
    AsyncRequest& r = *request;
    r.error = ec;
    if (ec) r.replies.clear();
    // A callback runs later, between I/O turns: here we may be inside hiredis's read.
    if (r.on_done) return completed_.push_back(request);
    r.release_waiter();
}

}  // namespace fencelock::detail

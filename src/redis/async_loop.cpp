#include "redis/async_loop.hpp"
#include "redis/connect_failure.hpp"

#include <fcntl.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <hiredis/sds.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <utility>

#include "fencelock/error.hpp"
#include "redis/handshake.hpp"
#include "redis/hiredis_context.hpp"
#include "redis/signal_free_thread.hpp"

namespace fencelock::detail {
namespace {

void append_header(std::string& out, char type, std::size_t n) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
    out += type;
    out.append(digits, end);
    out += "\r\n";
}

// The loop whose thread this is, if any.
thread_local const AsyncLoop* current_loop = nullptr;

}  // namespace

void append_resp(std::string& out, std::span<const std::string_view> argv) {
    append_header(out, '*', argv.size());
    for (std::string_view a : argv) {
        append_header(out, '$', a.size());
        out.append(a);
        out += "\r\n";
    }
}

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
            request->error = make_error_code(errc::unavailable);
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
        if (ac_ != nullptr && !lent_)
            fds[1] = {ac_->c.fd,
                      static_cast<short>(parked_ ? POLLRDHUP : ((want_read_ ? POLLIN : 0) | (want_write_ ? POLLOUT : 0))), 0};
        const int ready = ::poll(fds, 2, poll_timeout_ms(clock::now()));
        loop_turns_.fetch_add(1, std::memory_order_relaxed);
        if (ready > 0 && fds[0].revents != 0) {
            std::uint64_t count;
            [[maybe_unused]] const auto n = ::read(wake_fd_, &count, sizeof count);
        }
        if (parked_ || lent_) reclaim();  // a caller may have borrowed the socket meanwhile
        // A drop in reclaim() leaves ac_ null: a new connection is made only in pump().
        if (ready > 0 && fds[1].revents != 0 && ac_ != nullptr && !lent_) handle_events(fds[1].revents);
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
    drop(errc::connection_lost, errc::unavailable);
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

void AsyncLoop::handle_events(short revents) {
    // Errors and hang-ups go to the read side: hiredis then reports the connect error or EOF.
    if ((revents & (POLLIN | POLLERR | POLLHUP | POLLRDHUP)) != 0) {
        redisAsyncHandleRead(ac_);
        after_io(ledger_.written());
    }
    if (ac_ != nullptr && want_write_ && (revents & POLLOUT) != 0) write_now();
}

void AsyncLoop::write_now() {
    const std::uint64_t before = ledger_.written();
    redisAsyncHandleWrite(ac_);
    after_io(before);
}

void AsyncLoop::after_io(std::uint64_t written_before) {
    if (ac_ == nullptr) {
        // hiredis closed the connection (EOF, reset, refused, unparsable reply). A failed
        // write(2) wrote nothing, so the ledger still counts what reached the socket.
        std::error_code unsent = handshake_error_ ? locate_handshake_failure(handshake_error_, server_)
                                                  : make_error_code(errc::unavailable);
        if (!handshake_error_ && state_ == State::connecting)
            unsent = connection_ended(server_, closed_because_);
        topology_->report_failure(server_, handshake_error_ ? handshake_error_ : errc::connection_lost);
        fail_all(errc::connection_lost, unsent);
        return;
    }
    ledger_.note_buffered(sdslen(ac_->c.obuf));
    if (ledger_.written() > written_before) writes_.fetch_add(1, std::memory_order_relaxed);
    if (handshake_error_) {
        topology_->report_failure(server_, handshake_error_);
        drop(errc::connection_lost, locate_handshake_failure(handshake_error_, server_));
    } else if (state_ == State::connecting && (ac_->c.flags & REDIS_CONNECTED) != 0 && handshake_left_ == 0) {
        state_ = State::ready;
        ready_at_ = clock::now();
    }
}

void AsyncLoop::expire(clock::time_point now) {
    if (state_ == State::connecting && now >= connect_deadline_) {
        // Connected and unanswered, or connect(2) itself still pending.
        const std::error_code ec = ac_ != nullptr && (ac_->c.flags & REDIS_CONNECTED) != 0
                                       ? handshake_timed_out(server_)
                                       : connect_failed(server_, "connect timed out");
        topology_->report_failure(server_, ec);
        drop(ec, ec);  // no caller's command was handed over yet
    } else if (state_ == State::ready &&
               ((!in_flight_.empty() && deadline_of(*in_flight_.front()) <= now) ||
                (!waiting_.empty() && deadline_of(*waiting_.front()) <= now))) {
        // A reply that may still come would be read as the answer to the next command.
        topology_->report_failure(server_, errc::reply_timeout);
        drop(errc::reply_timeout, errc::unavailable);
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
        drop(errc::connection_lost, errc::unavailable);
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
        std::size_t begin = 0;
        for (std::size_t end : r.ends) {
            if (redisAsyncFormattedCommand(ac_, reply_callback, this, r.wire.data() + begin, end - begin) != REDIS_OK) {
                drop(errc::connection_lost, errc::unavailable);
                return;
            }
            ledger_.hand_over(end - begin);
            begin = end;
        }
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
    redisAsyncContext* ac = redisAsyncConnect(server_.host.c_str(), server_.port);
    if (ac == nullptr || ac->err != 0) {
        const std::error_code ec = connect_failed(server_, ac != nullptr ? ac->errstr : "out of memory");
        if (ac != nullptr) redisAsyncFree(ac);
        topology_->report_failure(server_, ec);
        fail_all(ec, ec);
        return;
    }
    closed_because_.clear();
    // hiredis 0.14 creates the socket without SOCK_CLOEXEC: a child process must not keep
    // the lock connection open.
    ::fcntl(ac->c.fd, F_SETFD, ::fcntl(ac->c.fd, F_GETFD) | FD_CLOEXEC);
    redisEnableKeepAlive(&ac->c);
    ac->ev.data = this;
    ac->ev.addRead = ev_add_read;
    ac->ev.delRead = ev_del_read;
    ac->ev.addWrite = ev_add_write;
    ac->ev.delWrite = ev_del_write;
    ac->ev.cleanup = ev_cleanup;
    ac_ = ac;
    want_read_ = want_write_ = true;  // writable means connect(2) finished, one way or the other
    state_ = State::connecting;
    connect_deadline_ = clock::now() + settings_.connect_timeout;

    // The handshake goes first, and callers' commands wait for all of its replies: none may run
    // unauthenticated, in the wrong database, or on a server that may evict keys.
    handshake_ = handshake_steps(ep, {.confirm_master = topology_->follows_master()});
    handshake_replies_.clear();
    std::string wire;
    std::vector<std::size_t> ends;
    for (const auto& step : handshake_) {
        const std::vector<std::string_view> argv(step.argv.begin(), step.argv.end());
        append_resp(wire, argv);
        ends.push_back(wire.size());
    }
    handshake_left_ = ends.size();
    std::size_t begin = 0;
    for (std::size_t end : ends) {
        redisAsyncFormattedCommand(ac_, reply_callback, this, wire.data() + begin, end - begin);
        ledger_.hand_over(end - begin);
        begin = end;
    }
}

void AsyncLoop::on_reply(redisReply* reply) {
    if (handshake_left_ > 0) {
        handshake_replies_.push_back(convert(reply));
        if (--handshake_left_ == 0) {
            handshake_error_ = judge_handshake(handshake_, handshake_replies_);
            note_clock_offset(server_name(server_),
                              clock_offset_in(handshake_, handshake_replies_, std::chrono::system_clock::now()));
        }
        return;  // after_io() acts on the outcome: the context may not be freed in a callback
    }
    AsyncRequest& r = *in_flight_.front();
    r.replies.push_back(convert(reply));
    if (topology_->follows_master() && asks_for_another_server(r.replies.back())) leaving_ = true;
    if (r.replies.size() == r.ends.size()) {
        complete(in_flight_.front(), {});
        in_flight_.pop_front();
    }
}

void AsyncLoop::drop(std::error_code written, std::error_code unsent) {
    // Runs the pending callbacks with NULL (ignored: fail_all knows what was written) and
    // ev_cleanup, which forgets the context.
    if (ac_ != nullptr) redisAsyncFree(ac_);
    ac_ = nullptr;
    fail_all(written, unsent);
}

void AsyncLoop::fail_all(std::error_code written, std::error_code unsent) {
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
    want_read_ = want_write_ = false;
}

void AsyncLoop::complete(const std::shared_ptr<AsyncRequest>& request, std::error_code ec) {
    AsyncRequest& r = *request;
    r.error = ec;
    if (ec) r.replies.clear();
    // A callback runs later, between I/O turns: here we may be inside hiredis's read.
    if (r.on_done) return completed_.push_back(request);
    r.release_waiter();
}

void AsyncLoop::ev_add_read(void* self) { static_cast<AsyncLoop*>(self)->want_read_ = true; }
void AsyncLoop::ev_del_read(void* self) { static_cast<AsyncLoop*>(self)->want_read_ = false; }
void AsyncLoop::ev_add_write(void* self) { static_cast<AsyncLoop*>(self)->want_write_ = true; }
void AsyncLoop::ev_del_write(void* self) { static_cast<AsyncLoop*>(self)->want_write_ = false; }

void AsyncLoop::ev_cleanup(void* self) {
    auto* loop = static_cast<AsyncLoop*>(self);
    if (loop->ac_ != nullptr && loop->ac_->err != 0) loop->closed_because_ = loop->ac_->errstr;
    loop->ac_ = nullptr;  // hiredis frees the context right after this
    loop->want_read_ = loop->want_write_ = false;
}

void AsyncLoop::reply_callback(redisAsyncContext*, void* reply, void* self) {
    if (reply != nullptr) static_cast<AsyncLoop*>(self)->on_reply(static_cast<redisReply*>(reply));
}

}  // namespace fencelock::detail

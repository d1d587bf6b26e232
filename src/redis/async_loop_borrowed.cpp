// The borrowed socket of AsyncLoop (redis/async_loop.hpp): a synchronous caller that finds the
// connection ready and idle does its round trip on its own thread.
//
// Why. Through the loop, a command costs two thread hand-offs: the caller wakes the loop (an
// eventfd write; the loop's poll returns, it reads the eventfd and writes the command), and
// the loop wakes the caller once the reply is in (a futex). With one caller, which is most of
// an application's locking, these are most of what the client adds to the round trip. On the
// borrowed socket the caller writes (send), waits (poll) and reads (recv) itself, and the loop
// thread stays asleep.
//
// How the socket changes hands (holder_, under mutex_):
//   loop    the loop thread uses the socket; callers submit().
//   parked  the loop found the connection idle before it polled: ready (handshake done),
//           nothing queued, handed over, buffered or half-read, no move of the master pending,
//           and its last batch was a lone request (park_if_idle() says why). It polls the
//           socket for POLLRDHUP only (a server closing the idle connection).
//   caller  a caller took the parked socket (nothing submitted, not stopping) and does one
//           request's round trip; it gives the socket back parked, or to the loop (with a
//           wake-up) when the loop is waiting for it or the connection has to go.
// The loop takes a parked socket back (reclaim()) whenever it wakes.
//
// Why it is safe:
// - One user at a time. While the socket is lent the loop does no I/O and neither expires,
//   pumps nor drops: it queues submissions and runs tasks. The transport, the multiplexer
//   (its stream offsets, its parser) and the connection's fields are used by the borrower
//   alone, and the lending and the return go through mutex_, which orders each side's use
//   before the other's (what ThreadSanitizer checks). Only the loop thread creates or closes a
//   transport.
// - Matching. Nothing is in flight when a caller borrows the socket and nothing else is
//   written until it gives it back, so the replies on the socket are its own, in order. Callers
//   that come meanwhile queue and leave together, in one write, after the return: batching
//   stays the loop's. The handshake came first: only a ready connection is parked.
// - Failure classification. The request's bytes count in the multiplexer's stream offsets
//   (Multiplexer::hand_over_alone) as on the loop: handed over, then what send(2) wrote.
//   Nothing written: unavailable. Any byte written and no reply: reply_timeout (the request's
//   deadline, the same command_timeout from the call, bounds every poll) or connection_lost. A failed round trip gives
//   the connection back broken: the loop reports it to the topology and closes it before anything else is written on
//   it, so a late reply can never reach another caller. Requests queued meanwhile were never written: they go out on a
//   new connection.
// - Topology. A connection made before the master moved (generation) is not used: the loop
//   leaves it. A READONLY, MASTERDOWN or LOADING reply reaches its caller, and the connection
//   goes back leaving: the loop closes it, failing no one, as after such a reply of its own.
// - Signals. The caller's thread may take SIGPIPE; it only send()s with MSG_NOSIGNAL and
//   recv()s through the transport (redis/blocking_io.hpp), TLS included.
// - An idle close. The parked loop still wakes when the server closes the socket and closes it
//   too; and a borrower peeks before writing, so a close the loop has not seen yet costs no
//   command an unknown outcome (it goes to the loop, which reconnects).
// - Destruction. The destructor shuts a lent socket down, so the borrower's round trip ends at
//   once (unavailable if nothing was written, connection_lost if anything was); the loop
//   stops only once the socket is back. The borrower wakes the loop under mutex_ and touches
//   nothing of it after the lock is released.
#include <algorithm>
#include <utility>

#include "fencelock/error.hpp"
#include "redis/async_loop.hpp"
#include "redis/blocking_io.hpp"
#include "redis/connect_failure.hpp"

namespace fencelock::detail {

void AsyncLoop::call(const std::shared_ptr<AsyncRequest>& request) {
    if (run_here(*request)) return;
    submit(request);
    request->wait();
}

bool AsyncLoop::run_here(AsyncRequest& r) {
    if (r.on_done || on_loop_thread()) return false;
    {
        std::lock_guard lock(mutex_);
        if (stopping_ || holder_ != Holder::parked || !submitted_.empty()) return false;
        holder_ = Holder::caller;
        r.deadline = clock::now() + settings_.command_timeout;  // as submit() would stamp it
    }
    Transport& transport = *transport_;
    // From here until give_back() this thread has the connection (see the top of this file).
    if (topology_->generation() != generation_) {
        give_back(Returned::leave, {});  // the loop leaves this server, then serves the request
        return false;
    }
    if (blocking_io::look(transport) == blocking_io::IdleSocket::closed) {
        give_back(Returned::broken, errc::connection_lost);  // the loop reconnects for it
        return false;
    }
    requests_.fetch_add(1, std::memory_order_relaxed);
    borrowed_.fetch_add(1, std::memory_order_relaxed);
    commands_.fetch_add(r.ends.size(), std::memory_order_relaxed);
    mux_.hand_over_alone(r);
    const auto sent = blocking_io::send_all(transport, r.wire, r.deadline);
    mux_.commit_write_alone(r, sent.bytes);
    writes_.fetch_add(sent.calls, std::memory_order_relaxed);

    auto replies = sent.error ? std::unexpected(sent.error)
                              : blocking_io::read_replies(transport, mux_.reader(), r.ends.size(), r.deadline);
    if (!replies) {
        const auto& why = transport.last_failure();
        const std::string words = replies.error() == errc::reply_timeout ? "no reply within the command timeout"
                                  : why.words.empty()                    ? "connection lost"
                                                                         : why.words;
        if (mux_.was_written(r)) {
            remember_error_detail(replies.error(), server_name(server_) + ": " + words, why.cause);
            r.error = replies.error();
        } else {
            r.error = lost_at(server_, words);
        }
        give_back(Returned::broken, replies.error());
        return true;
    }
    r.replies = std::move(*replies);
    if (blocking_io::holds_more(mux_.reader()) || transport.holds_bytes()) {
        give_back(Returned::broken, errc::connection_lost);  // bytes nobody asked for
    } else if (topology_->follows_master() && std::ranges::any_of(r.replies, asks_for_another_server)) {
        give_back(Returned::leave, {});
    } else {
        give_back(Returned::healthy, {});
    }
    return true;
}

void AsyncLoop::give_back(Returned how, std::error_code failure) noexcept {
    std::lock_guard lock(mutex_);
    returned_ = how;
    returned_failure_ = failure;
    if (how == Returned::healthy && !wake_on_return_ && !stopping_) {
        holder_ = Holder::parked;  // the loop never looked: it still polls the parked socket
        return;
    }
    holder_ = Holder::loop;
    wake_on_return_ = false;
    wake();  // under the lock: once it is released the loop may stop and *this go away
}

// Parking waits for a lone request: after a batch of several, callers overlap, and the next one
// would borrow the socket alone while the others queue behind its round trip (one command per round
// trip where the loop sends them together). A batch of one (or none yet) means one caller at a
// time, and then the borrowed socket only saves hand-offs.
void AsyncLoop::park_if_idle() {
    if (last_batch_ > 1) return;
    if (state_ != State::ready || !transport_ || !mux_.idle() || leaving_ || read_wants_write_ || self_submitted_ ||
        blocking_io::holds_more(mux_.reader()) || transport_->holds_bytes() || topology_->generation() != generation_)
        return;
    std::lock_guard lock(mutex_);
    if (stopping_ || !submitted_.empty()) return;
    holder_ = Holder::parked;
    socket_fd_ = transport_->fd();
    parked_ = true;
}

void AsyncLoop::reclaim() {
    Returned how = Returned::healthy;
    std::error_code failure;
    {
        std::lock_guard lock(mutex_);
        parked_ = false;
        lent_ = holder_ == Holder::caller;
        if (lent_) {
            wake_on_return_ = true;
            return;
        }
        holder_ = Holder::loop;
        how = std::exchange(returned_, Returned::healthy);
        failure = std::exchange(returned_failure_, {});
    }
    take_back(how, failure);
}

void AsyncLoop::take_back(Returned how, std::error_code failure) {
    if (how == Returned::leave) leaving_ = true;  // pump() closes it: nothing is in flight
    if (how != Returned::broken || !transport_) return;
    topology_->report_failure(server_, failure);
    // Nothing was handed over but the borrower's request (already failed): this fails no one,
    // and what queued meanwhile (never written) goes out on the next connection.
    drop(errc::connection_lost, errc::unavailable, {}, Multiplexer::Queued::keep);
}

}  // namespace fencelock::detail

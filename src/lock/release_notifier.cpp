#include "lock/release_notifier.hpp"

#include <hiredis/hiredis.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "lock/subscriber_plan.hpp"
#include "redis/hiredis_context.hpp"
#include "redis/signal_free_thread.hpp"

namespace fencelock::detail {

// The plan (lock/subscriber_plan.hpp) decides; this file does the I/O and the thread wake-ups.
struct ReleaseNotifier::State {
    explicit State(ConnectionSettings s) : settings(std::move(s)), wake_fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
    ~State() { ::close(wake_fd); }

    void signal() const {
        const std::uint64_t one = 1;
        (void)!::write(wake_fd, &one, sizeof one);
    }
    void notify(const std::vector<SubscriberPlan::Notify>& list) {
        for (const auto& n : list) {
            auto it = sleepers.find(n.channel);
            if (it == sleepers.end()) continue;
            if (n.only) it->second.at(*n.only)->notify_all();
            else for (auto& [ticket, cv] : it->second) cv->notify_all();
        }
    }

    ConnectionSettings settings;
    mutable std::mutex mutex;
    SubscriberPlan plan;
    // The condition variable each waiter sleeps on, by channel and ticket.
    std::map<std::string, std::map<SubscriberPlan::Ticket, std::condition_variable_any*>, std::less<>> sleepers;
    int wake_fd;
    bool stopping = false;
    // No subscriber connection before this (a failed connect, a refused SUBSCRIBE): waiters
    // poll instead of waiting for a confirmation that cannot come.
    std::chrono::steady_clock::time_point offline_until{};
};

namespace {

using State = ReleaseNotifier::State;

// The subscriber thread: the only user of its context, so no locking around hiredis.
class Subscriber {
public:
    explicit Subscriber(std::shared_ptr<State> s) : s_(std::move(s)) {}

    void run() {
        for (;;) {
            bool connect_now = false;
            int timeout_ms = -1;  // without a connection: sleep until a waiter arrives or it is time
            {
                std::lock_guard lock(s_->mutex);
                if (s_->stopping) return;
                if (!ctx_) {
                    s_->plan.forget_idle_channels();
                    if (s_->plan.wanted()) {
                        const auto wait = std::chrono::ceil<std::chrono::milliseconds>(s_->offline_until - clock::now());
                        connect_now = wait <= std::chrono::milliseconds::zero();
                        timeout_ms = connect_now ? -1 : static_cast<int>(wait.count());
                    }
                }
            }
            // Connecting blocks up to connect_timeout: never under the mutex, which every
            // waiter of the client needs.
            if (connect_now) connect();
            std::vector<SubscriberPlan::Command> commands;
            if (ctx_) {
                std::lock_guard lock(s_->mutex);
                commands = s_->plan.commands();
            }
            if (ctx_ && !send(commands)) {
                drop();
                continue;  // the next pass waits for the retry time
            }
            if (connect_now && !ctx_) continue;  // the same
            wait_for_events(ctx_ ? -1 : timeout_ms);
        }
    }

private:
    using clock = std::chrono::steady_clock;

    void connect() {
        auto ctx = open_context(s_->settings);
        if (!ctx) {
            std::lock_guard lock(s_->mutex);
            s_->notify(s_->plan.on_connection_lost());
            s_->offline_until = clock::now() + s_->plan.next_retry();
            return;
        }
        ctx_ = std::move(*ctx);
        ::fcntl(ctx_->fd, F_SETFL, ::fcntl(ctx_->fd, F_GETFL) | O_NONBLOCK);
        ctx_->flags &= ~REDIS_BLOCK;
    }

    bool send(const std::vector<SubscriberPlan::Command>& commands) {
        for (const auto& c : commands) {
            const char* argv[] = {c.verb.c_str(), c.channel.data()};
            const size_t lens[] = {c.verb.size(), c.channel.size()};
            if (redisAppendCommandArgv(ctx_.get(), 2, argv, lens) != REDIS_OK) return false;
        }
        return flush();
    }

    // Writes what hiredis buffered; a full socket buffer leaves the rest for POLLOUT.
    bool flush() {
        int done = 0;
        while (!done) {
            if (redisBufferWrite(ctx_.get(), &done) != REDIS_OK) return false;
            if (!done) {
                pending_write_ = true;
                return true;
            }
        }
        pending_write_ = false;
        return true;
    }

    void wait_for_events(int timeout_ms) {
        pollfd fds[2] = {{s_->wake_fd, POLLIN, 0}, {-1, 0, 0}};
        if (ctx_) fds[1] = {ctx_->fd, static_cast<short>(POLLIN | (pending_write_ ? POLLOUT : 0)), 0};
        if (::poll(fds, ctx_ ? 2 : 1, timeout_ms) <= 0) return;
        if (fds[0].revents & POLLIN) {
            std::uint64_t count = 0;
            (void)!::read(s_->wake_fd, &count, sizeof count);
        }
        if (!ctx_) return;
        if ((fds[1].revents & POLLOUT) && !flush()) return drop();
        if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            if (redisBufferRead(ctx_.get()) != REDIS_OK) return drop();
            for (;;) {
                void* raw = nullptr;
                if (redisGetReplyFromReader(ctx_.get(), &raw) != REDIS_OK) return drop();
                if (raw == nullptr) break;
                const Reply reply = convert(static_cast<redisReply*>(raw));
                freeReplyObject(raw);
                SubscriberPlan::Reaction reaction;
                {
                    std::lock_guard lock(s_->mutex);
                    reaction = s_->plan.on_reply(reply);
                    s_->notify(reaction.notify);
                }
                if (reaction.reconnect_after) return drop(reaction.reconnect_after);
            }
        }
    }

    // Closes the connection; the next one no sooner than `reconnect_after` (default: the
    // plan's next retry pause).
    void drop(std::optional<std::chrono::milliseconds> reconnect_after = std::nullopt) {
        ctx_.reset();
        pending_write_ = false;
        std::lock_guard lock(s_->mutex);
        s_->offline_until = clock::now() + (reconnect_after ? *reconnect_after : s_->plan.next_retry());
        s_->notify(s_->plan.on_connection_lost());
    }

    std::shared_ptr<State> s_;
    ContextPtr ctx_;
    bool pending_write_ = false;
};

}  // namespace

ReleaseNotifier::ReleaseNotifier(ConnectionSettings settings)
    : state_(std::make_shared<State>(std::move(settings))),
      thread_(start_signal_free_thread([s = state_] { Subscriber(s).run(); })) {}

ReleaseNotifier::~ReleaseNotifier() {
    {
        std::lock_guard lock(state_->mutex);
        state_->stopping = true;
    }
    state_->signal();
    thread_.join();
}

std::unique_ptr<ReleaseNotifier::Waiter> ReleaseNotifier::join(const std::string& channel, const std::string& owner) {
    return std::make_unique<Waiter>(state_, channel, owner);
}

bool ReleaseNotifier::has_waiters(const std::string& channel) const {
    std::lock_guard lock(state_->mutex);
    return state_->plan.has_waiters(channel);
}

ReleaseNotifier::Waiter::Waiter(std::shared_ptr<State> state, std::string channel, std::string owner)
    : state_(std::move(state)), channel_(std::move(channel)) {
    bool first;
    {
        std::lock_guard lock(state_->mutex);
        const auto joined = state_->plan.join(channel_, std::move(owner));
        ticket_ = joined.ticket;
        first = joined.first;
        state_->sleepers[channel_][ticket_] = &cv_;
    }
    if (first) state_->signal();
}

ReleaseNotifier::Waiter::~Waiter() {
    bool last;
    {
        std::lock_guard lock(state_->mutex);
        const auto left = state_->plan.leave(channel_, ticket_, granted_);
        auto& sleepers = state_->sleepers[channel_];
        sleepers.erase(ticket_);
        if (left.wake) sleepers.at(*left.wake)->notify_all();
        if (sleepers.empty()) state_->sleepers.erase(channel_);
        last = left.last;
    }
    if (last) state_->signal();
}

void ReleaseNotifier::Waiter::pass_on() {
    std::lock_guard lock(state_->mutex);
    if (auto next = state_->plan.pass_on(channel_, ticket_)) state_->notify({{channel_, next}});
}

bool ReleaseNotifier::Waiter::subscribed(steady_time until, std::stop_token stop) {
    std::unique_lock lock(state_->mutex);
    auto& plan = state_->plan;
    const auto failures = plan.failures(channel_);
    if (std::chrono::steady_clock::now() < state_->offline_until) return false;
    cv_.wait_until(lock, stop, until, [&] { return plan.confirmed(channel_) || plan.failures(channel_) != failures; });
    return plan.confirmed(channel_);
}

bool ReleaseNotifier::Waiter::subscribed_now() const {
    std::lock_guard lock(state_->mutex);
    return state_->plan.confirmed(channel_);
}

std::size_t ReleaseNotifier::Waiter::ahead() const {
    std::lock_guard lock(state_->mutex);
    return state_->plan.ahead(channel_, ticket_);
}

bool ReleaseNotifier::Waiter::wait(steady_time until, std::stop_token stop) {
    std::unique_lock lock(state_->mutex);
    return cv_.wait_until(lock, stop, until, [&] { return state_->plan.take_wake(channel_, ticket_); });
}

}  // namespace fencelock::detail

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
#include <thread>
#include <vector>

#include "lock/wait_line.hpp"
#include "redis/hiredis_context.hpp"
#include "redis/signal_free_thread.hpp"

namespace fencelock::detail {

struct ReleaseNotifier::State {
    struct Channel {
        WaitLine line;
        std::map<WaitLine::Ticket, std::condition_variable_any*> sleepers;
        bool on_server = false;  // SUBSCRIBE sent and not undone
        bool confirmed = false;  // ...and acknowledged: from here on no release goes unseen
        unsigned subscribes_sent = 0;
        unsigned subscribes_acked = 0;
        std::uint64_t failures = 0;  // connection losses: wakes waiters of subscribed()
    };

    explicit State(ConnectionSettings s) : settings(std::move(s)), wake_fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
    ~State() { ::close(wake_fd); }

    void signal() const {
        const std::uint64_t one = 1;
        (void)!::write(wake_fd, &one, sizeof one);
    }
    void notify_channel(Channel& c) {
        for (auto& [ticket, cv] : c.sleepers) cv->notify_all();
    }

    ConnectionSettings settings;
    mutable std::mutex mutex;
    std::map<std::string, Channel, std::less<>> channels;
    int wake_fd;
    bool stopping = false;
    // No subscriber connection before this (a failed connect, a refused SUBSCRIBE): waiters
    // poll instead of waiting for a confirmation that cannot come.
    std::chrono::steady_clock::time_point offline_until{};
};

namespace {

using State = ReleaseNotifier::State;

struct Command {
    std::string verb;
    std::string channel;
};

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
                    forget_idle_channels();
                    if (wanted()) {
                        const auto wait = std::chrono::ceil<std::chrono::milliseconds>(s_->offline_until - clock::now());
                        connect_now = wait <= std::chrono::milliseconds::zero();
                        timeout_ms = connect_now ? -1 : static_cast<int>(wait.count());
                    }
                }
            }
            // Connecting blocks up to connect_timeout: never under the mutex, which every
            // waiter of the client needs.
            if (connect_now) connect();
            std::vector<Command> commands;
            if (ctx_) {
                std::lock_guard lock(s_->mutex);
                commands = plan();
            }
            if (ctx_ && !send(commands)) {
                drop(next_retry());
                continue;  // the next pass waits for the retry time
            }
            if (connect_now && !ctx_) continue;  // the same
            wait_for_events(ctx_ ? -1 : timeout_ms);
        }
    }

private:
    using clock = std::chrono::steady_clock;

    bool wanted() const {
        return std::ranges::any_of(s_->channels, [](const auto& kv) { return !kv.second.line.empty(); });
    }

    // Without a connection nothing is subscribed, and nothing is owed: forget channels nobody
    // waits for (plan() does this while connected).
    void forget_idle_channels() {
        std::erase_if(s_->channels, [](const auto& kv) { return kv.second.line.empty(); });
    }

    void connect() {
        auto ctx = open_context(s_->settings);
        if (!ctx) {
            std::lock_guard lock(s_->mutex);
            fail_all();
            s_->offline_until = clock::now() + next_retry();
            return;
        }
        ctx_ = std::move(*ctx);
        ::fcntl(ctx_->fd, F_SETFL, ::fcntl(ctx_->fd, F_GETFL) | O_NONBLOCK);
        ctx_->flags &= ~REDIS_BLOCK;
    }

    // 50 ms doubling to 1 s; back to the start only once a subscription was confirmed, so a
    // server that accepts and then closes the connection is not hammered.
    std::chrono::milliseconds next_retry() {
        retry_ = std::clamp(retry_ * 2, std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
        return retry_;
    }

    // Which channels to (un)subscribe, given who waits now. Called with the mutex held.
    std::vector<Command> plan() {
        std::vector<Command> out;
        for (auto it = s_->channels.begin(); it != s_->channels.end();) {
            auto& c = it->second;
            if (!c.line.empty() && !c.on_server) {
                out.push_back({"SUBSCRIBE", it->first});
                c.on_server = true;
                ++c.subscribes_sent;
            } else if (c.line.empty() && c.on_server) {
                out.push_back({"UNSUBSCRIBE", it->first});
                c.on_server = false;
                c.confirmed = false;
            }
            // Forget a channel only once its acknowledgements are in, so a late one cannot
            // confirm a later subscription too early.
            if (c.line.empty() && !c.on_server && c.subscribes_acked == c.subscribes_sent) it = s_->channels.erase(it);
            else ++it;
        }
        return out;
    }

    bool send(const std::vector<Command>& commands) {
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
        if ((fds[1].revents & POLLOUT) && !flush()) return drop(next_retry());
        if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            if (redisBufferRead(ctx_.get()) != REDIS_OK) return drop(next_retry());
            for (;;) {
                void* raw = nullptr;
                if (redisGetReplyFromReader(ctx_.get(), &raw) != REDIS_OK) return drop(next_retry());
                if (raw == nullptr) break;
                const Reply reply = convert(static_cast<redisReply*>(raw));
                freeReplyObject(raw);
                // An error answers a SUBSCRIBE. NOPERM (an ACL user without channel
                // permission) would come back at once: ask again only after a long pause.
                // Waiters poll meanwhile.
                if (reply.kind == Reply::Kind::error) {
                    const bool refused = reply.str.starts_with("NOPERM");
                    return drop(refused ? std::chrono::milliseconds(30'000) : next_retry());
                }
                handle(reply);
            }
        }
    }

    void handle(const Reply& r) {
        if (r.kind != Reply::Kind::array || r.elements.size() < 2) return;
        const std::string& kind = r.elements[0].str;
        std::lock_guard lock(s_->mutex);
        auto it = s_->channels.find(r.elements[1].str);
        if (it == s_->channels.end()) return;
        auto& c = it->second;
        if (kind == "message") {
            // A message naming an owner is for the first fair waiter only (maybe in another
            // process); an empty one for whoever is first here.
            const std::string& next = r.elements.size() > 2 ? r.elements[2].str : std::string{};
            if (auto ticket = next.empty() ? c.line.wake_next() : c.line.wake(next))
                c.sleepers.at(*ticket)->notify_all();
        } else if (kind == "subscribe") {
            ++c.subscribes_acked;
            if (c.on_server && c.subscribes_acked == c.subscribes_sent) {
                c.confirmed = true;
                retry_ = std::chrono::milliseconds(0);
                s_->notify_channel(c);
            }
        }
    }

    void drop(std::chrono::milliseconds reconnect_after) {
        ctx_.reset();
        pending_write_ = false;
        std::lock_guard lock(s_->mutex);
        s_->offline_until = clock::now() + reconnect_after;
        fail_all();
    }

    // The subscriptions are gone: releases may go unseen, so the waiters that relied on one
    // look for themselves; waiters still waiting for a confirmation stop waiting for it.
    void fail_all() {
        for (auto& [name, c] : s_->channels) {
            if (c.confirmed) c.line.wake_all();
            c.on_server = c.confirmed = false;
            c.subscribes_sent = c.subscribes_acked = 0;
            ++c.failures;
            s_->notify_channel(c);
        }
    }

    std::shared_ptr<State> s_;
    ContextPtr ctx_;
    bool pending_write_ = false;
    std::chrono::milliseconds retry_{0};
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
    auto it = state_->channels.find(channel);
    return it != state_->channels.end() && !it->second.line.empty();
}

ReleaseNotifier::Waiter::Waiter(std::shared_ptr<State> state, std::string channel, std::string owner)
    : state_(std::move(state)), channel_(std::move(channel)) {
    bool first;
    {
        std::lock_guard lock(state_->mutex);
        auto& c = state_->channels[channel_];
        first = c.line.empty();
        ticket_ = c.line.join(std::move(owner));
        c.sleepers[ticket_] = &cv_;
    }
    if (first) state_->signal();
}

ReleaseNotifier::Waiter::~Waiter() {
    bool last;
    {
        std::lock_guard lock(state_->mutex);
        auto& c = state_->channels[channel_];
        // A wake-up a waiter leaving without the lock did not use belongs to the next one.
        const bool unused_wake = c.line.take_wake(ticket_) && !granted_;
        c.line.leave(ticket_);
        c.sleepers.erase(ticket_);
        if (unused_wake)
            if (auto next = c.line.wake_next()) c.sleepers.at(*next)->notify_all();
        last = c.line.empty();
    }
    if (last) state_->signal();
}

void ReleaseNotifier::Waiter::pass_on() {
    std::lock_guard lock(state_->mutex);
    auto& c = state_->channels[channel_];
    if (auto next = c.line.wake_after(ticket_)) c.sleepers.at(*next)->notify_all();
}

bool ReleaseNotifier::Waiter::subscribed(steady_time until, std::stop_token stop) {
    std::unique_lock lock(state_->mutex);
    auto& c = state_->channels[channel_];
    const auto failures = c.failures;
    if (std::chrono::steady_clock::now() < state_->offline_until) return false;
    cv_.wait_until(lock, stop, until, [&] { return c.confirmed || c.failures != failures; });
    return c.confirmed;
}

bool ReleaseNotifier::Waiter::subscribed_now() const {
    std::lock_guard lock(state_->mutex);
    return state_->channels[channel_].confirmed;
}

std::size_t ReleaseNotifier::Waiter::ahead() const {
    std::lock_guard lock(state_->mutex);
    return state_->channels[channel_].line.ahead(ticket_);
}

bool ReleaseNotifier::Waiter::wait(steady_time until, std::stop_token stop) {
    std::unique_lock lock(state_->mutex);
    auto& c = state_->channels[channel_];
    return cv_.wait_until(lock, stop, until, [&] { return c.line.take_wake(ticket_); });
}

}  // namespace fencelock::detail

#include "faults/fault_proxy.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <list>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace fencelock::faults {

using Clock = std::chrono::steady_clock;

namespace {

struct Chunk {
    std::string data;
    std::size_t off = 0;
    Clock::time_point due;
    bool held = false;
};

struct Pair {
    int client = -1;
    int server = -1;
    std::deque<Chunk> up;    // to the server
    std::deque<Chunk> down;  // to the client
    bool client_eof = false;
    bool server_eof = false;
    bool dead = false;
};

[[noreturn]] void fail(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

void close_fd(int& fd) noexcept {
    if (fd >= 0) ::close(fd);
    fd = -1;
}

void no_delay(int fd) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

sockaddr_in loopback(std::uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    return a;
}

// A listening socket on 127.0.0.1:port (0: any free port). SO_REUSEADDR lets refuse(false)
// listen again on the same port while old connections linger in TIME_WAIT.
int open_listener(std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) fail("socket");
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a = loopback(port);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0) {
        const int e = errno;
        ::close(fd);
        errno = e;
        fail("proxy listen");
    }
    return fd;
}

// Writes every chunk that is due, in order, until one is held, not yet due, or the socket is
// full. Returns false when the peer is gone.
bool flush(int fd, std::deque<Chunk>& q, Clock::time_point now, std::uint64_t& counter) {
    while (!q.empty() && !q.front().held && q.front().due <= now) {
        Chunk& c = q.front();
        const ssize_t n = ::send(fd, c.data.data() + c.off, c.data.size() - c.off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        c.off += static_cast<std::size_t>(n);
        counter += static_cast<std::uint64_t>(n);
        if (c.off == c.data.size()) q.pop_front();
    }
    return true;
}

bool front_ready(const std::deque<Chunk>& q, Clock::time_point now, Clock::time_point& next_due) {
    if (q.empty() || q.front().held) return false;
    if (q.front().due <= now) return true;
    next_due = std::min(next_due, q.front().due);
    return false;
}

std::uint64_t held_bytes(const std::deque<Chunk>& q) {
    std::uint64_t n = 0;
    for (const auto& c : q)
        if (c.held) n += c.data.size() - c.off;
    return n;
}

}  // namespace

struct FaultProxy::State {
    mutable std::mutex mutex;
    std::uint16_t upstream = 0;
    int listener = -1;
    int wake[2] = {-1, -1};
    bool stop = false;
    Flow up_flow = Flow::pass, down_flow = Flow::pass;
    std::chrono::milliseconds up_delay{0}, down_delay{0};
    std::size_t drop_next = 0;
    std::list<Pair> pairs;  // stable addresses while the loop works on them
    Counters counters;
    std::thread thread;

    void poke() const noexcept {
        const char b = 1;
        (void)!::write(wake[1], &b, 1);  // a full pipe already means "wake up"
    }

    // Queues `data` for the other side according to the flow of its direction.
    void enqueue(std::deque<Chunk>& q, std::string data, Flow flow, std::chrono::milliseconds delay,
                 std::uint64_t& dropped) {
        const auto now = Clock::now();
        switch (flow) {
            case Flow::pass: q.push_back({std::move(data), 0, now, false}); break;
            case Flow::delay: q.push_back({std::move(data), 0, now + delay, false}); break;
            case Flow::hold: q.push_back({std::move(data), 0, Clock::time_point::max(), true}); break;
            case Flow::drop: dropped += data.size(); break;
        }
    }

    void kill_pair(Pair& p) noexcept {
        close_fd(p.client);
        close_fd(p.server);
        p.up.clear();
        p.down.clear();
        if (!p.dead) --counters.open;
        p.dead = true;
    }

    void accept_all() {
        for (;;) {
            int c = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (c < 0) return;
            // Loopback connect completes in the kernel even when redis-server is stopped; when
            // it is not running at all the client sees its connection close at once.
            int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            sockaddr_in a = loopback(upstream);
            if (s < 0 || ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
                if (s >= 0) ::close(s);
                ::close(c);
                continue;
            }
            ::fcntl(s, F_SETFL, ::fcntl(s, F_GETFL) | O_NONBLOCK);
            no_delay(c);
            no_delay(s);
            Pair p;
            p.client = c;
            p.server = s;
            pairs.push_back(std::move(p));
            ++counters.accepted;
            ++counters.open;
        }
    }

    // Reads what one side has; false at end of stream or error.
    bool pump(int from, std::deque<Chunk>& q, bool requests) {
        char buf[65536];
        for (;;) {
            const ssize_t n = ::recv(from, buf, sizeof buf, MSG_DONTWAIT);
            if (n > 0) {
                std::string data(buf, static_cast<std::size_t>(n));
                if (requests) {
                    enqueue(q, std::move(data), up_flow, up_delay, counters.dropped_up);
                } else if (drop_next > 0) {
                    --drop_next;
                    counters.dropped_down += data.size();
                } else {
                    enqueue(q, std::move(data), down_flow, down_delay, counters.dropped_down);
                }
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
            if (n < 0 && errno == EINTR) continue;
            return false;
        }
    }
};

FaultProxy::FaultProxy(std::uint16_t upstream_port) : state_(std::make_unique<State>()) {
    State& s = *state_;
    s.upstream = upstream_port;
    if (::pipe2(s.wake, O_NONBLOCK | O_CLOEXEC) != 0) fail("pipe2");
    try {
        s.listener = open_listener(0);
    } catch (...) {
        close_fd(s.wake[0]);
        close_fd(s.wake[1]);
        throw;
    }
    sockaddr_in a{};
    socklen_t len = sizeof a;
    ::getsockname(s.listener, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    s.thread = std::thread([this] { run(); });
}

FaultProxy::~FaultProxy() {
    State& s = *state_;
    {
        std::lock_guard lock(s.mutex);
        s.stop = true;
        s.poke();
    }
    if (s.thread.joinable()) s.thread.join();
    for (auto& p : s.pairs) s.kill_pair(p);
    close_fd(s.listener);
    close_fd(s.wake[0]);
    close_fd(s.wake[1]);
}

std::string FaultProxy::url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

void FaultProxy::set_requests(Flow flow, std::chrono::milliseconds delay) {
    std::lock_guard lock(state_->mutex);
    state_->up_flow = flow;
    state_->up_delay = delay;
    state_->poke();
}

void FaultProxy::set_replies(Flow flow, std::chrono::milliseconds delay) {
    std::lock_guard lock(state_->mutex);
    state_->down_flow = flow;
    state_->down_delay = delay;
    state_->poke();
}

void FaultProxy::drop_next_replies(std::size_t chunks) {
    std::lock_guard lock(state_->mutex);
    state_->drop_next = chunks;
    state_->poke();
}

void FaultProxy::pass() {
    std::lock_guard lock(state_->mutex);
    State& s = *state_;
    s.up_flow = s.down_flow = Flow::pass;
    s.drop_next = 0;
    const auto now = Clock::now();
    for (auto& p : s.pairs)
        for (auto* q : {&p.up, &p.down})
            for (auto& c : *q) {
                c.held = false;
                c.due = std::min(c.due, now);
            }
    s.poke();
}

// Closing happens here, under the mutex, so the connections are gone when cut() returns. The
// loop never touches a dead pair again and erases it on its next pass.
void FaultProxy::cut() {
    std::lock_guard lock(state_->mutex);
    for (auto& p : state_->pairs) {
        if (p.dead) continue;
        ::shutdown(p.client, SHUT_RDWR);
        ::shutdown(p.server, SHUT_RDWR);
        state_->kill_pair(p);
        ++state_->counters.cut;
    }
    state_->poke();
}

void FaultProxy::refuse(bool on) {
    std::lock_guard lock(state_->mutex);
    State& s = *state_;
    if (on) close_fd(s.listener);
    else if (s.listener < 0) s.listener = open_listener(port_);
    s.poke();
}

FaultProxy::Counters FaultProxy::counters() const {
    std::lock_guard lock(state_->mutex);
    Counters c = state_->counters;
    for (const auto& p : state_->pairs) {
        c.held_up += held_bytes(p.up);
        c.held_down += held_bytes(p.down);
    }
    return c;
}

void FaultProxy::run() {
    State& s = *state_;
    std::unique_lock lock(s.mutex);
    std::vector<pollfd> fds;
    std::vector<Pair*> owners;  // owners[i] for fds[i]; nullptr for the wake pipe and listener
    while (!s.stop) {
        fds.clear();
        owners.clear();
        fds.push_back({s.wake[0], POLLIN, 0});
        owners.push_back(nullptr);
        const int listener = s.listener;
        if (listener >= 0) {
            fds.push_back({listener, POLLIN, 0});
            owners.push_back(nullptr);
        }
        const auto now = Clock::now();
        auto next_due = Clock::time_point::max();
        for (auto& p : s.pairs) {
            if (p.dead) continue;
            short ce = p.client_eof ? 0 : POLLIN, se = p.server_eof ? 0 : POLLIN;
            if (front_ready(p.down, now, next_due)) ce |= POLLOUT;
            if (front_ready(p.up, now, next_due)) se |= POLLOUT;
            // A side with nothing to do is left out: a reset socket reports POLLHUP even with
            // no events requested, which would spin the loop while its bytes are held.
            if (ce != 0) {
                fds.push_back({p.client, ce, 0});
                owners.push_back(&p);
            }
            if (se != 0) {
                fds.push_back({p.server, se, 0});
                owners.push_back(&p);
            }
        }
        int timeout = -1;
        if (next_due != Clock::time_point::max())
            timeout = static_cast<int>(
                std::max<std::int64_t>(0, std::chrono::ceil<std::chrono::milliseconds>(next_due - now).count()));

        lock.unlock();
        ::poll(fds.data(), fds.size(), timeout);
        lock.lock();
        if (s.stop) break;

        char drain[64];
        while (::read(s.wake[0], drain, sizeof drain) > 0) {
        }
        if (listener >= 0 && s.listener == listener && (fds[1].revents & POLLIN)) s.accept_all();

        for (std::size_t i = 0; i < fds.size(); ++i) {
            Pair* p = owners[i];
            if (p == nullptr || p->dead || fds[i].revents == 0) continue;
            const bool is_client = fds[i].fd == p->client;
            if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
                if (is_client && !p->client_eof && !s.pump(p->client, p->up, true)) p->client_eof = true;
                if (!is_client && !p->server_eof && !s.pump(p->server, p->down, false)) p->server_eof = true;
            }
        }
        const auto after = Clock::now();
        for (auto& p : s.pairs) {
            if (p.dead) continue;
            if (!flush(p.client, p.down, after, s.counters.bytes_down) ||
                !flush(p.server, p.up, after, s.counters.bytes_up)) {
                s.kill_pair(p);
                continue;
            }
            // A side that hung up ends the pair once what it sent has been delivered (held
            // requests of a departed client still reach the server when released).
            if ((p.client_eof && p.up.empty()) || (p.server_eof && p.down.empty())) s.kill_pair(p);
        }
        s.pairs.remove_if([](const Pair& p) { return p.dead; });
    }
}

}  // namespace fencelock::faults

#include "coordinator/redis/release_notifier.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "coordinator/redis/subscriber_plan.hpp"
#include "redis/cluster_connection.hpp"
#include "redis/cluster_slot.hpp"
#include "redis/hiredis_connection.hpp"
#include "redis/signal_free_thread.hpp"
#include "redis/wire.hpp"

namespace fencelock::detail {

// How long a channel stays subscribed after its last waiter left: a client that waited for a
// resource is likely to wait for it again soon (a hot resource), and then its first attempt is
// already watched and can take a direct grant, instead of a second attempt after subscribing.
constexpr std::chrono::milliseconds subscription_linger{1000};

// The plan (coordinator/redis/subscriber_plan.hpp) decides; this file does the I/O and the thread wake-ups.
struct ReleaseNotifier::State {
    using Node = SubscriberPlan::Node;
    using clock = std::chrono::steady_clock;

    explicit State(ConnectionSettings s) : settings(std::move(s)), wake_fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
        if (settings.endpoint.uses_cluster()) {
            // Its own blocking connections, used only to load the slot map (CLUSTER SLOTS).
            cluster = make_cluster_connection(settings, make_hiredis_connection);
            routes = slot_routes(*cluster);
            plan.use_slot_map();
        }
    }
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
            else
                for (auto& [ticket, cv] : it->second) cv->notify_all();
        }
    }
    // The node whose subscriber hears `channel`'s releases: the master of its slot on a
    // cluster (nullopt while the map names none), else the topology's one server.
    std::optional<Node> route_now(const std::string& channel) const {
        if (!routes) return Node{};
        return routes->master_of(key_slot(channel));
    }
    ConnectionSettings settings;
    std::unique_ptr<Connection> cluster;  // a cluster endpoint only
    SlotRoutes* routes = nullptr;         // its slot map
    mutable std::mutex mutex;
    SubscriberPlan plan{subscription_linger};
    // The condition variable each waiter sleeps on, by channel and ticket.
    std::map<std::string, std::map<SubscriberPlan::Ticket, std::condition_variable_any*>, std::less<>> sleepers;
    int wake_fd;
    bool stopping = false;
};

namespace {

using State = ReleaseNotifier::State;
using Node = SubscriberPlan::Node;

// The subscriber thread: the only user of its contexts, so no locking around hiredis. One
// connection per node that serves a channel someone waits for.
class Subscriber {
public:
    explicit Subscriber(std::shared_ptr<State> s) : s_(std::move(s)) {}

    void run() {
        for (;;) {
            bool reload = false;
            std::vector<Node> moved_masters;
            {
                std::lock_guard lock(s_->mutex);
                if (s_->stopping) return;
                reload = s_->routes && s_->plan.map_load_due(clock::now());
                for (const auto& l : links_)
                    if (l.topology->generation() != l.generation) moved_masters.push_back(l.node);
            }
            for (const auto& node : moved_masters) drop(node, std::chrono::milliseconds(0));
            if (reload) load_map();
            std::vector<SubscriberPlan::Command> commands;
            {
                std::lock_guard lock(s_->mutex);
                const auto now = clock::now();
                commands = s_->plan.commands(
                    [&](const std::string& channel) -> std::optional<Node> {
                        auto node = s_->route_now(channel);
                        if (!node) s_->plan.map_stale();
                        if (!node || s_->plan.offline(*node, now)) return std::nullopt;
                        return node;
                    },
                    now);
            }
            send(commands);
            wait_for_events(timeout());
        }
    }

private:
    using clock = std::chrono::steady_clock;

    struct Link {
        Node node;
        Wire wire;
        std::shared_ptr<Topology> topology;
        std::uint64_t generation = 0;  // the topology's when wire was made
        bool pending_write = false;
    };

    Link* find(const Node& node) {
        auto it = std::ranges::find(links_, node, &Link::node);
        return it == links_.end() ? nullptr : &*it;
    }

    // Loads the slot map (blocking: never under the mutex, which every waiter needs).
    void load_map() {
        const auto ec = s_->routes->load();
        std::lock_guard lock(s_->mutex);
        s_->notify(s_->plan.map_loaded(!ec, clock::now()));
    }

    // Connecting blocks up to connect_timeout: never under the mutex either.
    Link* connect(const Node& node) {
        ConnectionSettings settings = s_->routes ? node_settings(s_->settings, node) : s_->settings;
        settings.topology = topology_of(settings);
        const auto generation = settings.topology->generation();  // before resolve(): a move during it counts
        auto wire = open_wire(settings);
        if (!wire) {
            lost(node, std::nullopt);
            return nullptr;
        }
        links_.push_back({node, std::move(*wire), settings.topology, generation, false});
        return &links_.back();
    }

    void send(const std::vector<SubscriberPlan::Command>& commands) {
        std::vector<Node> nodes;
        for (const auto& c : commands)
            if (std::ranges::find(nodes, c.node) == nodes.end()) nodes.push_back(c.node);
        for (const auto& node : nodes) {
            Link* l = find(node);
            if (!l && !(l = connect(node))) continue;
            for (const auto& c : commands) {
                if (!(c.node == node)) continue;
                const std::string_view argv[] = {c.verb, c.channel};
                l->wire.append(std::span<const std::string_view>(argv));
            }
            if (!flush(*l)) drop(node, std::nullopt);
        }
    }

    // Writes what is queued; a full socket buffer leaves the rest for when poll says.
    static bool flush(Link& l) {
        const auto io = l.wire.flush();
        l.pending_write = io.status == Transport::Io::Status::again;
        return io.ok() || l.pending_write;
    }

    // poll()'s timeout: until the next thing due without an event (SubscriberPlan::quiet_for).
    int timeout() const {
        const bool follows_master =
            std::ranges::any_of(links_, [](const Link& l) { return l.topology->follows_master(); });
        std::lock_guard lock(s_->mutex);
        const auto wait = s_->plan.quiet_for(clock::now(), follows_master);
        if (!wait) return -1;
        return static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(*wait).count());
    }

    void wait_for_events(int timeout_ms) {
        std::vector<pollfd> fds{{s_->wake_fd, POLLIN, 0}};
        std::vector<Node> polled;
        for (const auto& l : links_) {
            // TLS may want to write while reading (or the reverse): poll for both then.
            const bool out = l.pending_write || l.wire.transport().want() == Transport::Want::write;
            fds.push_back({l.wire.transport().fd(), static_cast<short>(POLLIN | (out ? POLLOUT : 0)), 0});
            polled.push_back(l.node);
        }
        if (::poll(fds.data(), fds.size(), timeout_ms) <= 0) return;
        if (fds[0].revents & POLLIN) {
            std::uint64_t count = 0;
            (void)!::read(s_->wake_fd, &count, sizeof count);
        }
        for (std::size_t i = 0; i < polled.size(); ++i)
            if (auto broken = on_events(polled[i], fds[i + 1].revents)) drop(polled[i], broken->reconnect_after);
    }

    // A connection that must go, and when to connect again (nullopt: the plan's next pause).
    struct Broken {
        std::optional<std::chrono::milliseconds> reconnect_after;
    };

    // Reads what a node sent and feeds it to the plan.
    std::optional<Broken> on_events(const Node& node, short revents) {
        Link* l = find(node);
        if (!l) return std::nullopt;
        if ((revents & POLLOUT) && l->pending_write && !flush(*l)) return Broken{};
        if (!(revents & (POLLIN | POLLOUT | POLLHUP | POLLERR))) return std::nullopt;
        for (;;) {
            auto next = l->wire.next_reply();
            if (!next) return Broken{};
            if (!*next) return std::nullopt;
            const Reply reply = std::move(**next);
            SubscriberPlan::Reaction reaction;
            {
                std::lock_guard lock(s_->mutex);
                reaction = s_->plan.on_reply(node, reply);
                s_->notify(reaction.notify);
            }
            if (reaction.moved && s_->routes) s_->routes->moved(reaction.moved->slot, reaction.moved->to);
            if (reaction.reconnect_after) return Broken{reaction.reconnect_after};
        }
    }

    // Closes the node's connection; the next one no sooner than `reconnect_after` (nullopt:
    // the plan's next retry pause).
    void drop(const Node& node, std::optional<std::chrono::milliseconds> reconnect_after) {
        std::erase_if(links_, [&](const Link& l) { return l.node == node; });
        lost(node, reconnect_after);
    }

    void lost(const Node& node, std::optional<std::chrono::milliseconds> reconnect_after) {
        std::lock_guard lock(s_->mutex);
        s_->notify(s_->plan.node_down(node, clock::now(), reconnect_after));
    }

    std::shared_ptr<State> s_;
    std::vector<Link> links_;
};

}  // namespace

namespace {
std::atomic<std::uint64_t> waits{0};
std::atomic<std::uint64_t> grants{0};
}  // namespace

std::uint64_t ReleaseNotifier::waits_begun() noexcept { return waits.load(std::memory_order_relaxed); }
std::uint64_t ReleaseNotifier::grants_taken() noexcept { return grants.load(std::memory_order_relaxed); }

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

std::unique_ptr<ReleaseNotifier::Waiter> ReleaseNotifier::join(const std::string& channel, const std::string& owner,
                                                               std::optional<SuccessorTerms> terms) {
    return std::make_unique<Waiter>(state_, channel, owner, terms);
}

std::optional<WaitLine::Named> ReleaseNotifier::successor(const std::string& channel,
                                                          std::chrono::milliseconds margin) const {
    std::lock_guard lock(state_->mutex);
    return state_->plan.successor(channel, std::chrono::steady_clock::now(), margin);
}

bool ReleaseNotifier::grant(const std::string& channel, std::string_view owner, const DirectGrant& g) {
    std::lock_guard lock(state_->mutex);
    const auto ticket = state_->plan.grant(channel, owner, g);
    if (ticket) state_->notify({{channel, ticket}});
    return ticket.has_value();
}

bool ReleaseNotifier::has_waiters(const std::string& channel) const {
    std::lock_guard lock(state_->mutex);
    return state_->plan.has_waiters(channel);
}

bool ReleaseNotifier::subscribed(const std::string& channel) const {
    std::lock_guard lock(state_->mutex);
    return state_->plan.confirmed_now(channel);
}

ReleaseNotifier::Waiter::Waiter(std::shared_ptr<State> state, std::string channel, std::string owner,
                                std::optional<SuccessorTerms> terms)
    : state_(std::move(state)), channel_(std::move(channel)) {
    bool first;
    {
        std::lock_guard lock(state_->mutex);
        const auto joined = state_->plan.join(channel_, std::move(owner), terms);
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
        const auto left = state_->plan.leave(channel_, ticket_, granted_, std::chrono::steady_clock::now());
        auto& sleepers = state_->sleepers[channel_];
        sleepers.erase(ticket_);
        if (left.wake) sleepers.at(*left.wake)->notify_all();
        if (sleepers.empty()) state_->sleepers.erase(channel_);
        last = left.last;
    }
    if (last) state_->signal();
}

std::optional<DirectGrant> ReleaseNotifier::Waiter::take_grant() {
    std::lock_guard lock(state_->mutex);
    auto grant = state_->plan.take_grant(channel_, ticket_);
    if (grant) grants.fetch_add(1, std::memory_order_relaxed);
    return grant;
}

void ReleaseNotifier::Waiter::pass_on() {
    std::lock_guard lock(state_->mutex);
    if (auto next = state_->plan.pass_on(channel_, ticket_)) state_->notify({{channel_, next}});
}

bool ReleaseNotifier::Waiter::subscribed(steady_time until, std::stop_token stop) {
    std::unique_lock lock(state_->mutex);
    auto& plan = state_->plan;
    const auto failures = plan.failures(channel_);
    const auto now = std::chrono::steady_clock::now();
    if (!plan.confirmation_possible(state_->route_now(channel_), now)) return false;
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
    waits.fetch_add(1, std::memory_order_relaxed);
    return cv_.wait_until(lock, stop, until, [&] { return state_->plan.take_wake(channel_, ticket_); });
}

}  // namespace fencelock::detail

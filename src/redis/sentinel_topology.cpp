#include "redis/sentinel_topology.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "common/log.hpp"
#include "fencelock/error.hpp"
#include "redis/connect_failure.hpp"
#include "redis/hiredis_connection.hpp"
#include "redis/sentinel_resolve_fsm.hpp"
#include "redis/signal_free_thread.hpp"
#include "redis/transport.hpp"
#include "redis/wire.hpp"

namespace fencelock::detail {
namespace {

using std::chrono::steady_clock;

std::string show(const HostAndPort& at) { return at.host + ":" + std::to_string(at.port); }

struct Login {
    std::string user;
    std::string password;  ///< empty: no AUTH
};

class SentinelTopology final : public Topology {
public:
    explicit SentinelTopology(const RedisEndpoint& ep)
        : master_name_(ep.master_name),
          sentinel_login_{ep.sentinel_user, ep.sentinel_password},
          master_login_{ep.user, ep.password},
          grace_(ep.failover_grace),
          trust_first_term_(ep.trust_first_term),
          tls_(ep.tls),
          sentinels_(ep.sentinels),
          wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
        if (wake_fd_ < 0) throw std::system_error(errno, std::system_category(), "eventfd");
    }

    ~SentinelTopology() override {
        stopping_.store(true);
        const std::uint64_t one = 1;
        [[maybe_unused]] const auto n = ::write(wake_fd_, &one, sizeof one);
        if (watcher_.joinable()) watcher_.join();
        ::close(wake_fd_);
    }

    // A thin loop around SentinelResolveFsm (redis/sentinel_resolve_fsm.hpp), which decides
    // what to ask and what the answers mean; this carries the commands and keeps what lasts
    // between resolves: the sentinels' order and the master's term.
    std::expected<ServerAddress, std::error_code> resolve() override {
        std::call_once(watch_started_, [this] { watcher_ = start_signal_free_thread([this] { watch(); }); });
        std::vector<HostAndPort> order;
        {
            std::lock_guard lock(mutex_);
            order = sentinels_;
        }
        SentinelResolveFsm fsm(
            {.master_name = master_name_, .sentinels = order, .grace = grace_, .trust_first_term = trust_first_term_});
        auto step = fsm.start();
        while (step.kind != SentinelStep::Kind::done) step = fsm.on_reply(perform(step, order));
        const auto& found = fsm.result();
        if (!found) {
            remember_error_detail(errc::unavailable, found.error().detail, std::string(found.error().cause));
            return std::unexpected(make_error_code(errc::unavailable));
        }
        remember(order[found->sentinel], found->master);
        if (found->term) note_term(found->master, *found->term);
        return found->master;
    }

    steady_clock::time_point grants_from() const noexcept override {
        return steady_clock::time_point(steady_clock::duration(grants_from_.load()));
    }

    // Nothing to forget: resolve() keeps no master between calls, it asks every time.
    void report_failure(const ServerAddress&, std::error_code) noexcept override {}

    bool follows_master() const noexcept override { return true; }
    std::uint64_t generation() const noexcept override { return generation_.load(); }

private:
    // One step of the resolve: its commands to a sentinel with the sentinel credentials, or to
    // the master on a connection of its own with the master's.
    SentinelQueryReplies perform(const SentinelStep& step, const std::vector<HostAndPort>& order) const {
        SentinelQueryFailure failure;
        std::optional<Wire> wire;
        std::optional<std::vector<Reply>> replies;
        if (step.kind == SentinelStep::Kind::ask_sentinel) {
            replies =
                commands_at(wire, order[step.sentinel], sentinel_login_, step.commands, &failure.words, &failure.cause);
        } else {
            // The caller's error detail is about the connection it goes on to make, not this one.
            const UnheardFailures unheard;
            replies = commands_at(wire, {step.master.host, step.master.port}, master_login_, step.commands,
                                  &failure.words, &failure.cause);
        }
        if (!replies) return std::unexpected(std::move(failure));
        return std::move(*replies);
    }

    // The term's evidence noted now, after the resolve's last round trip (a later moment only
    // lengthens the grace), with the switches heard by then.
    void note_term(const ServerAddress& master, const TermEvidence& evidence) {
        const auto now = steady_clock::now();
        const std::uint64_t switches = generation_.load();
        std::lock_guard lock(mutex_);
        const TermNote noted = term_.note(master, evidence, now, switches);
        grants_from_.store(noted.grants_from.time_since_epoch().count());
    }

    // Connects `wire` to `at` (short timeouts; TLS as for the master) and sends AUTH (with
    // `login`, when it has a password) and `argv` back to back; the replies to `argv`, or
    // nullopt on a transport failure or when AUTH or argv's first command is refused. On
    // success `wire` stays connected. `failure` and `cause`, when given, get why not (cause
    // only when it has a name).
    std::optional<std::vector<Reply>> commands_at(std::optional<Wire>& wire, const HostAndPort& server,
                                                  const Login& login, const std::vector<std::vector<std::string>>& argv,
                                                  std::string* failure = nullptr, std::string* cause = nullptr) const {
        const auto fail = [&](std::string what, std::string_view named) -> std::optional<std::vector<Reply>> {
            if (failure) *failure = std::move(what);
            if (cause && !named.empty()) *cause = named;
            return std::nullopt;
        };
        const auto deadline = steady_clock::now() + sentinel_query_timeout;
        const ServerAddress at{server.host, server.port};
        auto transport = Transport::open(at, tls_, deadline);
        if (!transport) {
            const ThreadFailure& why = this_threads_last_failure();
            return fail(why.words, why.cause);
        }
        wire.emplace(std::move(*transport));
        std::vector<std::vector<std::string>> commands;
        if (!login.password.empty()) {
            commands.push_back({"AUTH"});
            if (!login.user.empty()) commands.back().push_back(login.user);
            commands.back().push_back(login.password);
        }
        commands.insert(commands.end(), argv.begin(), argv.end());
        for (const auto& command : commands) wire->append(command);
        auto replies = wire->exchange(commands.size(), deadline);
        if (!replies) {
            const auto& why = wire->transport().last_failure();
            if (replies.error() == errc::reply_timeout) return fail("no reply in time", "handshake_timeout");
            if (!why.cause.empty()) return fail(why.words, why.cause);
            return fail("closed the connection unanswered (a TLS port? use rediss-sentinel://)", "handshake_closed");
        }
        // AUTH refused or the first command refused (not a sentinel...): nothing to use. A
        // later command's error reaches the caller, which reads it as "not known".
        const std::size_t must_succeed = commands.size() - argv.size() + 1;
        for (std::size_t i = 0; i < must_succeed; ++i) {
            const Reply& r = (*replies)[i];
            if (r.kind != Reply::Kind::error) continue;
            const bool auth = i + 1 < must_succeed || r.str.starts_with("NOAUTH");
            return fail(r.str, !auth ? "" : r.str.starts_with("NOAUTH") ? "auth_required" : "auth_rejected");
        }
        replies->erase(replies->begin(), replies->end() - static_cast<std::ptrdiff_t>(argv.size()));
        return std::move(*replies);
    }

    // +switch-master on one sentinel at a time (the first that accepts the subscription, in
    // the order resolve() learned), so connections leave the old master when the failover
    // completes instead of when Sentinel gets round to demoting it: until then it still
    // accepts writes that the new master never sees (a kept lease renewed there only would
    // expire on the new master). Started by the first resolve(): creating the topology does
    // no I/O. A lost subscription is retried every sentinel_query_timeout.
    void watch() {
        const detail::UnheardFailures unheard;  // resolve()'s callers read the details, not this thread's
        while (!stopping_.load()) {
            std::vector<HostAndPort> order;
            {
                std::lock_guard lock(mutex_);
                order = sentinels_;
            }
            for (const HostAndPort& sentinel : order) {
                std::optional<Wire> wire;
                if (!commands_at(wire, sentinel, sentinel_login_, {{"SUBSCRIBE", "+switch-master"}})) continue;
                listen(*wire);
                if (stopping_.load()) return;
            }
            wait_for_stop(sentinel_query_timeout);
        }
    }

    // Reads messages until the connection fails or the topology stops.
    void listen(Wire& wire) {
        for (;;) {
            auto reply = wire.next_reply();
            if (!reply) return;
            if (*reply) {
                on_message(**reply);
                continue;
            }
            const short events = wire.transport().want() == Transport::Want::read ? POLLIN : POLLOUT;
            pollfd fds[2] = {{wire.transport().fd(), events, 0}, {wake_fd_, POLLIN, 0}};
            if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
            if (stopping_.load()) return;
        }
    }

    // ["message", "+switch-master", "<name> <old-ip> <old-port> <new-ip> <new-port>"]
    void on_message(const Reply& m) {
        if (m.kind != Reply::Kind::array || m.elements.size() != 3 || m.elements[2].kind != Reply::Kind::string) return;
        const std::string& text = m.elements[2].str;
        if (text.starts_with(master_name_ + " ")) generation_.fetch_add(1);
    }

    void wait_for_stop(std::chrono::milliseconds d) {
        pollfd p{wake_fd_, POLLIN, 0};
        (void)::poll(&p, 1, static_cast<int>(d.count()));
    }

    // The sentinel that answered goes first next time; a master other than the last one named
    // is logged, so an operator can see when (and where to) this process followed a failover.
    void remember(const HostAndPort& sentinel, const ServerAddress& master) {
        std::optional<ServerAddress> previous;
        {
            std::lock_guard lock(mutex_);
            const auto it = std::ranges::find(sentinels_, sentinel);
            if (it != sentinels_.end()) std::rotate(sentinels_.begin(), it, it + 1);
            previous = std::exchange(last_master_, master);
        }
        if (previous && *previous != master)
            log_event("info", "redis_master_changed",
                      {{"master_name", master_name_},
                       {"from", show({previous->host, previous->port})},
                       {"to", show({master.host, master.port})},
                       {"sentinel", show(sentinel)}});
    }

    const std::string master_name_;
    const Login sentinel_login_;
    const Login master_login_;  ///< for the first term's INFO only
    const std::chrono::milliseconds grace_;
    const bool trust_first_term_;
    const TlsOptions tls_;  ///< the endpoint's: sentinels speak TLS when the master does
    std::mutex mutex_;
    std::vector<HostAndPort> sentinels_;             ///< guarded by mutex_
    std::optional<ServerAddress> last_master_;       ///< guarded by mutex_, for the log only
    std::atomic<std::uint64_t> generation_{0};       ///< +switch-master messages seen
    MasterTerm term_{grace_};                        ///< guarded by mutex_
    std::atomic<steady_clock::rep> grants_from_{0};  ///< term_.grants_from(), read without the mutex
    std::atomic<bool> stopping_{false};
    const int wake_fd_;
    std::once_flag watch_started_;
    std::thread watcher_;  // last: joined before the rest goes
};

// Sentinel endpoints that say the same share one topology (see the header).
std::string key_of(const RedisEndpoint& ep) {
    std::string key;
    for (const auto& s : ep.sentinels) key += show(s) + ",";
    for (const std::string* part : {&ep.master_name, &ep.sentinel_user, &ep.sentinel_password})
        key += std::to_string(part->size()) + ":" + *part;
    // The master's credentials too: the first term's INFO logs in with them.
    for (const std::string* part : {&ep.user, &ep.password}) key += std::to_string(part->size()) + ":" + *part;
    key += "grace:" + std::to_string(ep.failover_grace.count()) + (ep.trust_first_term ? ":first-term" : "");
    const TlsOptions& t = ep.tls;
    if (t.enabled)
        for (const std::string* part : {&t.ca_file, &t.ca_dir, &t.cert_file, &t.key_file, &t.server_name})
            key += std::to_string(part->size()) + ":" + *part;
    key += t.enabled ? (t.insecure ? "tls:insecure" : "tls") : "";
    return key;
}

}  // namespace

std::shared_ptr<Topology> sentinel_topology(const RedisEndpoint& endpoint) {
    static std::mutex mutex;
    static std::map<std::string, std::weak_ptr<Topology>> shared;
    const std::string key = key_of(endpoint);
    std::lock_guard lock(mutex);
    std::erase_if(shared, [](const auto& entry) { return entry.second.expired(); });
    if (auto existing = shared[key].lock()) return existing;
    auto created = std::make_shared<SentinelTopology>(endpoint);
    shared[key] = created;
    return created;
}

}  // namespace fencelock::detail

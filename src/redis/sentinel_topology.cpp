#include "redis/sentinel_topology.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
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
#include "redis/transport.hpp"
#include "redis/wire.hpp"
#include "redis/sentinel_views.hpp"
#include "redis/signal_free_thread.hpp"

namespace fencelock::detail {
namespace {

using std::chrono::steady_clock;


std::string show(const HostAndPort& at) { return at.host + ":" + std::to_string(at.port); }

// ["host", "port"] from get-master-addr-by-name; nullopt for nil (unknown name) or anything else.
std::optional<ServerAddress> master_in(const Reply& reply) {
    if (reply.kind != Reply::Kind::array || reply.elements.size() != 2) return std::nullopt;
    const Reply& host = reply.elements[0];
    const Reply& port = reply.elements[1];
    if (host.kind != Reply::Kind::string || host.str.empty() || port.kind != Reply::Kind::string) return std::nullopt;
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.str.data(), port.str.data() + port.str.size(), value);
    if (ec != std::errc{} || end != port.str.data() + port.str.size() || value == 0 || value > 65535)
        return std::nullopt;
    return ServerAddress{host.str, static_cast<std::uint16_t>(value)};
}

// From SENTINEL MASTER's flat [field, value, ...] list, when it is about `master`; nullopt for
// anything else (an error reply, ACL refusal, another address).
std::optional<MasterView> master_view(const Reply& reply, const ServerAddress& master) {
    if (reply.kind != Reply::Kind::array) return std::nullopt;
    std::map<std::string, std::string, std::less<>> fields;
    for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2)
        fields[reply.elements[i].str] = reply.elements[i + 1].str;
    const auto number = [&](std::string_view name) -> std::optional<std::uint64_t> {
        const auto it = fields.find(name);
        if (it == fields.end()) return std::nullopt;
        std::uint64_t v = 0;
        const auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
        if (ec != std::errc{} || end != it->second.data() + it->second.size()) return std::nullopt;
        return v;
    };
    const auto ip = fields.find("ip");
    const auto port = number("port");
    const auto age = number("role-reported-time");
    const auto epoch = number("config-epoch");
    if (ip == fields.end() || ip->second != master.host || port != master.port || !age || !epoch) return std::nullopt;
    return MasterView{std::chrono::milliseconds(*age), *epoch};
}

struct Login {
    std::string user;
    std::string password;  ///< empty: no AUTH
};

// Start moments of one term, as estimated at different times from different sentinels, differ
// by when each sentinel learned of it and by clock drift: up to about a second on one machine.
// A larger difference is another term (note_master_age).
constexpr std::chrono::seconds term_start_jitter{1};

class SentinelTopology final : public Topology {
public:
    explicit SentinelTopology(const RedisEndpoint& ep)
        : master_name_(ep.master_name), sentinel_login_{ep.sentinel_user, ep.sentinel_password},
          master_login_{ep.user, ep.password}, grace_(ep.failover_grace), trust_first_term_(ep.trust_first_term),
          tls_(ep.tls), sentinels_(ep.sentinels), wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
        if (wake_fd_ < 0) throw std::system_error(errno, std::system_category(), "eventfd");
    }

    ~SentinelTopology() override {
        stopping_.store(true);
        const std::uint64_t one = 1;
        [[maybe_unused]] const auto n = ::write(wake_fd_, &one, sizeof one);
        if (watcher_.joinable()) watcher_.join();
        ::close(wake_fd_);
    }

    std::expected<ServerAddress, std::error_code> resolve() override {
        std::call_once(watch_started_, [this] { watcher_ = start_signal_free_thread([this] { watch(); }); });
        std::vector<HostAndPort> order;
        {
            std::lock_guard lock(mutex_);
            order = sentinels_;
        }
        std::string why;  // each sentinel's failure, for the detail when none answers
        std::string cause;  // the last one's, when it has a name
        for (std::size_t i = 0; i < order.size(); ++i) {
            std::string failure;
            cause.clear();
            auto answer = ask(order[i], failure, cause);
            if (!answer) {
                why += (why.empty() ? "" : "; ") + ("sentinel " + order[i].host + ":" + std::to_string(order[i].port) +
                                                    ": " + failure);
                continue;
            }
            remember(order[i], answer->master);
            if (grace_ > std::chrono::milliseconds::zero()) {
                const MasterView view = agreeing_view(*answer, order, i);
                note_master_age(answer->master, view, first_term_confirmed(answer->master, view));
            }
            return answer->master;
        }
        remember_error_detail(errc::unavailable, "no sentinel named a master for '" + master_name_ + "': " + why,
                              std::move(cause));
        return std::unexpected(make_error_code(errc::unavailable));
    }

    steady_clock::time_point grants_from() const noexcept override {
        return steady_clock::time_point(steady_clock::duration(grants_from_.load()));
    }

    // Nothing to forget: resolve() keeps no master between calls, it asks every time.
    void report_failure(const ServerAddress&, std::error_code) noexcept override {}

    bool follows_master() const noexcept override { return true; }
    std::uint64_t generation() const noexcept override { return generation_.load(); }

private:
    using Answer = SentinelAnswer;

    // One question to one sentinel: the master's address and, when the grace is on, how long
    // this sentinel has known it as master, in the same round trip.
    // `failure` and `cause` (error_cause's name, kept when there is one) say why there is none.
    std::optional<Answer> ask(const HostAndPort& sentinel, std::string& failure, std::string& cause) const {
        std::optional<Wire> wire;
        std::vector<std::vector<std::string>> argv = {{"SENTINEL", "get-master-addr-by-name", master_name_}};
        if (grace_ > std::chrono::milliseconds::zero()) argv.push_back({"SENTINEL", "MASTER", master_name_});
        const auto replies = commands_at(wire, sentinel, sentinel_login_, argv, &failure, &cause);
        if (!replies) return std::nullopt;
        auto master = master_in(replies->front());
        if (!master) {
            failure = "it knows no master named '" + master_name_ + "'";
            return std::nullopt;
        }
        Answer answer{*master, std::nullopt};
        if (replies->size() == 2) answer.view = master_view(replies->back(), *master);
        return answer;
    }

    // The youngest view of `first.master` among a majority of the sentinels that name it
    // (redis/sentinel_views.hpp says why the youngest): the others are asked in turn until
    // that many agree. Too few agree (sentinels down, or naming another master): age zero,
    // the whole grace. So does an ACL that refuses SENTINEL MASTER: a stall, never an overlap.
    MasterView agreeing_view(const Answer& first, const std::vector<HostAndPort>& order, std::size_t answered) const {
        std::vector<std::optional<Answer>> answers{first};
        const std::size_t needed = sentinel_majority(order.size());
        const auto agreeing = [&] {
            return std::ranges::count_if(answers, [&](const auto& a) { return a && a->master == first.master && a->view; });
        };
        for (std::size_t i = 0; i < order.size() && static_cast<std::size_t>(agreeing()) < needed; ++i)
            if (i != answered) {
                std::string failure, cause;
                answers.push_back(ask(order[i], failure, cause));
            }
        return youngest_agreeing_view(answers, first.master, order.size());
    }

    // The master may grant from `grace` after it became master, or at once in a confirmed first
    // term. One term is one master, config epoch and count of +switch-master heard, with a
    // start moment (now minus the view's age) no later than the recorded one by
    // term_start_jitter: each estimate of a term errs late, so the earliest stands. Anything
    // else can only push the moment later: another master, a newer epoch, a switch heard
    // since, a sentinel that still names the dead master, and a start moment clearly later
    // than the recorded one. The last is how a term Sentinel never announced looks (a hand
    // promotion away and back with the sentinels re-created: same address, epoch 0, no switch
    // message); a majority of restarted sentinels look the same, and cost a stall.
    void note_master_age(const ServerAddress& master, const MasterView& view, bool first_term) {
        const auto now = steady_clock::now();
        const auto owed = first_term ? std::chrono::milliseconds::zero() : grace_ - view.age;
        const auto from = (now + owed).time_since_epoch().count();
        const steady_clock::time_point start = now - view.age;
        const std::uint64_t switches = generation_.load();
        std::lock_guard lock(mutex_);
        const bool same = aged_master_ == master && aged_epoch_ == view.epoch && aged_switches_ == switches &&
                          start <= aged_start_ + term_start_jitter;
        if (same) {
            if (from < grants_from_.load()) grants_from_.store(from);
            return;
        }
        if (from > grants_from_.load() || !aged_master_) {
            grants_from_.store(std::max(from, grants_from_.load()));
            aged_master_ = master;
            aged_epoch_ = view.epoch;
            aged_start_ = start;
        }
        aged_switches_ = switches;
    }

    // Whether the sentinels' epoch 0 (view.first_term) is the truth, by the master's own word
    // (started_fresh, sentinel_views.hpp), asked on a connection of its own with the master's
    // credentials, only while it could matter (inside the grace). Asked at every resolve():
    // a yes is true only of the moment it was given (a hand promotion leaves the epoch and the
    // switch count as they were), and the cost is one round trip per new connection during a
    // group's first grace. No answer (refused, timed out): not confirmed, the grace as before.
    bool first_term_confirmed(const ServerAddress& master, const MasterView& view) const {
        if (!trust_first_term_ || !view.first_term || view.age >= grace_) return false;
        // The caller's error detail is about the connection it goes on to make, not this one.
        const UnheardFailures unheard;
        std::optional<Wire> wire;
        const auto info = commands_at(wire, {master.host, master.port}, master_login_,
                                      {{"INFO", "replication"}, {"INFO", "persistence"}});
        return info && (*info)[0].kind == Reply::Kind::string && (*info)[1].kind == Reply::Kind::string &&
               started_fresh((*info)[0].str, (*info)[1].str);
    }

    // Connects `wire` to `at` (short timeouts; TLS as for the master) and sends AUTH (with
    // `login`, when it has a password) and `argv` back to back; the replies to `argv`, or
    // nullopt on a transport failure or when AUTH or argv's first command is refused. On
    // success `wire` stays connected. `failure` and `cause`, when given, get why not (cause
    // only when it has a name).
    std::optional<std::vector<Reply>> commands_at(std::optional<Wire>& wire, const HostAndPort& server,
                                                  const Login& login,
                                                  const std::vector<std::vector<std::string>>& argv,
                                                  std::string* failure = nullptr,
                                                  std::string* cause = nullptr) const {
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
            return fail(r.str, !auth                         ? ""
                               : r.str.starts_with("NOAUTH") ? "auth_required"
                                                             : "auth_rejected");
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
        if (m.kind != Reply::Kind::array || m.elements.size() != 3 || m.elements[2].kind != Reply::Kind::string)
            return;
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
    const Login master_login_;  ///< for first_term_confirmed() only
    const std::chrono::milliseconds grace_;
    const bool trust_first_term_;
    const TlsOptions tls_;  ///< the endpoint's: sentinels speak TLS when the master does
    std::mutex mutex_;
    std::vector<HostAndPort> sentinels_;        ///< guarded by mutex_
    std::optional<ServerAddress> last_master_;  ///< guarded by mutex_, for the log only
    std::atomic<std::uint64_t> generation_{0};  ///< +switch-master messages seen
    std::optional<ServerAddress> aged_master_;  ///< guarded by mutex_: grants_from_ is about it
    std::uint64_t aged_epoch_ = 0;              ///< guarded by mutex_
    std::uint64_t aged_switches_ = 0;           ///< guarded by mutex_: generation_ then
    steady_clock::time_point aged_start_;       ///< guarded by mutex_: when that master became master
    std::atomic<steady_clock::rep> grants_from_{0};
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
    // The master's credentials too: first_term_confirmed() logs in with them.
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

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

class SentinelTopology final : public Topology {
public:
    explicit SentinelTopology(const RedisEndpoint& ep)
        : master_name_(ep.master_name), user_(ep.sentinel_user), password_(ep.sentinel_password),
          grace_(ep.failover_grace), trust_epoch_zero_(ep.trust_epoch_zero), tls_(ep.tls), sentinels_(ep.sentinels), wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
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
            if (grace_ > std::chrono::milliseconds::zero())
                note_master_age(answer->master, agreeing_view(*answer, order, i));
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
        const auto replies = sentinel_commands(wire, sentinel, argv, &failure, &cause);
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

    // The master may grant from `grace` after it became master. Estimates for the same master,
    // config epoch and +switch-master count are each no earlier than the truth (each is the
    // youngest of a majority), so the earliest stands. Anything
    // else (another master, a newer epoch, a switch heard since: a failover, even one back to
    // this server, or a sentinel that still names the dead master) can only push the moment
    // later: a stale answer never shortens the grace a fresher one started.
    void note_master_age(const ServerAddress& master, const MasterView& view) {
        // A group in its first term has had no other master: grants may start now, when the
        // endpoint trusts epoch 0 to say so (RedisEndpoint::trust_epoch_zero says when it lies).
        const auto owed = view.first_term && trust_epoch_zero_ ? std::chrono::milliseconds::zero() : grace_ - view.age;
        const auto from = (steady_clock::now() + owed).time_since_epoch().count();
        const std::uint64_t switches = generation_.load();
        std::lock_guard lock(mutex_);
        const bool same = aged_master_ == master && aged_epoch_ == view.epoch && aged_switches_ == switches;
        if (same) {
            if (from < grants_from_.load()) grants_from_.store(from);
            return;
        }
        if (from > grants_from_.load()) {
            grants_from_.store(from);
            aged_master_ = master;
            aged_epoch_ = view.epoch;
        } else if (!aged_master_) {
            aged_master_ = master;
            aged_epoch_ = view.epoch;
        }
        aged_switches_ = switches;
    }

    // Connects `wire` to `sentinel` (short timeouts; TLS as for the master) and sends AUTH (with
    // sentinel credentials) and `argv` back to back; the replies to `argv`, or nullopt on a
    // transport failure or when AUTH or argv's first command is refused. On success `wire`
    // stays connected. `failure` and `cause`, when given, get why not (cause only when it has
    // a name).
    std::optional<std::vector<Reply>> sentinel_commands(std::optional<Wire>& wire, const HostAndPort& sentinel,
                                                        const std::vector<std::vector<std::string>>& argv,
                                                        std::string* failure = nullptr,
                                                        std::string* cause = nullptr) const {
        const auto fail = [&](std::string what, std::string_view named) -> std::optional<std::vector<Reply>> {
            if (failure) *failure = std::move(what);
            if (cause && !named.empty()) *cause = named;
            return std::nullopt;
        };
        const auto deadline = steady_clock::now() + sentinel_query_timeout;
        const ServerAddress at{sentinel.host, sentinel.port};
        auto transport = Transport::open(at, tls_, deadline);
        if (!transport) {
            const ThreadFailure& why = this_threads_last_failure();
            return fail(why.words, why.cause);
        }
        wire.emplace(std::move(*transport));
        std::vector<std::vector<std::string>> commands;
        if (!password_.empty()) {
            commands.push_back({"AUTH"});
            if (!user_.empty()) commands.back().push_back(user_);
            commands.back().push_back(password_);
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
                if (!sentinel_commands(wire, sentinel, {{"SUBSCRIBE", "+switch-master"}})) continue;
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
    const std::string user_;
    const std::string password_;
    const std::chrono::milliseconds grace_;
    const bool trust_epoch_zero_;
    const TlsOptions tls_;  ///< the endpoint's: sentinels speak TLS when the master does
    std::mutex mutex_;
    std::vector<HostAndPort> sentinels_;        ///< guarded by mutex_
    std::optional<ServerAddress> last_master_;  ///< guarded by mutex_, for the log only
    std::atomic<std::uint64_t> generation_{0};  ///< +switch-master messages seen
    std::optional<ServerAddress> aged_master_;  ///< guarded by mutex_: grants_from_ is about it
    std::uint64_t aged_epoch_ = 0;              ///< guarded by mutex_
    std::uint64_t aged_switches_ = 0;           ///< guarded by mutex_: generation_ then
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
    key += "grace:" + std::to_string(ep.failover_grace.count()) + (ep.trust_epoch_zero ? ":epoch0" : "");
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

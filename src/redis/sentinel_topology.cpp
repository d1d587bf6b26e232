#include "redis/sentinel_topology.hpp"

#include <fcntl.h>
#include <hiredis/hiredis.h>
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
#include "redis/hiredis_context.hpp"
#include "redis/signal_free_thread.hpp"

namespace fencelock::detail {
namespace {

struct ReplyDeleter {
    void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};

timeval to_timeval(std::chrono::milliseconds d) {
    return {static_cast<time_t>(d.count() / 1000), static_cast<suseconds_t>((d.count() % 1000) * 1000)};
}

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

class SentinelTopology final : public Topology {
public:
    explicit SentinelTopology(const RedisEndpoint& ep)
        : master_name_(ep.master_name), user_(ep.sentinel_user), password_(ep.sentinel_password),
          sentinels_(ep.sentinels), wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
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
        for (const HostAndPort& sentinel : order) {
            auto master = ask(sentinel);
            if (!master) continue;
            remember(sentinel, *master);
            return *master;
        }
        return std::unexpected(make_error_code(errc::unavailable));
    }

    // Nothing to forget: resolve() keeps no master between calls, it asks every time.
    void report_failure(const ServerAddress&, std::error_code) noexcept override {}

    bool follows_master() const noexcept override { return true; }
    std::uint64_t generation() const noexcept override { return generation_.load(); }

private:
    // One question to one sentinel.
    std::optional<ServerAddress> ask(const HostAndPort& sentinel) const {
        ContextPtr ctx;
        const auto reply = sentinel_command(ctx, sentinel, {"SENTINEL", "get-master-addr-by-name", master_name_});
        return reply ? master_in(*reply) : std::nullopt;
    }

    // Connects `ctx` to `sentinel` (short timeouts) and sends AUTH (with sentinel credentials)
    // and `argv` back to back; the reply to `argv`, or nullopt on any failure or error reply
    // (AUTH refused, not a sentinel...). On success `ctx` stays connected.
    std::optional<Reply> sentinel_command(ContextPtr& ctx, const HostAndPort& sentinel,
                                          const std::vector<std::string>& argv) const {
        const timeval tv = to_timeval(sentinel_query_timeout);
        ctx.reset(redisConnectWithTimeout(sentinel.host.c_str(), sentinel.port, tv));
        if (!ctx || ctx->err != 0) return std::nullopt;
        ::fcntl(ctx->fd, F_SETFD, ::fcntl(ctx->fd, F_GETFD) | FD_CLOEXEC);
        redisSetTimeout(ctx.get(), tv);
        std::vector<std::vector<std::string>> commands;
        if (!password_.empty()) {
            commands.push_back({"AUTH"});
            if (!user_.empty()) commands.back().push_back(user_);
            commands.back().push_back(password_);
        }
        commands.push_back(argv);
        for (const auto& command : commands)
            if (!append_command(ctx.get(), command)) return std::nullopt;
        auto replies = read_replies(ctx.get(), commands.size());
        if (!replies) return std::nullopt;
        for (const Reply& r : *replies)
            if (r.kind == Reply::Kind::error) return std::nullopt;
        return std::move(replies->back());
    }

    // +switch-master on one sentinel at a time (the first that accepts the subscription, in
    // the order resolve() learned), so connections leave the old master when the failover
    // completes instead of when Sentinel gets round to demoting it: until then it still
    // accepts writes that the new master never sees (a kept lease renewed there only would
    // expire on the new master). Started by the first resolve(): creating the topology does
    // no I/O. A lost subscription is retried every sentinel_query_timeout.
    void watch() {
        while (!stopping_.load()) {
            std::vector<HostAndPort> order;
            {
                std::lock_guard lock(mutex_);
                order = sentinels_;
            }
            for (const HostAndPort& sentinel : order) {
                ContextPtr ctx;
                if (!sentinel_command(ctx, sentinel, {"SUBSCRIBE", "+switch-master"})) continue;
                listen(*ctx);
                if (stopping_.load()) return;
            }
            wait_for_stop(sentinel_query_timeout);
        }
    }

    // Reads messages until the connection fails or the topology stops.
    void listen(redisContext& ctx) {
        for (;;) {
            void* raw = nullptr;
            if (redisGetReplyFromReader(&ctx, &raw) != REDIS_OK) return;
            if (raw != nullptr) {
                const std::unique_ptr<redisReply, ReplyDeleter> reply(static_cast<redisReply*>(raw));
                on_message(convert(reply.get()));
                continue;
            }
            pollfd fds[2] = {{ctx.fd, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
            if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
            if (stopping_.load()) return;
            if (fds[0].revents != 0 && redisBufferRead(&ctx) != REDIS_OK) return;
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
    std::mutex mutex_;
    std::vector<HostAndPort> sentinels_;        ///< guarded by mutex_
    std::optional<ServerAddress> last_master_;  ///< guarded by mutex_, for the log only
    std::atomic<std::uint64_t> generation_{0};  ///< +switch-master messages seen
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

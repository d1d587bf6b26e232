#include "redis/sentinel_topology.hpp"

#include <fcntl.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "fencelock/error.hpp"
#include "redis/hiredis_context.hpp"

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
          sentinels_(ep.sentinels) {}

    std::expected<ServerAddress, std::error_code> resolve() override {
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

private:
    // One question to one sentinel: AUTH (with sentinel credentials) and the query, pipelined.
    std::optional<ServerAddress> ask(const HostAndPort& sentinel) const {
        const timeval tv = to_timeval(sentinel_query_timeout);
        ContextPtr ctx(redisConnectWithTimeout(sentinel.host.c_str(), sentinel.port, tv));
        if (!ctx || ctx->err != 0) return std::nullopt;
        ::fcntl(ctx->fd, F_SETFD, ::fcntl(ctx->fd, F_GETFD) | FD_CLOEXEC);
        redisSetTimeout(ctx.get(), tv);
        std::vector<std::vector<std::string>> commands;
        if (!password_.empty()) {
            commands.push_back({"AUTH"});
            if (!user_.empty()) commands.back().push_back(user_);
            commands.back().push_back(password_);
        }
        commands.push_back({"SENTINEL", "get-master-addr-by-name", master_name_});
        for (const auto& argv : commands) {
            std::vector<const char*> ptrs;
            std::vector<size_t> lens;
            for (const auto& a : argv) {
                ptrs.push_back(a.data());
                lens.push_back(a.size());
            }
            if (redisAppendCommandArgv(ctx.get(), static_cast<int>(argv.size()), ptrs.data(), lens.data()) != REDIS_OK)
                return std::nullopt;
        }
        std::optional<ServerAddress> master;
        for (std::size_t i = 0; i < commands.size(); ++i) {
            void* raw = nullptr;
            if (redisGetReply(ctx.get(), &raw) != REDIS_OK || raw == nullptr) return std::nullopt;
            const std::unique_ptr<redisReply, ReplyDeleter> reply(static_cast<redisReply*>(raw));
            const Reply r = convert(reply.get());
            if (r.kind == Reply::Kind::error) return std::nullopt;  // AUTH refused, not a sentinel...
            if (i + 1 == commands.size()) master = master_in(r);
        }
        return master;
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

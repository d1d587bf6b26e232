#include "fencelock/error.hpp"

#include <array>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>

namespace fencelock {
namespace {

class Category final : public std::error_category {
public:
    const char* name() const noexcept override { return "fencelock"; }
    std::string message(int value) const override {
        switch (static_cast<errc>(value)) {
            case errc::unavailable: return "Redis unavailable (could not connect)";
            case errc::reply_timeout: return "no reply from Redis in time (outcome unknown)";
            case errc::connection_lost: return "connection to Redis lost after sending (outcome unknown)";
            case errc::auth_failed: return "Redis authentication failed";
            case errc::server_busy:
                return "Redis cannot serve the request now (LOADING, BUSY, TRYAGAIN, CLUSTERDOWN or OOM); nothing was "
                       "executed";
            case errc::corrupt_key: return "a lock key has an unexpected type or content";
            case errc::protocol_error: return "unexpected reply from Redis";
            case errc::not_master:
                return "the Redis server is not the master (READONLY, MASTERDOWN, or ROLE is not master): a failover "
                       "may be under way; nothing was written";
            case errc::replicas_unavailable:
                return "Redis refused the write (NOREPLICAS): fewer in-sync replicas than min-replicas-to-write; "
                       "nothing was written";
            case errc::is_sentinel:
                return "the address is a Redis Sentinel, not a Redis server: use "
                       "redis-sentinel://host:port[,host:port...]#master-name";
            case errc::failover_grace:
                return "the Redis master was promoted less than failover_grace ago: no new lease until the old "
                       "master's leases have run out; nothing was kept";
            case errc::not_replicated:
                return "fewer replicas acknowledged the lease (WAIT) than AcquireOptions::replicas asked for within "
                       "replica_timeout; the lease was released and is not held";
            case errc::not_cluster:
                return "a redis-cluster:// seed is not a Redis Cluster node (cluster support disabled): use redis:// "
                       "for a single server";
            case errc::fence_exhausted:
                return "the resource's fence counter is at 2^53 - 1 (9007199254740991), the largest fence: it cannot "
                       "be locked again; nothing was changed";
        }
        return "unknown fencelock error";
    }
};

// Value 0 is "no error" for any std::error_code, so 1: the policy could not be read; 2..:
// Redis 7's policies; the last: any other name.
constexpr std::array<std::string_view, 10> eviction_policies = {"",
                                                                "",
                                                                "allkeys-lru",
                                                                "allkeys-lfu",
                                                                "allkeys-random",
                                                                "volatile-lru",
                                                                "volatile-lfu",
                                                                "volatile-random",
                                                                "volatile-ttl",
                                                                "(another policy)"};

class EvictionCategory final : public std::error_category {
public:
    const char* name() const noexcept override { return "fencelock.eviction"; }
    std::string message(int value) const override {
        const std::string_view fix =
            "; fencelock needs maxmemory-policy noeviction (an evicted key can hand out a fence twice or let a "
            "second owner in), or an explicit opt-out (RedisEndpoint::allow_eviction, --allow-eviction)";
        if (value <= 1 || value >= static_cast<int>(eviction_policies.size()))
            return "could not learn Redis's maxmemory-policy (CONFIG GET and INFO memory both refused)" +
                   std::string(fix);
        return "Redis evicts keys: maxmemory-policy is " + std::string(eviction_policies[value]) + std::string(fix);
    }
};

}  // namespace

const std::error_category& eviction_category() noexcept {
    static const EvictionCategory category;
    return category;
}

namespace detail {
// Declared in redis/handshake.hpp; here, beside the table its values index.
std::error_code eviction_refusal(const std::optional<std::string>& policy) {
    if (!policy) return {1, eviction_category()};
    for (std::size_t i = 2; i + 1 < eviction_policies.size(); ++i)
        if (*policy == eviction_policies[i]) return {static_cast<int>(i), eviction_category()};
    return {static_cast<int>(eviction_policies.size() - 1), eviction_category()};
}
}  // namespace detail

const std::error_category& error_category() noexcept {
    static const Category category;
    return category;
}

failure_kind classify(std::error_code ec) noexcept {
    if (ec.category() != error_category()) return failure_kind::fatal;
    switch (static_cast<errc>(ec.value())) {
        case errc::unavailable:
        case errc::server_busy:
        case errc::not_master:
        case errc::replicas_unavailable:
        case errc::failover_grace:
        case errc::not_replicated: return failure_kind::retryable;
        case errc::reply_timeout:
        case errc::connection_lost: return failure_kind::outcome_unknown;
        case errc::auth_failed:
        case errc::corrupt_key:
        case errc::protocol_error:
        case errc::is_sentinel:
        case errc::not_cluster:
        case errc::fence_exhausted: return failure_kind::fatal;
    }
    return failure_kind::fatal;
}

namespace {
// One entry per error code (a bounded table): the latest text and cause seen for it.
struct Detail {
    std::string text, cause;
};
struct Details {
    std::mutex mutex;
    std::map<std::pair<const std::error_category*, int>, Detail> by_code;
};
Details& details() {
    static Details d;
    return d;
}
}  // namespace

namespace {
thread_local const std::string* error_place = nullptr;
thread_local bool failures_unheard = false;
}  // namespace

void detail::remember_error_detail(std::error_code ec, std::string text, std::string cause) noexcept {
    if (failures_unheard) return;
    try {
        auto& d = details();
        std::lock_guard lock(d.mutex);
        if (error_place != nullptr) text = *error_place + ": " + text;
        d.by_code[{&ec.category(), ec.value()}] = Detail{std::move(text), std::move(cause)};
    } catch (...) {
    }
}

detail::UnheardFailures::UnheardFailures() noexcept : outer_(failures_unheard) { failures_unheard = true; }
detail::UnheardFailures::~UnheardFailures() { failures_unheard = outer_; }

detail::ErrorPlace::ErrorPlace(std::string where) noexcept : where_(std::move(where)), outer_(error_place) {
    error_place = &where_;
}

detail::ErrorPlace::~ErrorPlace() { error_place = outer_; }

std::string error_detail(std::error_code ec) {
    auto& d = details();
    std::lock_guard lock(d.mutex);
    const auto it = d.by_code.find({&ec.category(), ec.value()});
    return it == d.by_code.end() ? std::string() : it->second.text;
}

std::string error_cause(std::error_code ec) {
    auto& d = details();
    std::lock_guard lock(d.mutex);
    const auto it = d.by_code.find({&ec.category(), ec.value()});
    return it == d.by_code.end() ? std::string() : it->second.cause;
}

std::string_view to_string(failure_kind kind) noexcept {
    switch (kind) {
        case failure_kind::retryable: return "retryable";
        case failure_kind::outcome_unknown: return "outcome_unknown";
        case failure_kind::fatal: return "fatal";
    }
    return "fatal";
}

}  // namespace fencelock

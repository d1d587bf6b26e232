#include "faults/failover_fences.hpp"

#include <stdexcept>
#include <system_error>

#include "support/raw_redis.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;
using test_support::RawRedis;

// A fresh client per call: a server killed and restarted on the same port leaves a pooled
// connection broken, and the scenario wants every attempt to reach the server it names.
LockClient client_at(std::uint16_t port) {
    auto c = LockClient::create({.endpoint = *parse_redis_url("redis://127.0.0.1:" + std::to_string(port)),
                                 .connect_timeout = 200ms,
                                 .command_timeout = 500ms});
    if (!c) throw std::invalid_argument("ClientOptions." + c.error().field + ": " + c.error().message);
    return std::move(*c);
}

ResourceName name(const std::string& resource) {
    auto n = ResourceName::make(resource);
    if (!n) throw std::invalid_argument("bad resource name " + resource);
    return *n;
}

class LockClientFences final : public FenceSource {
public:
    Result<Acquisition> try_acquire(std::uint16_t port, const std::string& resource,
                                    std::chrono::milliseconds lease) override {
        return client_at(port).try_acquire(name(resource), {.lease = lease});
    }
    void release(std::uint16_t port, const Lease& lease) override {
        (void)client_at(port).release(lease.resource, lease.owner);
    }
    std::string_view describe() const override { return "fencelock acquire script"; }
};

// The recipe found in many codebases: take the lock with SET NX PX, then number the
// ownership with INCR. Two commands, not atomic: the scenario runs one holder at a time, so
// that never matters here; what matters is that the counter is just a replicated integer.
class NaiveFences final : public FenceSource {
public:
    Result<Acquisition> try_acquire(std::uint16_t port, const std::string& resource,
                                    std::chrono::milliseconds lease) override {
        const auto sent = std::chrono::steady_clock::now();
        try {
            RawRedis redis(port);
            auto owner = OwnerToken::generate();
            redis.send({"SET", lock_key(resource), owner.str(), "NX", "PX", std::to_string(lease.count())});
            const auto set = redis.read_line(1s);
            if (!set) return std::unexpected(make_error_code(errc::reply_timeout));
            if (*set == "$-1") return Acquisition{.attempts = 1};                           // held by someone else
            if (*set != "+OK") return std::unexpected(make_error_code(errc::server_busy));  // READONLY, ...
            redis.send({"INCR", "naive-fence:{" + resource + "}"});
            const auto incr = redis.read_line(1s);
            if (!incr || !incr->starts_with(':')) return std::unexpected(make_error_code(errc::reply_timeout));
            // The same local margin LockClient keeps (clock_drift_factor 0.01).
            return Acquisition{.lease = Lease{.resource = name(resource),
                                              .owner = std::move(owner),
                                              .fence = FencingToken(std::stoull(incr->substr(1))),
                                              .ttl = lease,
                                              .safe_until = sent + lease * 99 / 100},
                               .attempts = 1};
        } catch (const std::system_error&) {
            return std::unexpected(make_error_code(errc::unavailable));
        }
    }

    void release(std::uint16_t port, const Lease& lease) override {
        try {
            RawRedis redis(port);
            redis.send({"GET", lock_key(lease.resource.str())});
            const auto length = redis.read_line(1s);
            if (!length || *length == "$-1") return;
            if (redis.read_line(1s) == lease.owner.str()) redis.send({"DEL", lock_key(lease.resource.str())});
            (void)redis.read_line(1s);
        } catch (const std::system_error&) {
            // Best effort: the lease expires on its own.
        }
    }

    std::string_view describe() const override { return "SET NX PX + INCR"; }

private:
    static std::string lock_key(const std::string& resource) { return "naive-lock:{" + resource + "}"; }
};

}  // namespace

std::unique_ptr<FenceSource> fencelock_fences() { return std::make_unique<LockClientFences>(); }
std::unique_ptr<FenceSource> naive_fences() { return std::make_unique<NaiveFences>(); }

}  // namespace fencelock::faults

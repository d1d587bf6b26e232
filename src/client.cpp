#include "fencelock/client.hpp"

#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <random>
#include <stdexcept>

#include "core/backoff.hpp"
#include "core/keys.hpp"
#include "core/protocol.hpp"
#include "redis/connection_pool.hpp"
#include "redis/hiredis_connection.hpp"
#include "redis/script_runner.hpp"

namespace fencelock {

using detail::run_script;
using std::chrono::steady_clock;

namespace {

std::string host_name() {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
    return buf;
}

void require_valid(const AcquireOptions& options) {
    if (auto ok = options.validate(); !ok)
        throw std::invalid_argument("AcquireOptions." + ok.error().field + ": " + ok.error().message);
}

std::mt19937_64& thread_rng() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    return rng;
}

// Sleeps for `d` unless `stop` is requested first; returns false when stopped.
bool sleep_unless_stopped(std::chrono::milliseconds d, std::stop_token stop) {
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lock(m);
    return !cv.wait_for(lock, stop, d, [] { return false; }) && !stop.stop_requested();
}

}  // namespace

struct LockClient::Impl {
    explicit Impl(ClientOptions o)
        : options(std::move(o)),
          pool(
              [s = detail::ConnectionSettings{options.endpoint, options.connect_timeout,
                                              options.command_timeout}] {
                  return detail::make_hiredis_connection(s);
              },
              options.pool_size),
          host(host_name()),
          pid(std::to_string(::getpid())) {}

    ClientOptions options;
    detail::ConnectionPool pool;
    std::string host;
    std::string pid;
};

std::string_view to_string(RenewStatus s) noexcept {
    switch (s) {
        case RenewStatus::renewed: return "renewed";
        case RenewStatus::not_owner: return "not_owner";
        case RenewStatus::max_hold_exceeded: return "max_hold_exceeded";
    }
    return "unknown";
}

std::string_view to_string(ReleaseStatus s) noexcept {
    return s == ReleaseStatus::released ? "released" : "not_owner";
}

std::expected<LockClient, OptionError> LockClient::create(ClientOptions options) {
    if (auto ok = options.validate(); !ok) return std::unexpected(ok.error());
    return LockClient(std::make_unique<Impl>(std::move(options)));
}

LockClient::LockClient(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
LockClient::LockClient(LockClient&&) noexcept = default;
LockClient& LockClient::operator=(LockClient&&) noexcept = default;
LockClient::~LockClient() = default;

const ClientOptions& LockClient::options() const noexcept { return impl_->options; }

Result<Acquisition> LockClient::try_acquire(const ResourceName& resource, const AcquireOptions& options) {
    return try_acquire(resource, OwnerToken::generate(), options);
}

Result<Acquisition> LockClient::try_acquire(const ResourceName& resource, const OwnerToken& owner,
                                            const AcquireOptions& options) {
    require_valid(options);
    const auto keys = detail::make_keys(impl_->options.key_prefix, resource);
    const std::string lease_ms = std::to_string(options.lease.count());
    const std::string max_hold_ms = std::to_string(options.max_hold.count());
    const auto sent = steady_clock::now();
    auto reply = run_script(*impl_->pool.borrow(), detail::scripts::acquire, {keys.lock, keys.fence},
                            {owner.str(), lease_ms, max_hold_ms, impl_->host, impl_->pid,
                             impl_->options.holder_label});
    if (!reply) return std::unexpected(reply.error());
    auto decoded = detail::decode_acquire(*reply);
    if (!decoded) return std::unexpected(decoded.error());

    Acquisition result;
    result.attempts = 1;
    if (!decoded->acquired) {
        result.holder_ttl = decoded->ttl;
        return result;
    }
    result.lease = Lease{resource, owner, decoded->fence, decoded->ttl,
                         detail::safe_until(sent, decoded->ttl, impl_->options.clock_drift_factor),
                         decoded->reacquired};
    return result;
}

Result<Acquisition> LockClient::acquire(const ResourceName& resource, const AcquireOptions& options,
                                        std::stop_token stop) {
    return acquire(resource, OwnerToken::generate(), options, stop);
}

// Why one owner token for every attempt: if an attempt's reply is lost (timeout, broken
// connection), Redis may have granted the lease. The next attempt with the same token gets that
// lease back with its fence instead of being blocked by it until it expires.
Result<Acquisition> LockClient::acquire(const ResourceName& resource, const OwnerToken& owner,
                                        const AcquireOptions& options, std::stop_token stop) {
    require_valid(options);
    const auto deadline = steady_clock::now() + options.wait;
    unsigned attempts = 0;
    std::chrono::milliseconds holder_ttl{0};
    std::error_code last_error;
    bool maybe_granted = false;  // an attempt with unknown outcome may hold the lease
    for (;;) {
        ++attempts;
        auto result = try_acquire(resource, owner, options);
        if (result) {
            result->attempts = attempts;
            if (result->acquired()) return result;
            holder_ttl = result->holder_ttl;
            last_error.clear();
            maybe_granted = false;
        } else {
            last_error = result.error();
            if (classify(last_error) == failure_kind::fatal) return result;
            maybe_granted = maybe_granted || classify(last_error) == failure_kind::outcome_unknown;
        }
        const auto now = steady_clock::now();
        if (now >= deadline || stop.stop_requested()) break;
        auto delay = detail::full_jitter(options.backoff, attempts - 1, thread_rng());
        delay = std::min(delay, std::chrono::ceil<std::chrono::milliseconds>(deadline - now));
        if (!sleep_unless_stopped(delay, stop)) break;
    }
    if (last_error) {
        // Giving up after an unknown outcome: free the lease we may have been granted instead
        // of leaving it to block others until it expires. Best effort; it expires anyway.
        if (maybe_granted) (void)release(resource, owner);
        return std::unexpected(last_error);
    }
    Acquisition contended;
    contended.attempts = attempts;
    contended.holder_ttl = holder_ttl;
    return contended;
}

Result<Renewal> LockClient::renew(const ResourceName& resource, const OwnerToken& owner,
                                  std::chrono::milliseconds lease) {
    if (lease < std::chrono::milliseconds(10)) throw std::invalid_argument("renew: lease must be at least 10ms");
    const auto keys = detail::make_keys(impl_->options.key_prefix, resource);
    const std::string lease_ms = std::to_string(lease.count());
    const auto sent = steady_clock::now();
    auto reply = run_script(*impl_->pool.borrow(), detail::scripts::renew, {keys.lock}, {owner.str(), lease_ms});
    if (!reply) return std::unexpected(reply.error());
    auto decoded = detail::decode_renew(*reply);
    if (!decoded) return std::unexpected(decoded.error());
    Renewal r{decoded->status, decoded->ttl, {}, decoded->fence};
    if (r.status == RenewStatus::renewed)
        r.safe_until = detail::safe_until(sent, r.ttl, impl_->options.clock_drift_factor);
    return r;
}

Result<ReleaseStatus> LockClient::release(const ResourceName& resource, const OwnerToken& owner) {
    const auto keys = detail::make_keys(impl_->options.key_prefix, resource);
    auto reply = run_script(*impl_->pool.borrow(), detail::scripts::release, {keys.lock}, {owner.str()});
    if (!reply) return std::unexpected(reply.error());
    return detail::decode_release(*reply);
}

Result<LockInfo> LockClient::inspect(const ResourceName& resource) {
    const auto keys = detail::make_keys(impl_->options.key_prefix, resource);
    auto reply = run_script(*impl_->pool.borrow(), detail::scripts::inspect, {keys.lock, keys.fence}, {});
    if (!reply) return std::unexpected(reply.error());
    return detail::decode_inspect(*reply);
}

}  // namespace fencelock

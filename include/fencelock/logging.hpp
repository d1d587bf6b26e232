#pragma once
/// Structured logs for lock events (library fencelock::obs): one JSON object per line.
///
/// Each line carries an RFC 3339 UTC timestamp (`ts`, milliseconds), the level, the event name,
/// the resource type and a hash of the resource id (the raw id only when `raw_resource_ids` is
/// set), the owner token, fence, lease length, the result and durations. Numbers are JSON
/// numbers (`"fence":17`, `"wait_ms":0.25`), booleans JSON booleans. Secrets never appear: the
/// library never logs connection URLs or passwords.

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fencelock/log_value.hpp"
#include "fencelock/observer.hpp"
#include "fencelock/store_observer.hpp"

namespace fencelock {

enum class LogLevel { debug, info, warn, error, off };

/// Parses "debug", "info", "warn", "error" or "off".
std::optional<LogLevel> parse_log_level(std::string_view text);

struct LogOptions {
    /// Lines below this level are dropped. Default info: acquisitions, releases and every
    /// failure; renewals and contention are debug.
    LogLevel level = LogLevel::info;
    /// Log the full resource id instead of its hash. Default false: ids may be personal data.
    bool raw_resource_ids = false;
    /// resource_type is the part of the name before this character. Default ':'.
    char resource_type_separator = ':';
    /// Where lines go (without the trailing newline). Default: stderr.
    std::function<void(std::string_view line)> sink{};
};

/// A stable 16-hex-digit FNV-1a hash of a resource id, to correlate log lines about one resource
/// without printing it. Not a secret: ids from a small space can be found by trying them.
std::string resource_hash(std::string_view resource);

namespace detail {
class RenewalLogLimit;
}

/// Renewal failures are logged once per lease per change: the first failure of a kind (warn
/// `lock_renew`), not its repeats (the keeper retries about every 100 ms while Redis fails
/// over), then a different kind or the first success after failures (warn, with `held_back`:
/// the repeats left out, and `recovered` on the success). Metrics count every renewal.
class JsonLogObserver final : public LockObserver, public StoreObserver {
public:
    explicit JsonLogObserver(LogOptions options = {});
    ~JsonLogObserver() override;
    JsonLogObserver(const JsonLogObserver&) = delete;
    JsonLogObserver& operator=(const JsonLogObserver&) = delete;

    void on_acquire(const AcquireEvent& e) noexcept override;
    void on_renew(const RenewEvent& e) noexcept override;
    void on_release(const ReleaseEvent& e) noexcept override;
    void on_lease_lost(const LossEvent& e) noexcept override;
    /// A stale write, claim or transaction the store refused (warn `fence_rejected`).
    void on_fence_rejected(const FenceRejectedEvent& e) noexcept override;

    /// For other layers (queue, tools): writes {"ts","level","event",<resource fields>,<fields>};
    /// absent fields (and empty texts) are left out.
    void log(LogLevel level, std::string_view event, std::string_view resource,
             std::initializer_list<LogField> fields) noexcept;

private:
    LogOptions options_;
    std::unique_ptr<detail::RenewalLogLimit> renewals_;
};

/// Forwards every event to several observers (e.g. metrics and logs).
class ObserverChain final : public LockObserver {
public:
    explicit ObserverChain(std::vector<std::shared_ptr<LockObserver>> observers) : observers_(std::move(observers)) {}
    void on_acquire(const AcquireEvent& e) noexcept override {
        for (auto& o : observers_) o->on_acquire(e);
    }
    void on_renew(const RenewEvent& e) noexcept override {
        for (auto& o : observers_) o->on_renew(e);
    }
    void on_release(const ReleaseEvent& e) noexcept override {
        for (auto& o : observers_) o->on_release(e);
    }
    void on_lease_lost(const LossEvent& e) noexcept override {
        for (auto& o : observers_) o->on_lease_lost(e);
    }

private:
    std::vector<std::shared_ptr<LockObserver>> observers_;
};

}  // namespace fencelock

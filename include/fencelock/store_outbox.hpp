#pragma once
/// OutboxRelay: publishes committed outbox events to Redis streams, at least once.

#include <chrono>
#include <cstddef>
#include <expected>
#include <memory>

#include "fencelock/options.hpp"
#include "fencelock/redis_url.hpp"
#include "fencelock/store.hpp"

namespace fencelock {

struct RelayOptions {
    /// Redis server receiving the events. Default 127.0.0.1:6379, db 0.
    RedisEndpoint endpoint{};
    /// Limit for connecting to Redis. Default 1 s.
    milliseconds connect_timeout{1000};
    /// Limit for one XADD reply. Default 1 s.
    milliseconds command_timeout{1000};
    /// Events read and published per relay_once() call, at least 1. Default 100.
    std::size_t batch_size = 100;

    std::expected<void, OptionError> validate() const;
};

/// Relays events of one FencedStore (which must outlive it). Not thread-safe; run one relay per
/// store, or several and let consumers deduplicate (they must anyway).
///
/// Delivery is at-least-once: an event is marked sent only after Redis acknowledged its
/// XADD, so a crash or error in between publishes it again on the next pass. Each stream entry
/// carries the fields `event_id`, `resource`, `fence`, `payload`; consumers dedupe by event_id.
class OutboxRelay {
public:
    static std::expected<OutboxRelay, OptionError> create(FencedStore& store, RelayOptions options);

    OutboxRelay(OutboxRelay&&) noexcept;
    OutboxRelay& operator=(OutboxRelay&&) noexcept;
    ~OutboxRelay();

    /// One pass: reads up to batch_size unsent events, XADDs each to its stream in order, marks
    /// the published ones sent. Returns how many were published. On a Redis error, events
    /// published before it are still marked sent and the error is returned (code of the
    /// `fencelock` category); the rest stays unsent for the next pass.
    StoreResult<std::size_t> relay_once();

private:
    struct Impl;
    explicit OutboxRelay(std::unique_ptr<Impl> impl) noexcept;
    std::unique_ptr<Impl> impl_;
};

}  // namespace fencelock

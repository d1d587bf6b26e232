#pragma once
/// What `inspect` reports about one lock: its last fence, the server's clock, and its holder.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "fencelock/types.hpp"

namespace fencelock {

using std::chrono::milliseconds;

/// Who holds a lock, from `inspect`.
struct HolderState {
    std::string owner;
    FencingToken fence{0};
    milliseconds ttl{0};
    milliseconds lease{0};
    milliseconds held_for{0};
    milliseconds since_renew{0};
    /// Time left until Redis refuses renewals (acquired_at + max_hold - now).
    milliseconds max_hold_left{0};
    std::uint64_t renewals = 0;
    std::string host;
    std::int64_t pid = 0;
    std::string label;
};

struct LockInfo {
    /// The counter's current value: the last fence ever issued for this resource (0: none).
    FencingToken last_fence{0};
    /// The Redis server's wall clock (TIME) when it read this snapshot: set against the
    /// caller's clock at the reply, it shows the server-to-client clock offset (to within the
    /// round trip). Leases never depend on it; fences across a failover assume the servers'
    /// clocks agree (docs/DESIGN.md, "Clock skew"). The epoch (time_point{}) when the
    /// coordinator has no clock to read (etcd).
    std::chrono::system_clock::time_point server_time{};
    /// Set when the lock is currently held.
    std::optional<HolderState> holder;
};

}  // namespace fencelock

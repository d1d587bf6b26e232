#pragma once
// Redis key names of a resource. Every key carries the resource inside one hash tag `{R}`, so
// Redis Cluster places them in the same slot and one script may touch them all.
#include <string>
#include <string_view>

#include "fencelock/types.hpp"

namespace fencelock::detail {

struct LockKeys {
    std::string lock;              ///< <prefix>lock:{R}: the lease hash, with a TTL
    std::string fence;             ///< <prefix>fence:{R}: the fencing counter, never expires
    std::string waiters;           ///< <prefix>waiters:{R}: fair-mode line, zset owner -> arrival (us)
    std::string waiter_deadlines;  ///< <prefix>waiter-deadlines:{R}: hash owner -> slot lapse (ms)
    std::string sleepers;          ///< <prefix>sleepers:{R}: other waiters, zset owner -> arrival (us)
    std::string released;          ///< <prefix>released:{R}: pub/sub channel, one message per release
    std::string audit;             ///< <prefix>audit:{R}: stream of forced releases (force_release.lua)
    std::string handoff;           ///< <prefix>handoff:{R}: hash owner -> a waiter's direct-grant arguments
};

LockKeys make_keys(std::string_view prefix, const ResourceName& resource);

}  // namespace fencelock::detail

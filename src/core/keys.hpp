#pragma once
// Redis key names of a resource. Both keys carry the resource inside one hash tag `{R}`, so
// Redis Cluster places them in the same slot and one script may touch both.
#include <string>
#include <string_view>

#include "fencelock/types.hpp"

namespace fencelock::detail {

struct LockKeys {
    std::string lock;   ///< <prefix>lock:{R}: the lease hash, with a TTL
    std::string fence;  ///< <prefix>fence:{R}: the fencing counter, never expires
};

LockKeys make_keys(std::string_view prefix, const ResourceName& resource);

}  // namespace fencelock::detail

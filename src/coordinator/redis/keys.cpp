#include "coordinator/redis/keys.hpp"

namespace fencelock::detail {

LockKeys make_keys(std::string_view prefix, const ResourceName& resource) {
    const std::string tag = "{" + resource.str() + "}";
    const std::string p(prefix);
    return {p + "lock:" + tag,     p + "fence:" + tag,    p + "waiters:" + tag, p + "waiter-deadlines:" + tag,
            p + "sleepers:" + tag, p + "released:" + tag, p + "audit:" + tag,   p + "handoff:" + tag};
}

}  // namespace fencelock::detail

#include "core/keys.hpp"

namespace fencelock::detail {

LockKeys make_keys(std::string_view prefix, const ResourceName& resource) {
    const std::string tag = "{" + resource.str() + "}";
    return {std::string(prefix) + "lock:" + tag, std::string(prefix) + "fence:" + tag};
}

}  // namespace fencelock::detail

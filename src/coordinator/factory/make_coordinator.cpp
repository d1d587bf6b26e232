// The one place that knows every backend (kept out of the seam's own folder, which names none):
// the endpoint's scheme picks the coordinator.
#include <stdexcept>

#include "coordinator/coordinator.hpp"
#include "coordinator/redis/redis_coordinator.hpp"
#if FENCELOCK_WITH_ETCD
#include "coordinator/etcd/etcd_coordinator.hpp"
#endif

namespace fencelock::detail {

std::shared_ptr<Coordinator> make_coordinator(const ClientOptions& options) {
    if (options.endpoint.uses_etcd()) {
#if FENCELOCK_WITH_ETCD
        return std::make_shared<etcd::EtcdCoordinator>(options);
#else
        // ClientOptions::validate() refuses it first; this is for a caller that skipped it.
        throw std::invalid_argument("this fencelock was built without etcd (FENCELOCK_WITH_ETCD=OFF)");
#endif
    }
    return std::make_shared<RedisCoordinator>(options);
}

}  // namespace fencelock::detail

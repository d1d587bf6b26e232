// lease_holder: holds one kept lease until it is lost, for tests that pause or starve a holder.
// Usage: lease_holder REDIS_URL RESOURCE LEASE_MS OUT_FILE [DB_URL]
// Writes "acquired FENCE" once the lease is held, then "lost REASON MONOTONIC_NS" when the
// keeper declares it lost (stop token). With DB_URL it then does what a stale worker does:
// writes to the store with its old fence anyway, and records "write RESULT". Exits 0.
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>

#include "fencelock/client.hpp"
#ifdef FENCELOCK_WITH_STORE
#include "fencelock/store.hpp"
#endif
#include "integration/hold_history.hpp"

using namespace fencelock;

int main(int argc, char** argv) {
    if (argc != 5 && argc != 6) {
        std::fprintf(stderr, "usage: lease_holder REDIS_URL RESOURCE LEASE_MS OUT_FILE [DB_URL]\n");
        return 2;
    }
    auto client = LockClient::create({.endpoint = *parse_redis_url(argv[1]),
                                      .connect_timeout = std::chrono::milliseconds(100),
                                      .command_timeout = std::chrono::milliseconds(100)});
    auto held = client->hold(*ResourceName::make(argv[2]), {.lease = std::chrono::milliseconds(std::stoll(argv[3]))});
    if (!held || !held->acquired()) return 3;
    HeldLease& lease = *held->lease;
    std::ofstream out(argv[4]);
    out << "acquired " << lease.fence().value() << std::endl;

    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lock(m);
    cv.wait(lock, lease.stop_token(), [] { return false; });
    const auto noticed = test_support::monotonic_ns();
    out << "lost " << to_string(*lease.loss()) << ' ' << noticed << std::endl;
#ifdef FENCELOCK_WITH_STORE
    if (argc == 6) {
        auto store = FencedStore::create({.url = argv[5]});
        auto written = store->write(lease.resource(), lease.fence(), "written by the stale holder");
        out << "write " << (written ? std::string(to_string(written->status)) : "error") << std::endl;
    }
#endif
    return 0;
}

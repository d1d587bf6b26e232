// The asynchronous API: many lockers issued from one thread, each continued by its callbacks
// on the client's event-loop thread; this thread only waits for them to finish.
#include <fencelock/async_client.hpp>

#include <atomic>
#include <latch>
#include <string>

#include "example_env.hpp"

int main() {
    using namespace std::chrono_literals;
    auto client = fencelock::AsyncLockClient::create({.endpoint = *fencelock::parse_redis_url(example::redis_url())});
    if (!client) return example::fail("bad client options");
    std::atomic<int> done{0};
    // README.md shows this region as written: not reformatted.
    // clang-format off
    // readme:begin
    std::latch finished(16);
    for (int i = 0; i < 16; ++i) {
        const auto resource = *fencelock::ResourceName::make("job:" + std::to_string(i));
        client->try_acquire(resource, {.lease = 10s}, [&, resource](fencelock::Result<fencelock::Acquisition> got) {
            // On the client's loop thread, under no lock of the client: calling back into it is fine.
            if (!got || !got->acquired()) return finished.count_down();  // error or contended
            client->release(resource, got->lease->owner, [&](fencelock::Result<fencelock::ReleaseStatus> r) {
                if (r && *r == fencelock::ReleaseStatus::released) ++done;
                finished.count_down();
            });
        });
    }
    finished.wait();  // only this thread waits; the 16 lockers had no thread of their own
    // readme:end
    // clang-format on
    if (done != 16) return example::fail(std::to_string(done.load()) + " of 16 cycles completed");
    std::puts("async_lockers: 16 lockers acquired and released");
    return 0;
}

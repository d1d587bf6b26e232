// Opt-in replica acknowledgement: a lease counts only once a replica has it (WAIT). Against a
// server without replicas, as in the tests, every attempt ends not_replicated and nothing is held.
#include <fencelock/fencelock.hpp>

#include "example_env.hpp"

int main() {
    using namespace std::chrono_literals;
    auto client = fencelock::LockClient::create({.endpoint = *fencelock::parse_redis_url(example::redis_url())});
    if (!client) return example::fail("bad client options");
    // README.md shows this region as written: not reformatted.
    // clang-format off
    // readme:begin
    const auto resource = *fencelock::ResourceName::make("order:42");
    auto got = client->acquire(resource, {.lease = 30s, .wait = 1s, .replicas = 1, .replica_timeout = 200ms});
    if (!got && got.error() == fencelock::errc::not_replicated) {
        // No replica acknowledged the lease within 1 s of attempts: nobody holds it; try later.
    }
    // readme:end
    // clang-format on
    if (got && got->acquired()) {
        (void)client->release(resource, got->lease->owner);
        std::puts("replica_ack: a replica acknowledged the lease");
        return 0;
    }
    if (!got && got.error() == fencelock::errc::not_replicated) {
        auto info = client->inspect(resource);
        if (!info || info->holder) return example::fail("an unacknowledged lease is still held");
        std::puts("replica_ack: no replica acknowledged, and nothing is held");
        return 0;
    }
    return example::fail(got ? "contended" : got.error().message());
}

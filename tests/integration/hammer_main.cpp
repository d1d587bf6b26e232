// hammer: a separate process taking turns on shared resources, for the mutual-exclusion test.
// Usage: hammer REDIS_URL DURATION_MS OUT_FILE RESOURCE...
// Writes one line per critical section: resource fence start_ns end_ns.
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "fencelock/client.hpp"
#include "integration/hold_history.hpp"

using namespace fencelock;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr, "usage: hammer REDIS_URL DURATION_MS OUT_FILE RESOURCE...\n");
        return 2;
    }
    auto client = LockClient::create({.endpoint = *parse_redis_url(argv[1])});
    const auto until = test_support::monotonic_ns() + std::stoll(argv[2]) * 1'000'000;
    std::ofstream out(argv[3]);
    std::vector<ResourceName> resources;
    for (int i = 4; i < argc; ++i) resources.push_back(*ResourceName::make(argv[i]));
    std::mt19937 rng{std::random_device{}()};
    int failures = 0;
    while (test_support::monotonic_ns() < until) {
        const auto& r = resources[rng() % resources.size()];
        auto got = client->acquire(r, {.lease = 10s, .wait = 5s, .backoff = {.base = 1ms, .max = 10ms}});
        if (!got || !got->acquired()) {
            ++failures;
            continue;
        }
        const auto start = test_support::monotonic_ns();
        volatile unsigned spin = 0;
        for (unsigned i = 0; i < rng() % 20000; ++i) spin = spin + i;  // a short critical section
        const auto end = test_support::monotonic_ns();
        out << r.str() << ' ' << got->lease->fence.value() << ' ' << start << ' ' << end << '\n';
        (void)client->release(r, got->lease->owner);
    }
    return failures > 0 ? 1 : 0;
}

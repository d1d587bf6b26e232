// Hold a lease for long work (the keeper renews it), read with a fenced claim, write back.
#include <fencelock/fencelock.hpp>
#include <fencelock/store.hpp>

#include "example_env.hpp"

int main() {
    using namespace std::chrono_literals;
    auto client = fencelock::LockClient::create({.endpoint = *fencelock::parse_redis_url(example::redis_url())});
    if (!client) return example::fail("bad client options");
    const auto order = *fencelock::ResourceName::make("order:43");
    // README.md shows this region as written: not reformatted.
    // clang-format off
    // readme:begin
    auto store = fencelock::FencedStore::create({.url = example::db_url()});
    (void)store->init();
    (void)store->create_resource(order);
    auto held = client->hold(order, {.lease = 10s});
    if (!held || !held->acquired()) return example::fail("not acquired");
    fencelock::HeldLease& lease = *held->lease;
    auto claimed = store->claim(order, lease.fence(), lease.owner());  // fenced read
    // ... compute, checking lease.stop_token() ...
    auto written = store->write(order, lease.fence(), "shipped", {.owner = lease.owner()});  // stale if overtaken
    // readme:end
    // clang-format on
    if (!claimed) return example::fail(claimed.error().detail);
    if (!written || written->status != fencelock::WriteStatus::applied) return example::fail("write not applied");
    std::puts("hold_and_claim: claimed and wrote order:43 under a kept lease");
    return 0;
}

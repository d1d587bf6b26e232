// Acquire a lease, write through the fenced store with its fence, release: the README's first
// library example, which is this whole program.
// readme:begin
#include <fencelock/fencelock.hpp>
#include <fencelock/store.hpp>

#include "example_env.hpp"  // example::redis_url(), db_url(): $FENCELOCK_REDIS_URL, $FENCELOCK_DB_URL

int main() {
    using namespace std::chrono_literals;
    auto client = fencelock::LockClient::create({
        .endpoint = *fencelock::parse_redis_url(example::redis_url()),
        .command_timeout = 500ms});
    auto store = fencelock::FencedStore::create({.url = example::db_url()});  // sqlite:// or postgresql://
    if (!client || !store) return example::fail("bad options");
    if (auto created = store->init(); !created) return example::fail(created.error().detail);  // tables, once
    auto order = *fencelock::ResourceName::make("order:42");
    (void)store->create_resource(order);  // the guard row fences are checked against (idempotent)

    auto got = client->acquire(order, {.lease = 30s, .max_hold = 10min, .wait = 5s});
    if (!got) return example::fail(got.error().message());  // classify(got.error()): retry or not
    if (!got->acquired()) return example::fail("contended");  // requeue, try later
    const fencelock::Lease& lease = *got->lease;
    auto written = store->write(order, lease.fence, "paid", {.owner = lease.owner});  // stale if overtaken
    (void)client->release(order, lease.owner);
    if (!written || written->status != fencelock::WriteStatus::applied) return example::fail("write not applied");
    std::puts("acquire_and_write: wrote order:42 with its fence");
    return 0;
}
// readme:end

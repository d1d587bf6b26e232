// Acquire a lease, write through the fenced store with its fence, release: the README's first
// library example, which is this whole program (it includes only installed headers, so the
// README's text builds as it is against the package).
// README.md shows this region as written: not reformatted.
// clang-format off
// readme:begin
#include <fencelock/fencelock.hpp>
#include <fencelock/store.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

// Where the servers are: $FENCELOCK_REDIS_URL and $FENCELOCK_DB_URL, else a laptop's defaults.
std::string env_or(const char* name, const char* fallback) {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' ? value : fallback;
}

int fail(const std::string& why) {
    std::fprintf(stderr, "acquire_and_write: %s\n", why.c_str());
    return 1;
}

int main() {
    using namespace std::chrono_literals;
    auto client = fencelock::LockClient::create({
        .endpoint = *fencelock::parse_redis_url(env_or("FENCELOCK_REDIS_URL", "redis://127.0.0.1:6379")),
        .command_timeout = 500ms});
    // sqlite:// or postgresql://
    auto store = fencelock::FencedStore::create({.url = env_or("FENCELOCK_DB_URL", "sqlite:///tmp/fencelock-example.db")});
    if (!client || !store) return fail("bad options");
    if (auto created = store->init(); !created) return fail(created.error().detail);  // tables, once
    auto order = *fencelock::ResourceName::make("order:42");
    (void)store->create_resource(order);  // the guard row fences are checked against (idempotent)

    auto got = client->acquire(order, {.lease = 30s, .max_hold = 10min, .wait = 5s});
    if (!got) return fail(got.error().message());  // classify(got.error()): retry or not
    if (!got->acquired()) return fail("contended");  // requeue, try later
    const fencelock::Lease& lease = *got->lease;
    auto written = store->write(order, lease.fence, "paid", {.owner = lease.owner});  // stale if overtaken
    (void)client->release(order, lease.owner);
    if (!written || written->status != fencelock::WriteStatus::applied) return fail("write not applied");
    std::puts("acquire_and_write: wrote order:42 with its fence");
    return 0;
}
// readme:end
// clang-format on

// The operators' calls: list held locks, force one free with a reason, read the audit log.
#include <fencelock/admin.hpp>
#include <fencelock/fencelock.hpp>

#include "example_env.hpp"

int main() {
    using namespace std::chrono_literals;
    auto client = fencelock::LockClient::create({.endpoint = *fencelock::parse_redis_url(example::redis_url())});
    if (!client) return example::fail("bad client options");
    const auto order = *fencelock::ResourceName::make("order:44");
    auto stuck = client->try_acquire(order, {.lease = 1min});  // a holder that went away
    if (!stuck || !stuck->acquired()) return example::fail("could not take order:44");
    // README.md shows this region as written: not reformatted.
    // clang-format off
    // readme:begin
    fencelock::LockAdmin admin(*client);
    auto held = admin.list_locks("order:*", 100);  // SCAN, never KEYS
    auto forced = admin.force_release(
        order, {.reason = "worker host died", .operator_name = "alice@ops", .even_if_active = true});
    auto log = admin.audit_log(order, 10);  // newest first
    // readme:end
    // clang-format on
    if (!held || held->empty()) return example::fail("list_locks found nothing");
    if (!forced || forced->status != fencelock::ForceReleaseStatus::released) return example::fail("not released");
    if (!log || log->empty()) return example::fail("no audit entry");
    std::puts("admin: listed, force-released and audited order:44");
    return 0;
}

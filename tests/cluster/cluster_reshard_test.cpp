// Resharding under load: slots holding live leases and waiting contenders are migrated back
// and forth between masters (MIGRATING/IMPORTING, MIGRATE, SETSLOT NODE: what
// `redis-cli --cluster reshard` does) while lockers run. The lockers keep their own history
// (integration/hold_history.hpp); it must show mutual exclusion and strictly increasing fences per
// resource, every acquisition must succeed within its wait, and a kept lease in a migrated
// slot must be renewed throughout (through ASK, then MOVED).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cluster/cluster_fixture.hpp"
#include "cluster/cluster_reshard.hpp"
#include "fencelock/client.hpp"
#include "integration/hold_history.hpp"
#include "local_servers/cluster_group.hpp"
#include "redis/cluster_slot.hpp"
#include "support/eventually.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

TEST(ClusterReshard, LocksStayExclusiveAndFencesIncreaseWhileTheirSlotsMove) {
    auto& cluster = SharedCluster::get();
    const auto ports = cluster.ports();
    const auto masters = local::master_ports(ports.front());
    ASSERT_EQ(masters.size(), 3u);
    // Two slots, three resources in each, homes on masters 0 and 1; both visit master 2.
    auto resources = in_slot_of(resource_on(masters[0], "reshard-a"), "cluster:reshard-a:", 3);
    for (auto& r : in_slot_of(resource_on(masters[1], "reshard-b"), "cluster:reshard-b:", 3)) resources.push_back(r);
    const std::uint16_t slot_a = slot_of(resources[0]), slot_b = slot_of(resources[3]);

    auto keeper_client = LockClient::create({.endpoint = cluster.endpoint()});
    ASSERT_TRUE(keeper_client.has_value());
    const auto kept_r = in_slot_of(resources[0], "cluster:reshard-kept:", 2)[1];
    auto kept = keeper_client->hold(kept_r, {.lease = 2s});
    ASSERT_TRUE(kept && kept->acquired());

    std::atomic<bool> stop{false};
    std::atomic<int> done{0};
    std::mutex m;
    std::vector<Hold> holds;
    std::vector<std::string> failures;
    std::vector<std::thread> lockers;
    for (int t = 0; t < 4; ++t) {
        lockers.emplace_back([&, t] {
            auto c = LockClient::create({.endpoint = cluster.endpoint()});
            for (std::size_t i = static_cast<std::size_t>(t); !stop; ++i) {
                const auto& r = resources[i % resources.size()];
                auto got = c->acquire(r, {.lease = 5s, .wait = 20s});
                if (!got || !got->acquired()) {
                    std::lock_guard lock(m);
                    failures.push_back(r.str() + ": " + (got ? "not acquired within its wait" : got.error().message()));
                    continue;
                }
                Hold h{r.str(), got->lease->fence.value(), monotonic_ns(), 0, "locker" + std::to_string(t)};
                auto info = c->inspect(r);  // the critical section's work: a call routed like the others
                if (!info || !info->holder || info->holder->fence != got->lease->fence) {
                    std::lock_guard lock(m);
                    failures.push_back(r.str() + ": inspect inside the lease did not show it");
                }
                h.end_ns = monotonic_ns();
                auto released = c->release(r, got->lease->owner);
                std::lock_guard lock(m);
                holds.push_back(h);
                if (!released || *released != ReleaseStatus::released)
                    failures.push_back(r.str() + ": release " +
                                       (released ? "found another owner" : released.error().message()));
                ++done;
            }
        });
    }
    auto load_between = [&] {
        const int before = done;
        ASSERT_TRUE(eventually([&] { return done >= before + 20; }, 60s)) << "the lockers stalled";
    };
    for (int round = 0; round < 2; ++round) {
        load_between();
        migrate(ports, slot_a, masters[2]);
        load_between();
        migrate(ports, slot_b, masters[2]);
        load_between();
        migrate(ports, slot_a, masters[0]);
        load_between();
        migrate(ports, slot_b, masters[1]);
    }
    load_between();
    stop = true;
    for (auto& t : lockers) t.join();

    EXPECT_TRUE(failures.empty()) << failures.size() << " failures, first: " << failures.front();
    EXPECT_GT(holds.size(), 160u);
    const auto violations = check_holds(holds);
    EXPECT_TRUE(violations.empty()) << violations.size() << " violations, first: " << violations.front();
    EXPECT_TRUE(kept->lease->valid());
    EXPECT_EQ(keeper_client->keeper_stats().leases_lost, 0u);
    local::wait_cluster_ready(ports, 3, 30s);
}

}  // namespace
}  // namespace fencelock::test_support

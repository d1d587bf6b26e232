// A holder process frozen with SIGSTOP past its lease, and a holder starved of CPU.
#include <signal.h>

#include <fstream>
#include <sstream>

#include "integration/hold_history.hpp"
#include "integration/lock_fixture.hpp"
#ifdef FENCELOCK_WITH_STORE
#include "fencelock/store.hpp"
#endif
#include "local_servers/child_process.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;
using local::start_process;
using local::wait_process;

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

TEST_F(LockTest, StoppedHolderNoticesTheLossWithinOneRenewalIntervalAfterSigcont) {
    const auto r = resource("paused:1");
    const std::string out = ::testing::TempDir() + "holder-" + std::to_string(::getpid());
    constexpr long lease_ms = 300;  // renewed every 100 ms
    std::vector<std::string> argv{LEASE_HOLDER_BIN, client_url(), r.str(), std::to_string(lease_ms), out};
#ifdef FENCELOCK_WITH_STORE
    // The records live in a real SQLite store that checks fences.
    const std::string db_file = ::testing::TempDir() + "paused-" + std::to_string(::getpid()) + ".db";
    std::remove(db_file.c_str());
    auto store = FencedStore::create({.url = "sqlite://" + db_file});
    ASSERT_TRUE(store && store->init());
    ASSERT_TRUE(store->create_resource(r, "initial"));
    argv.push_back("sqlite://" + db_file);
#endif
    const pid_t holder = start_process(argv);
    ASSERT_TRUE(eventually([&] { return read_file(out).starts_with("acquired "); })) << "holder never acquired";
    const std::uint64_t holder_fence = std::stoull(read_file(out).substr(9));

    ::kill(holder, SIGSTOP);
    auto c = client();
    ASSERT_TRUE(eventually([&] { return lock_gone(c, r); }, 5s)) << "the frozen holder's lease never expired";
    auto taker = c.try_acquire(r, {.lease = 10s});
    ASSERT_TRUE(taker && taker->acquired());
    EXPECT_GT(taker->lease->fence.value(), holder_fence);
#ifdef FENCELOCK_WITH_STORE
    auto taken = store->write(r, taker->lease->fence, "written by the new holder");
    ASSERT_TRUE(taken && taken->status == WriteStatus::applied);
#endif

    const auto resumed = monotonic_ns();
    ::kill(holder, SIGCONT);
    EXPECT_EQ(wait_process(holder), 0);
    std::istringstream lost(read_file(out).substr(read_file(out).find('\n') + 1));
    std::string word, reason;
    std::int64_t noticed = 0;
    lost >> word >> reason >> noticed;
    ASSERT_EQ(word, "lost");
    EXPECT_EQ(reason, "expired") << "the local deadline passed while frozen";
    const auto delay_ms = (noticed - resumed) / 1'000'000;
    std::printf("holder noticed the loss %lld ms after SIGCONT (renewal interval %ld ms)\n",
                static_cast<long long>(delay_ms), lease_ms / 3);
    EXPECT_LE(delay_ms, lease_ms / 3);

#ifdef FENCELOCK_WITH_STORE
    // The woken holder wrote with its old fence anyway: the store refused it.
    EXPECT_NE(read_file(out).find("write stale"), std::string::npos) << read_file(out);
    auto record = store->read(r);
    ASSERT_TRUE(record && *record);
    EXPECT_EQ((*record)->value, "written by the new holder");
    EXPECT_EQ((*record)->last_fence, taker->lease->fence);
    std::remove(db_file.c_str());
#else
    EXPECT_FALSE(FencingToken(holder_fence) > taker->lease->fence);
#endif
    auto info = c.inspect(r);
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->holder->owner, taker->lease->owner.str()) << "the woken holder must not disturb the taker";
    std::remove(out.c_str());
}

TEST_F(LockTest, KeeperRenewsInTimeUnderCpuStarvation) {
    auto c = client();
    std::atomic<bool> spin{true};
    std::vector<std::jthread> hogs;
    const unsigned cores = std::max(2u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < cores * 2; ++i)
        hogs.emplace_back([&] {
            volatile std::uint64_t x = 0;
            while (spin.load(std::memory_order_relaxed)) x = x + 1;
        });
    std::vector<HeldLease> leases;
    for (int i = 0; i < 20; ++i) {
        auto held = c.hold(resource("starved:" + std::to_string(i)), {.lease = 600ms});
        ASSERT_TRUE(held && held->acquired());
        leases.push_back(std::move(*held->lease));
    }
    // Ten renewal intervals under full load.
    ASSERT_TRUE(eventually(
        [&] {
            return std::all_of(leases.begin(), leases.end(), [](const HeldLease& l) { return l.renewals() >= 10; });
        },
        20s));
    spin = false;
    hogs.clear();
    const KeeperStats stats = c.keeper_stats();
    std::printf("under starvation (%u busy threads): %llu renewals in %llu batches, worst send lateness %lld us\n",
                cores * 2, static_cast<unsigned long long>(stats.renewals_confirmed),
                static_cast<unsigned long long>(stats.batches),
                static_cast<long long>(stats.max_send_lateness.count()));
    EXPECT_EQ(stats.leases_lost, 0u);
    for (const auto& l : leases) EXPECT_TRUE(l.valid());
}

}  // namespace
}  // namespace fencelock::test_support

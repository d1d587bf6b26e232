// The keeper as a driver over the coordinator seam alone: a coordinator and a renewal channel
// written here, no Redis. It renews kept leases through the channel in batches, releases through
// give_back, reads a server clock only when the coordinator's capabilities say there is one, and
// treats a renewal the replicas did not acknowledge as not confirmed.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "coordinator/async_session.hpp"
#include "lock/renewal_keeper.hpp"
#include "support/eventually.hpp"

namespace fencelock::detail {
namespace {

using namespace std::chrono_literals;
using test_support::eventually;

/// A channel of one lane whose renewals all succeed unless told otherwise.
class FakeChannel final : public RenewalChannel {
public:
    std::string lease_address(const ResourceName& resource) const override { return "lease/" + resource.str(); }
    bool one_lane() const noexcept override { return true; }
    std::optional<LaneRoute> lane_of(std::string_view) override { throw std::logic_error("one lane: never asked"); }

    RenewBatch renew_batch(std::span<const RenewItem> items) override {
        std::lock_guard lock(mutex);
        ++batches;
        RenewBatch out;
        for (const RenewItem& item : items) {
            addresses.emplace_back(item.address);
            durabilities.push_back(item.durability.replicas);
            RenewReply reply;  // not_owner
            if (!refuse.load()) {
                reply.status = RenewStatus::renewed;
                reply.fence = FencingToken(7);
                reply.ttl = item.lease;
            }
            if (serve_clock) {
                reply.server_time = std::chrono::duration_cast<std::chrono::milliseconds>(server_now()) +
                                    std::chrono::milliseconds(jump_ms.load());
                out.server_time = reply.server_time;
            }
            if (unreplicated.load() && !refuse.load())
                out.replies.push_back(std::unexpected(make_error_code(errc::not_replicated)));
            else out.replies.push_back(reply);
        }
        return out;
    }

    /// The fake server's clock: the steady clock, plus jump_ms in renewal replies.
    static std::chrono::microseconds server_now() {
        return std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::steady_clock::now().time_since_epoch());
    }

    std::optional<ServerClockWatch::Reading> read_clock(std::optional<std::string_view> sample) override {
        EXPECT_FALSE(sample.has_value()) << "one lane: no sample routes the reading";
        ++clock_readings;
        if (!serve_clock) return std::nullopt;
        const auto now = std::chrono::steady_clock::now();
        return ServerClockWatch::Reading{now, now, server_now(), 1};
    }

    std::mutex mutex;
    int batches = 0;
    std::vector<std::string> addresses;
    std::vector<unsigned> durabilities;
    std::atomic<bool> refuse{false};
    std::atomic<bool> unreplicated{false};
    std::atomic<int> clock_readings{0};
    bool serve_clock = false;  ///< set before the keeper starts: read_clock answers, replies carry a time
    std::atomic<std::int64_t> jump_ms{0};
};

/// The seam's other operations: only give_back is the keeper's.
class FakeCoordinator final : public Coordinator {
public:
    explicit FakeCoordinator(bool server_clock) : server_clock_(server_clock) {}

    CoordinatorCapabilities capabilities() const noexcept override { return {.server_clock = server_clock_}; }
    std::unique_ptr<RenewalChannel> renewal_channel() override {
        auto made = std::make_unique<FakeChannel>();
        made->serve_clock = serve_clock;
        channel = made.get();
        return made;
    }
    Result<ReleaseStatus> give_back(const ResourceName& resource, const OwnerToken&) override {
        given_back.push_back(resource.str());
        return ReleaseStatus::released;
    }

    Result<AcquireReply> attempt(const AttemptRequest&) override { return unused<AcquireReply>(); }
    Result<RenewReply> renew(const ResourceName&, const OwnerToken&, std::chrono::milliseconds) override {
        return unused<RenewReply>();
    }
    Result<ReleaseReply> release(const ResourceName&, const OwnerToken&) override { return unused<ReleaseReply>(); }
    void hand_over(const ResourceName&, const GrantMessage&) override { ADD_FAILURE() << "hand_over"; }
    Result<bool> leave_line(const ResourceName&, const OwnerToken&) override { return unused<bool>(); }
    Result<LockInfo> inspect(const ResourceName&) override { return unused<LockInfo>(); }
    std::unique_ptr<WatchSeat> watch(const ResourceName&, const OwnerToken&, std::optional<SuccessorTerms>) override {
        ADD_FAILURE() << "watch";
        return nullptr;
    }
    bool has_local_waiters(const ResourceName&) override { return false; }
    bool watching(const ResourceName&) override { return false; }
    void close_watch() noexcept override {}
    std::unique_ptr<AsyncSession> async_session() override { return nullptr; }
    steady_time grants_from() const noexcept override { return {}; }
    Result<std::vector<HeldLock>> list_locks(std::string_view, std::size_t) override {
        return unused<std::vector<HeldLock>>();
    }
    Result<ForceReleaseOutcome> force_release(const ResourceName&, const ForceReleaseRequest&) override {
        return unused<ForceReleaseOutcome>();
    }
    Result<std::vector<AuditEntry>> audit_log(const std::optional<ResourceName>&, std::size_t) override {
        return unused<std::vector<AuditEntry>>();
    }

    FakeChannel* channel = nullptr;
    bool serve_clock = false;  ///< handed to the channel it makes
    std::vector<std::string> given_back;

private:
    template <typename T>
    static Result<T> unused() {
        ADD_FAILURE() << "the keeper asked the coordinator for more than give_back";
        return std::unexpected(make_error_code(errc::protocol_error));
    }
    bool server_clock_;
};

constexpr double drift = 0.01;

struct Kept {
    std::shared_ptr<Keeper> keeper;
    std::shared_ptr<KeptLease> lease;
};

/// A lease of 300 ms renewed every 50 ms, granted now with fence 7.
Kept keep(const std::shared_ptr<Coordinator>& coordinator, const char* name, unsigned replicas = 0,
          std::shared_ptr<Keeper> keeper = nullptr) {
    if (!keeper) keeper = make_keeper(coordinator, nullptr, ClockWatchTerms{drift, 100ms});
    const AcquireOptions options{.lease = 300ms, .replicas = replicas, .replica_timeout = 50ms};
    auto lease = make_kept_lease(*keeper, *ResourceName::make(name), OwnerToken::generate(), options,
                                 KeepOptions{.renew_every = 50ms}, drift);
    keeper->add(lease);
    const auto now = std::chrono::steady_clock::now();
    keeper->activate(lease, now, 300ms, FencingToken(7), now);
    return {keeper, lease};
}

TEST(KeeperSeam, KeptLeasesAreRenewedThroughTheChannelByTheAddressItGaveThem) {
    auto coordinator = std::make_shared<FakeCoordinator>(false);
    auto a = keep(coordinator, "a", 2);
    auto b = keep(coordinator, "b", 0, a.keeper);
    ASSERT_TRUE(eventually([&] { return a.lease->renewals.load() >= 2 && b.lease->renewals.load() >= 2; }));
    {
        std::lock_guard lock(coordinator->channel->mutex);
        EXPECT_NE(std::ranges::find(coordinator->channel->addresses, "lease/a"), coordinator->channel->addresses.end());
        EXPECT_NE(std::ranges::find(coordinator->channel->addresses, "lease/b"), coordinator->channel->addresses.end());
        // Each item carries its own lease's durability.
        for (std::size_t i = 0; i < coordinator->channel->addresses.size(); ++i)
            EXPECT_EQ(coordinator->channel->durabilities[i], coordinator->channel->addresses[i] == "lease/a" ? 2u : 0u);
    }
    EXPECT_EQ(a.keeper->stats().leases_kept, 2u);
    // No server clock: the keeper never reads one.
    EXPECT_EQ(coordinator->channel->clock_readings.load(), 0);

    a.keeper->remove(a.lease);
    EXPECT_EQ(a.keeper->release(*a.lease), ReleaseStatus::released);
    EXPECT_EQ(coordinator->given_back, std::vector<std::string>{"a"});
    EXPECT_EQ(a.keeper->stats().leases_kept, 1u);
    b.keeper->remove(b.lease);
}

TEST(KeeperSeam, AServerClockIsReadOnlyWhenTheCoordinatorHasOne) {
    auto coordinator = std::make_shared<FakeCoordinator>(true);
    auto a = keep(coordinator, "a");
    ASSERT_TRUE(eventually([&] { return coordinator->channel->clock_readings.load() >= 1; }));
    a.keeper->remove(a.lease);
}

TEST(KeeperSeam, ANotOwnerRenewalLosesTheLease) {
    auto coordinator = std::make_shared<FakeCoordinator>(false);
    auto a = keep(coordinator, "a");
    coordinator->channel->refuse = true;
    // The lease is marked lost under the keeper's lock, and its stop token fires just after,
    // outside it: wait for the token, which comes last.
    ASSERT_TRUE(eventually([&] { return a.lease->stop.stop_requested(); }));
    EXPECT_EQ(a.lease->state.load(), KeptLease::State::lost);
    EXPECT_EQ(a.lease->reason.load(), LossReason::not_owner);
    EXPECT_EQ(a.keeper->stats().leases_lost, 1u);
}

TEST(KeeperSeam, ARenewalTheReplicasDidNotAcknowledgeDoesNotExtendTheLeaseWhichExpires) {
    auto coordinator = std::make_shared<FakeCoordinator>(false);
    auto a = keep(coordinator, "a", 1);
    coordinator->channel->unreplicated = true;
    const std::uint64_t renewed = a.lease->renewals.load();
    ASSERT_TRUE(eventually([&] { return a.lease->state.load() == KeptLease::State::lost; }));
    EXPECT_EQ(a.lease->reason.load(), LossReason::expired);  // retried, never confirmed
    EXPECT_LE(a.lease->renewals.load(), renewed + 1);        // at most one confirmed in between
}

// The master's clock speaks in a renewal's reply even when the replicas did not acknowledge the
// renewal: a jump there calls for a probe at once, as in any other reply.
TEST(KeeperSeam, AClockJumpInARenewalTheReplicasDidNotAcknowledgeStillCallsForAProbe) {
    auto coordinator = std::make_shared<FakeCoordinator>(true);
    coordinator->serve_clock = true;
    auto a = keep(coordinator, "a", 1);
    ASSERT_TRUE(eventually([&] { return coordinator->channel->clock_readings.load() >= 1; }));
    EXPECT_EQ(a.keeper->stats().clock_probes_on_renewal, 0u);
    coordinator->channel->jump_ms = 10'000;
    coordinator->channel->unreplicated = true;
    ASSERT_TRUE(eventually([&] { return a.keeper->stats().clock_probes_on_renewal >= 1; }));
    a.keeper->remove(a.lease);
}

}  // namespace
}  // namespace fencelock::detail

// AsyncLockClient against a real redis-server: each operation's callback, many operations from
// one thread, callbacks that call back into the client, and destruction with operations in flight.
#include <atomic>
#include <future>
#include <iostream>
#include <latch>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

#include "fencelock/async_client.hpp"
#include "integration/lock_fixture.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

class AsyncClientTest : public LockTest {
protected:
    AsyncLockClient async_client(AsyncOptions async = {}) {
        auto c = AsyncLockClient::create({.endpoint = *parse_redis_url(client_url())}, async);
        EXPECT_TRUE(c.has_value());
        return std::move(*c);
    }

    // One try_acquire, waited for through its callback.
    static Result<Acquisition> try_acquire_now(AsyncLockClient& c, const ResourceName& r) {
        auto [done, result] = promised<Acquisition>();
        c.try_acquire(r, {.lease = std::chrono::seconds(10)}, std::move(done));
        return result.get();
    }

    // An acquisition started now: its result, when it comes.
    static std::future<Result<Acquisition>> start_acquire(AsyncLockClient& c, const ResourceName& r,
                                                          const AcquireOptions& o) {
        auto [done, result] = promised<Acquisition>();
        c.acquire(r, o, std::move(done));
        return std::move(result);
    }
    static Result<ReleaseStatus> release_now(AsyncLockClient& c, const ResourceName& r, const OwnerToken& owner) {
        auto [done, result] = promised<ReleaseStatus>();
        c.release(r, owner, std::move(done));
        return result.get();
    }
    // A holds `r`; B, refused, waits in Redis's line (sleepers): the line a later waiter finds.
    std::pair<Acquisition, std::future<Result<Acquisition>>> held_with_one_in_line(AsyncLockClient& c,
                                                                                   const ResourceName& r,
                                                                                   const AcquireOptions& o) {
        auto held = start_acquire(c, r, o).get();
        EXPECT_TRUE(held && held->acquired());
        auto b = start_acquire(c, r, o);
        EXPECT_TRUE(eventually([&] { return redis->cli({"ZCARD", "sleepers:{" + r.str() + "}"}) == "1"; }));
        return {std::move(*held), std::move(b)};
    }

    long connected_clients() {
        const std::string info = redis->cli({"INFO", "clients"});
        const std::string marker = "connected_clients:";
        return std::stol(info.substr(info.find(marker) + marker.size()));
    }
};

TEST_F(AsyncClientTest, EachOperationCompletesItsCallbackWithTheSyncResult) {
    auto c = async_client();
    const auto r = resource("async:ops");

    auto first = try_acquire_now(c, r);
    ASSERT_TRUE(first && first->acquired()) << (first ? "contended" : first.error().message());
    const Lease lease = *first->lease;

    auto second = try_acquire_now(c, r);
    ASSERT_TRUE(second);
    EXPECT_FALSE(second->acquired());
    EXPECT_GT(second->holder_ttl, 0ms);

    auto [renewed, renewal] = promised<Renewal>();
    c.renew(r, lease.owner, 20s, std::move(renewed));
    auto ren = renewal.get();
    ASSERT_TRUE(ren);
    EXPECT_EQ(ren->status, RenewStatus::renewed);
    EXPECT_EQ(ren->fence, lease.fence);

    // acquire() waits: it is granted once the release below frees the lock.
    auto [waited, waiting] = promised<Acquisition>();
    auto [released, release] = promised<ReleaseStatus>();
    c.acquire(r, {.lease = 10s, .wait = 10s}, std::move(waited));
    c.release(r, lease.owner, std::move(released));
    EXPECT_EQ(release.get(), ReleaseStatus::released);
    auto third = waiting.get();
    ASSERT_TRUE(third && third->acquired()) << (third ? "contended" : third.error().message());
    EXPECT_GT(third->lease->fence, lease.fence);
    (void)c.sync().release(r, third->lease->owner);

    auto [held, holding] = promised<Holding>();
    c.hold(r, {.lease = 300ms}, {}, std::move(held));
    auto kept = holding.get();
    ASSERT_TRUE(kept && kept->acquired());
    ASSERT_TRUE(eventually([&] { return kept->lease->renewals() >= 2; })) << "the keeper renews an async hold";
    EXPECT_EQ(kept->lease->release(), ReleaseStatus::released);
}

TEST_F(AsyncClientTest, ManyOperationsFromOneThreadAllComplete) {
    auto c = async_client();
    constexpr int lockers = 200;
    std::vector<std::atomic<int>> calls(lockers);
    std::atomic<int> acquired{0}, released{0};
    std::latch all_released(lockers);
    for (int i = 0; i < lockers; ++i) {
        const auto r = resource("async:many:" + std::to_string(i));
        c.try_acquire(r, {.lease = 10s}, [&, i, r](Result<Acquisition> got) {
            calls[static_cast<std::size_t>(i)].fetch_add(1);
            if (!got || !got->acquired()) return all_released.count_down();
            acquired.fetch_add(1);
            c.release(r, got->lease->owner, [&](Result<ReleaseStatus> s) {
                if (s && *s == ReleaseStatus::released) released.fetch_add(1);
                all_released.count_down();
            });
        });
    }
    all_released.wait();
    EXPECT_EQ(acquired.load(), lockers);
    EXPECT_EQ(released.load(), lockers);
    for (auto& n : calls) EXPECT_EQ(n.load(), 1);
}

TEST_F(AsyncClientTest, ACallbackThatIssuesTheNextOperationDoesNotDeadlock) {
    // The callback runs on the only thread that carries out its follow-up (the loop thread).
    auto c = async_client();
    const auto r = resource("async:chain");
    std::promise<int> finished;
    std::atomic<int> cycles{0};
    std::atomic<std::uint64_t> last_fence{0};
    std::function<void()> cycle = [&] {
        c.try_acquire(r, {.lease = 10s}, [&](Result<Acquisition> got) {
            if (!got || !got->acquired()) return finished.set_value(-1);
            if (got->lease->fence.value() <= last_fence.exchange(got->lease->fence.value()))
                return finished.set_value(-3);  // fences must keep rising
            c.release(r, got->lease->owner, [&](Result<ReleaseStatus> s) {
                if (!s || *s != ReleaseStatus::released) return finished.set_value(-2);
                if (cycles.fetch_add(1) + 1 == 50) return finished.set_value(50);
                cycle();
            });
        });
    };
    cycle();
    EXPECT_EQ(finished.get_future().get(), 50);
    auto info = c.sync().inspect(r);
    ASSERT_TRUE(info);
    EXPECT_FALSE(info->holder);
    EXPECT_EQ(info->last_fence.value(), last_fence.load());
}

// What one operation's callback saw, written once on the loop thread and read after the
// client is gone (its destructor returns after every callback returned).
struct Seen {
    std::atomic<int> calls{0};
    bool cancelled = false;
    std::optional<std::string> owner;  // the lease the caller was told of
};

TEST_F(AsyncClientTest, DestructionCompletesEveryOperationInFlightOnceAndLeavesNoLeaseBehind) {
    auto sync = client();
    const auto busy = resource("async:busy");
    auto blocker = sync.try_acquire(busy, {.lease = 60s});
    ASSERT_TRUE(blocker && blocker->acquired());

    constexpr int in_flight = 30;
    std::vector<Seen> seen(2 + in_flight);
    std::atomic<int> issued_late{0}, late_cancelled{0};
    auto record = [&](std::size_t i) {
        return [&, i](auto result) {
            seen[i].cancelled = !result && result.error() == std::errc::operation_canceled;
            if constexpr (std::is_same_v<decltype(result), Result<Acquisition>>)
                if (result && result->acquired()) seen[i].owner = result->lease->owner.str();
            seen[i].calls.fetch_add(1);
        };
    };
    {
        auto c = async_client();
        const long before = script_calls();
        // The wait's callback issues one more operation while the client is being destroyed.
        c.acquire(busy, {.lease = 10s, .wait = 60s}, [&, first = record(0)](Result<Acquisition> r) mutable {
            first(std::move(r));
            ++issued_late;
            c.try_acquire(resource("async:late"), {.lease = 10s}, [&](Result<Acquisition> late) {
                if (!late && late.error() == std::errc::operation_canceled) ++late_cancelled;
            });
        });
        c.hold(busy, {.lease = 10s, .wait = 60s}, {}, record(1));
        ASSERT_TRUE(eventually([&] { return script_calls() >= before + 2; })) << "both waits under way";
        for (int i = 0; i < in_flight; ++i)
            c.try_acquire(resource("async:inflight:" + std::to_string(i)), {.lease = 10s}, record(2 + i));
    }  // destroyed with two waits sleeping and thirty attempts sent or about to be
    for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i].calls.load(), 1) << "operation " << i;
    EXPECT_TRUE(seen[0].cancelled);
    EXPECT_TRUE(seen[1].cancelled);
    EXPECT_EQ(issued_late.load(), 1);
    EXPECT_EQ(late_cancelled.load(), 1);
    // Each attempt either told its caller of its lease, or left no lease behind.
    int told = 0;
    for (int i = 0; i < in_flight; ++i) {
        auto info = sync.inspect(resource("async:inflight:" + std::to_string(i)));
        ASSERT_TRUE(info);
        const auto& s = seen[static_cast<std::size_t>(2 + i)];
        if (s.owner) {
            ++told;
            ASSERT_TRUE(info->holder) << i;
            EXPECT_EQ(info->holder->owner, *s.owner) << i;
        } else {
            EXPECT_TRUE(s.cancelled) << i;
            EXPECT_FALSE(info->holder) << i << ": a lease given back";
        }
    }
    std::cout << "attempts told of their lease before destruction: " << told << " of " << in_flight << "\n";
    auto info = sync.inspect(resource("async:late"));
    ASSERT_TRUE(info);
    EXPECT_EQ(info->last_fence.value(), 0u) << "an operation issued during destruction never reached Redis";
    info = sync.inspect(busy);
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->holder->owner, blocker->lease->owner.str());
}

// Acquisitions of one async client taking turns: each release grants the next waiter its whole
// lease and says so in its reply, so the waiter owns the lock without a message or an attempt of
// its own, even with a minute of backoff.
TEST_F(AsyncClientTest, AReleaseHandsTheLockToTheClientsNextWaiterByItsReply) {
    auto c = async_client();
    const auto r = resource("async:turns");
    const BackoffPolicy sleepy{.base = 60s, .max = 60s};
    auto [first_done, first] = promised<Acquisition>();
    c.acquire(r, {.lease = 30s, .wait = 60s, .backoff = sleepy}, std::move(first_done));
    auto held = first.get();
    ASSERT_TRUE(held && held->acquired());
    auto [second_done, second] = promised<Acquisition>();
    c.acquire(r, {.lease = 30s, .wait = 60s, .backoff = sleepy}, std::move(second_done));
    // Its refused attempt left its place with grant arguments for this client's releases.
    ASSERT_TRUE(eventually([&] { return redis->cli({"HLEN", "handoff:{async:turns}"}) == "1"; }));
    redis->cli({"CONFIG", "RESETSTAT"});
    auto [release_done, released] = promised<ReleaseStatus>();
    c.release(r, held->lease->owner, std::move(release_done));
    ASSERT_EQ(released.get().value(), ReleaseStatus::released);
    ASSERT_EQ(second.wait_for(30s), std::future_status::ready) << "the grant did not reach the waiter";
    auto got = second.get();
    ASSERT_TRUE(got && got->acquired());
    EXPECT_EQ(script_calls(), 1) << "the waiter confirmed or retried instead of taking the grant";
    EXPECT_EQ(redis->cli({"INFO", "commandstats"}).find("cmdstat_spublish"), std::string::npos);
    EXPECT_GT(got->lease->fence, held->lease->fence);
    EXPECT_GT(got->lease->ttl, 29s);
    auto info = c.sync().inspect(r);
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->holder->owner, got->lease->owner.str());
    auto [last_done, last] = promised<ReleaseStatus>();
    c.release(r, got->lease->owner, std::move(last_done));
    EXPECT_EQ(last.get().value(), ReleaseStatus::released);
    EXPECT_EQ(redis->cli({"EXISTS", "handoff:{async:turns}", "sleepers:{async:turns}"}), "0");
}

// A waiter that joins while the lock is this client's waits for the release to name it its
// successor: it takes no place in Redis's line and makes no attempt, and the release grants it
// the lock in the same script (docs/DESIGN.md, "Successors").
TEST_F(AsyncClientTest, AReleaseNamesTheNextWaiterItsSuccessorWhichNeverAttempts) {
    auto c = async_client();
    const auto r = resource("async:successor");
    const AcquireOptions waiting{.lease = 30s, .wait = 60s, .backoff = {.base = 60s, .max = 60s}};
    // A holds, B waits in Redis's line; C, arriving behind B, waits for a succession.
    auto [held, b] = held_with_one_in_line(c, r, waiting);
    ASSERT_TRUE(held.acquired());
    const long before_c = script_calls();
    auto c_result = start_acquire(c, r, waiting);
    // A is released: B, first in Redis's line, gets it; then B is released, naming C.
    ASSERT_EQ(release_now(c, r, held.lease->owner).value(), ReleaseStatus::released);
    ASSERT_EQ(b.wait_for(30s), std::future_status::ready);
    auto got_b = b.get();
    ASSERT_TRUE(got_b && got_b->acquired());
    ASSERT_EQ(release_now(c, r, got_b->lease->owner).value(), ReleaseStatus::released);
    ASSERT_EQ(c_result.wait_for(30s), std::future_status::ready) << "the succession did not reach C";
    auto got_c = c_result.get();
    ASSERT_TRUE(got_c && got_c->acquired());
    EXPECT_EQ(got_c->attempts, 0u) << "the successor attempted";
    EXPECT_GT(got_c->lease->fence, got_b->lease->fence);
    EXPECT_GT(got_c->lease->ttl, 29s);
    // Since C began: two releases (A's, B's), nothing of C's own.
    EXPECT_EQ(script_calls() - before_c, 2);
    auto info = c.sync().inspect(r);
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->holder->owner, got_c->lease->owner.str());
    EXPECT_EQ(release_now(c, r, got_c->lease->owner).value(), ReleaseStatus::released);
    EXPECT_EQ(
        redis->cli({"EXISTS", "lock:{async:successor}", "sleepers:{async:successor}", "handoff:{async:successor}"}),
        "0");
}

// A waiter for a succession that gives up before any release names it is never handed the lock.
TEST_F(AsyncClientTest, AWaiterForASuccessionThatGivesUpIsNeverHandedTheLock) {
    auto c = async_client();
    const auto r = resource("async:impatient");
    const AcquireOptions waiting{.lease = 30s, .wait = 60s, .backoff = {.base = 60s, .max = 60s}};
    auto [held, b] = held_with_one_in_line(c, r, waiting);
    ASSERT_TRUE(held.acquired());
    // C has a 300 ms deadline and joins behind B (the line stands, so it joins first).
    auto gave_up = start_acquire(c, r, {.lease = 30s, .wait = 300ms, .backoff = {.base = 60s, .max = 60s}}).get();
    ASSERT_TRUE(gave_up);
    EXPECT_FALSE(gave_up->acquired());
    // B (in Redis's line) is served by A's release; B's release then names nobody.
    ASSERT_TRUE(release_now(c, r, held.lease->owner));
    auto got_b = b.get();
    ASSERT_TRUE(got_b && got_b->acquired());
    ASSERT_TRUE(release_now(c, r, got_b->lease->owner));
    EXPECT_EQ(redis->cli({"EXISTS", "lock:{async:impatient}"}), "0") << "a lease was handed to a waiter that left";
}

// A lock held by another client: its release only publishes a message, which the loop does not
// hear, so the async waiter polls with its backoff and still gets the lock.
TEST_F(AsyncClientTest, AWaiterOnAnotherClientsLeasePollsAndGetsTheLock) {
    auto other = client();
    const auto r = resource("async:foreign");
    auto held = other.try_acquire(r, {.lease = 60s});
    ASSERT_TRUE(held && held->acquired());
    auto c = async_client();
    auto [done, result] = promised<Acquisition>();
    c.acquire(r, {.lease = 10s, .wait = 60s, .backoff = {.base = 20ms, .max = 200ms}}, std::move(done));
    ASSERT_TRUE(eventually([&] { return script_calls() >= 3; })) << "the waiter is not polling";
    ASSERT_TRUE(other.release(r, held->lease->owner));
    ASSERT_EQ(result.wait_for(30s), std::future_status::ready);
    auto got = result.get();
    ASSERT_TRUE(got && got->acquired());
    EXPECT_GT(got->lease->fence, held->lease->fence);
}

TEST_F(AsyncClientTest, CallbacksRunOnOneLoopThreadAndOneConnectionCarriesEveryLocker) {
    auto c = async_client();
    const long clients_before = connected_clients();
    constexpr int lockers = 50;
    std::mutex m;
    std::set<std::thread::id> threads;
    std::latch done(lockers);
    for (int i = 0; i < lockers; ++i) {
        const auto r = resource("async:thread:" + std::to_string(i));
        c.try_acquire(r, {.lease = 10s}, [&, r](Result<Acquisition> got) {
            {
                std::lock_guard lock(m);
                threads.insert(std::this_thread::get_id());
            }
            if (!got || !got->acquired()) return done.count_down();
            c.release(r, got->lease->owner, [&](Result<ReleaseStatus>) {
                {
                    std::lock_guard lock(m);
                    threads.insert(std::this_thread::get_id());
                }
                done.count_down();
            });
        });
    }
    done.wait();
    EXPECT_EQ(threads.size(), 1u);
    EXPECT_FALSE(threads.contains(std::this_thread::get_id()));
    EXPECT_EQ(connected_clients() - clients_before, 1) << "one connection for every locker";
}

TEST_F(AsyncClientTest, AnAttemptAfterTheScriptCacheWasFlushedLoadsTheScriptAgain) {
    auto c = async_client();
    const auto r = resource("async:noscript");
    auto lease = try_acquire_now(c, r);
    ASSERT_TRUE(lease && lease->acquired());
    redis->cli({"SCRIPT", "FLUSH"});
    auto [released, release] = promised<ReleaseStatus>();
    c.release(r, lease->lease->owner, std::move(released));
    EXPECT_EQ(release.get(), ReleaseStatus::released);
    auto next = try_acquire_now(c, r);
    ASSERT_TRUE(next && next->acquired());
    EXPECT_GT(next->lease->fence, lease->lease->fence);
}

TEST_F(AsyncClientTest, AWaitWithRedisDownFailsClosed) {
    const auto r = resource("async:down");
    auto c = AsyncLockClient::create(
        {.endpoint = *parse_redis_url("redis://127.0.0.1:1"), .connect_timeout = 200ms, .command_timeout = 500ms});
    ASSERT_TRUE(c);
    auto [waited, result] = promised<Acquisition>();
    c->acquire(r, {.lease = 10s, .wait = 1s}, std::move(waited));
    auto got = result.get();
    ASSERT_FALSE(got);
    EXPECT_EQ(classify(got.error()), failure_kind::retryable) << got.error().message();
}

TEST_F(AsyncClientTest, BadOptionsThrowBeforeAnythingIsQueued) {
    auto c = async_client();
    const auto r = resource("async:bad");
    std::atomic<int> calls{0};
    EXPECT_THROW(c.try_acquire(r, {.lease = 0ms}, [&](auto) { ++calls; }), std::invalid_argument);
    EXPECT_THROW(c.renew(r, OwnerToken::generate(), -1ms, [&](auto) { ++calls; }), std::invalid_argument);
    EXPECT_FALSE(AsyncLockClient::create({}, {.runners = 0}).has_value());
    auto info = c.sync().inspect(r);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->last_fence.value(), 0u);
    EXPECT_EQ(calls.load(), 0);
}

}  // namespace
}  // namespace fencelock::test_support

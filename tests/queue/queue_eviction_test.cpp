// The queue's blocking connections check the eviction policy like the lock's: an evicting
// Redis (queued jobs and the dedup hash vanished under allkeys-lru) is refused before the
// first command, and nothing is enqueued.
#include "queue_fixture.hpp"

namespace fencelock::test_support {
namespace {

class QueueEvictionTest : public QueueTest {};

TEST_P(QueueEvictionTest, AnEvictingRedisIsRefusedAndNothingIsEnqueued) {
    redis->cli({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"});
    auto evicting = JobQueue::create(queue_options());
    ASSERT_TRUE(evicting);
    const std::string before = redis->snapshot();
    auto r = evicting->enqueue(EnqueueRequest{.resource = ResourceName::make("r").value(), .idempotency_key = "k"});
    ASSERT_FALSE(r) << "enqueued job " << r->id << " on a server that may evict it";
    EXPECT_EQ(&r.error().category(), &eviction_category());
    EXPECT_NE(r.error().message().find("allkeys-lru"), std::string::npos) << r.error().message();
    EXPECT_EQ(redis->snapshot(), before);

    QueueOptions opted_out = queue_options();
    opted_out.endpoint.allow_eviction = true;
    auto allowed = JobQueue::create(opted_out);
    ASSERT_TRUE(allowed);
    EXPECT_TRUE(allowed->enqueue(EnqueueRequest{.resource = ResourceName::make("r").value(), .idempotency_key = "k"}));
}

// Enqueue talks to Redis only; one backend is enough.
INSTANTIATE_TEST_SUITE_P(Redis, QueueEvictionTest, ::testing::Values(Backend::sqlite), backend_name);

}  // namespace
}  // namespace fencelock::test_support

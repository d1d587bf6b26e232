// JobQueue::enqueue (and enqueue_batch, and fencelock::enqueue) refuses a resource name or idempotency key that no
// store can hold (store text: valid UTF-8 without NUL) before anything reaches Redis. Regression: such jobs were
// enqueued and then either dead-lettered (PostgreSQL refused the name) or, with a NUL, ran
// against another job's key (`k\0a` and `k\0b` were one key: the second effect never happened).
#include "queue_fixture.hpp"

namespace fencelock::test_support {
namespace {

class EnqueueTextTest : public QueueTest {};

TEST_P(EnqueueTextTest, ResourceOrKeyThatIsNotStoreTextIsRefusedAndNothingIsEnqueued) {
    enqueue("r", "k");
    const std::string stream = "queue:{" + queue_name + "}:stream";
    ASSERT_EQ(redis->cli({"XLEN", stream}), "1");
    const std::string before = redis->snapshot();
    const std::vector<std::pair<std::string, std::string>> cases = {
        {std::string("r\0x", 3), "k2"},
        {"r", std::string("k\0a", 3)},
        {"r\xff", "k3"},
        {"r", "k\xc0\x80"},
        {"r\xed\xa0\x80", "k4"},
        {"r", "k\xe2\x82"},
    };
    for (const auto& [resource, key] : cases) {
        auto r =
            queue->enqueue(EnqueueRequest{.resource = ResourceName::make(resource).value(), .idempotency_key = key});
        ASSERT_FALSE(r) << "enqueued job " << r->id;
        EXPECT_EQ(r.error(), store_errc::invalid_input) << r.error().message();
    }
    EXPECT_EQ(redis->cli({"XLEN", stream}), "1");
    EXPECT_EQ(redis->snapshot(), before);
    EXPECT_EQ(stats().counter("enqueued"), 1u);
}

TEST_P(EnqueueTextTest, ABatchWithOneInvalidJobEnqueuesNone) {
    enqueue("r", "k");
    const std::string before = redis->snapshot();
    const std::vector<EnqueueRequest> batch{
        {.resource = ResourceName::make("r").value(), .idempotency_key = "fine"},
        {.resource = ResourceName::make("r").value(), .idempotency_key = std::string("k\0a", 3)}};
    auto r = queue->enqueue_batch(batch);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), store_errc::invalid_input);
    EXPECT_EQ(redis->snapshot(), before);
}

TEST_P(EnqueueTextTest, BatchAndOneCallEnqueueDeduplicateLikeEnqueue) {
    const auto resource = ResourceName::make("r").value();
    auto r = queue->enqueue_batch(std::vector<EnqueueRequest>{{.resource = resource, .idempotency_key = "a"},
                                                              {.resource = resource, .idempotency_key = "b"},
                                                              {.resource = resource, .idempotency_key = "a"}});
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_EQ(r->size(), 3u);
    EXPECT_FALSE((*r)[0].duplicate);
    EXPECT_FALSE((*r)[1].duplicate);
    EXPECT_TRUE((*r)[2].duplicate);
    EXPECT_EQ((*r)[2].id, (*r)[0].id);
    // No JobQueue kept: the free function connects for one job.
    auto one = fencelock::enqueue(queue_options(), EnqueueRequest{.resource = resource, .idempotency_key = "b"});
    ASSERT_TRUE(one) << one.error().message();
    EXPECT_TRUE(one->duplicate);
    EXPECT_EQ(one->id, (*r)[1].id);
    auto fresh = fencelock::enqueue(queue_options(), EnqueueRequest{.resource = resource, .idempotency_key = "c"});
    ASSERT_TRUE(fresh);
    EXPECT_FALSE(fresh->duplicate);
    EXPECT_EQ(stats().ready, 3u);
    EXPECT_THROW((void)fencelock::enqueue(QueueOptions{.queue = "bad{name}"},
                                          EnqueueRequest{.resource = resource, .idempotency_key = "d"}),
                 std::invalid_argument);
}

// Enqueue talks to Redis only; one backend is enough.
INSTANTIATE_TEST_SUITE_P(Redis, EnqueueTextTest, ::testing::Values(Backend::sqlite), backend_name);

}  // namespace
}  // namespace fencelock::test_support

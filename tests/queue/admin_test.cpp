// JobQueue's operator calls against a real redis-server, where the CLI tests cannot reach:
// pages of delayed jobs that share one due time (the cursor counts the ties).
#include <set>

#include "queue_fixture.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

class QueueAdminTest : public QueueTest {};

TEST_P(QueueAdminTest, DelayedJobsWithOneDueTimeArePagedEachOnce) {
    const auto resource = ResourceName::make("r").value();
    std::vector<EnqueueRequest> requests;
    for (int i = 0; i < 5; ++i)
        requests.push_back({.resource = resource, .idempotency_key = "k" + std::to_string(i), .delay = 1h});
    auto added = queue->enqueue_batch(requests);
    ASSERT_TRUE(added) << added.error().message();
    // One due time for all five: equal scores, ordered by member only.
    redis->cli({"EVAL",
                "for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do "
                "redis.call('ZADD', KEYS[1], 4102444800000, m) end",
                "1", "queue:{" + queue_name + "}:delayed"});
    std::set<std::string> seen;
    std::vector<std::size_t> sizes;
    ListRequest request{.state = JobState::delayed, .limit = 2};
    for (int pages = 0; pages < 10; ++pages) {
        auto page = queue->list(request);
        ASSERT_TRUE(page) << page.error().message();
        sizes.push_back(page->jobs.size());
        for (const auto& j : page->jobs) {
            EXPECT_EQ(j.due_ms, 4102444800000);
            EXPECT_TRUE(seen.insert(j.job.id).second) << j.job.id << " listed twice";
        }
        if (!page->next_cursor) break;
        request.after = *page->next_cursor;
    }
    EXPECT_EQ(sizes, (std::vector<std::size_t>{2, 2, 1}));
    std::set<std::string> ids;
    for (const auto& a : *added) ids.insert(a.id);
    EXPECT_EQ(seen, ids);
    EXPECT_THROW((void)queue->list({.state = JobState::delayed, .limit = 0}), std::invalid_argument);
    EXPECT_THROW((void)queue->list({.state = JobState::delayed, .after = "1-0"}), std::invalid_argument);
    EXPECT_THROW((void)queue->purge(JobState::running), std::invalid_argument);
}

}  // namespace

// Redis only; one backend is enough.
INSTANTIATE_TEST_SUITE_P(Redis, QueueAdminTest, ::testing::Values(Backend::sqlite), backend_name);

}  // namespace fencelock::test_support

// AsyncLoop's tasks (the asynchronous client's timers): they run on the loop thread, by time,
// hurry() makes every pending one due, and the tasks left when the loop stops still run; a
// request with a completion is completed there. No
// server is needed: a loop with no request never connects.
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "fencelock/redis_url.hpp"
#include "redis/async_loop.hpp"

namespace fencelock::detail {
namespace {

using namespace std::chrono_literals;
using clock = AsyncLoop::clock;

ConnectionSettings idle_settings() { return {*parse_redis_url("redis://127.0.0.1:1"), 100ms, 100ms, nullptr}; }

TEST(AsyncLoopTasks, TasksRunOnTheLoopThreadInTheOrderOfTheirTimes) {
    AsyncLoop loop(idle_settings());
    std::mutex m;
    std::vector<int> order;
    std::promise<std::thread::id> ran_on;
    auto last = ran_on.get_future();
    auto note = [&](int n) {
        std::lock_guard lock(m);
        order.push_back(n);
    };
    // Posted out of order, hours ahead, then all made due: hurry() keeps their order by time,
    // and no reading of the clock can reorder them. A task posted by a task runs too.
    const auto base = clock::now() + 1h;
    ASSERT_TRUE(loop.post_at(base + 3h, [&] {
        note(3);
        EXPECT_TRUE(loop.on_loop_thread());
        loop.post_at(clock::time_point::min(), [&] {
            note(4);
            ran_on.set_value(std::this_thread::get_id());
        });
    }));
    ASSERT_TRUE(loop.post_at(base + 2h, [&] { note(2); }));
    ASSERT_TRUE(loop.post_at(base + 1h, [&] { note(1); }));
    loop.hurry();
    EXPECT_NE(last.get(), std::this_thread::get_id());
    EXPECT_FALSE(loop.on_loop_thread());
    std::lock_guard lock(m);
    EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
}

TEST(AsyncLoopTasks, HurryMakesEveryPendingTaskDueAtOnce) {
    AsyncLoop loop(idle_settings());
    std::promise<void> ran;
    auto done = ran.get_future();
    ASSERT_TRUE(loop.post_at(clock::now() + 24h, [&] { ran.set_value(); }));
    loop.hurry();
    done.get();  // without hurry() this would wait a day (the test's timeout fails it)
}

TEST(AsyncLoopTasks, TasksLeftWhenTheLoopStopsStillRun) {
    int ran = 0;
    {
        AsyncLoop loop(idle_settings());
        ASSERT_TRUE(loop.post_at(clock::now() + 24h, [&] { ++ran; }));
    }  // the destructor joins the loop thread after running what is left
    EXPECT_EQ(ran, 1);
}

TEST(AsyncLoopTasks, ARequestWithACompletionIsCompletedOnTheLoopThread) {
    AsyncLoop loop(idle_settings());  // port 1: the connect is refused
    auto request = std::make_shared<AsyncRequest>();
    append_resp(request->wire, std::vector<std::string_view>{"PING"});
    request->ends.push_back(request->wire.size());
    std::promise<std::pair<std::error_code, bool>> completed;
    auto result = completed.get_future();
    request->on_done = [&](std::error_code ec, std::vector<Reply>&) {
        completed.set_value({ec, loop.on_loop_thread()});
    };
    loop.submit(request);
    const auto [ec, on_loop] = result.get();
    EXPECT_TRUE(ec) << "no server on port 1";
    EXPECT_TRUE(on_loop);
    EXPECT_EQ(request->done.load(), 0) << "a completion replaces the waiter's wake-up";
}

}  // namespace
}  // namespace fencelock::detail

// The runner threads of AsyncLockClient: jobs run once each, off the posting thread, and
// close() completes every job, queued or posted while closing, exactly once.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "lock/async_runners.hpp"

namespace fencelock::detail {
namespace {

// Blocks a runner until the test lets it go.
struct Gate {
    std::promise<void> open;
    std::shared_future<void> opened = open.get_future().share();
};

TEST(AsyncRunners, RunsEveryJobOnceOnARunnerThread) {
    std::vector<std::atomic<int>> runs(100);
    std::atomic<int> on_poster{0}, left{100};
    std::promise<void> all_done;
    const auto poster = std::this_thread::get_id();
    AsyncRunners runners(3);
    for (std::size_t i = 0; i < runs.size(); ++i)
        runners.post([&, i](bool closing) {
            EXPECT_FALSE(closing);
            runs[i].fetch_add(1);
            if (std::this_thread::get_id() == poster) on_poster.fetch_add(1);
            if (left.fetch_sub(1) == 1) all_done.set_value();
        });
    all_done.get_future().wait();
    runners.close();
    for (auto& r : runs) EXPECT_EQ(r.load(), 1);
    EXPECT_EQ(on_poster.load(), 0);
}

TEST(AsyncRunners, CloseHandsEveryQueuedJobClosingOnce) {
    Gate gate;
    std::promise<void> busy;
    std::atomic<int> first_closing{-1};
    std::vector<std::atomic<int>> cancelled(20), worked(20);
    AsyncRunners runners(1);
    runners.post([&](bool closing) {
        first_closing = closing ? 1 : 0;
        busy.set_value();
        gate.opened.wait();
    });
    busy.get_future().wait();  // the only runner is taken: everything below stays queued
    for (std::size_t i = 0; i < cancelled.size(); ++i)
        runners.post([&, i](bool closing) { (closing ? cancelled[i] : worked[i]).fetch_add(1); });
    std::jthread closer([&] { runners.close(); });
    while (!runners.closing()) std::this_thread::yield();
    gate.open.set_value();
    closer.join();
    EXPECT_EQ(first_closing.load(), 0);
    for (std::size_t i = 0; i < cancelled.size(); ++i) {
        EXPECT_EQ(cancelled[i].load(), 1) << i;
        EXPECT_EQ(worked[i].load(), 0) << i;
    }
}

TEST(AsyncRunners, AJobPostedByAJobWhileClosingIsDrainedNotLost) {
    Gate gate;
    std::promise<void> busy;
    std::atomic<int> follow_up_closing{0}, follow_up_runs{0};
    AsyncRunners runners(2);
    runners.post([&](bool) {
        busy.set_value();
        gate.opened.wait();
        // Posted after close() began, from a runner: it must still run, with closing set.
        runners.post([&](bool closing) {
            follow_up_runs.fetch_add(1);
            if (closing) follow_up_closing.fetch_add(1);
        });
    });
    busy.get_future().wait();
    std::jthread closer([&] { runners.close(); });
    while (!runners.closing()) std::this_thread::yield();
    gate.open.set_value();
    closer.join();
    EXPECT_EQ(follow_up_runs.load(), 1);
    EXPECT_EQ(follow_up_closing.load(), 1);
}

TEST(AsyncRunners, APostAfterCloseRunsAtOnceWithClosing) {
    AsyncRunners runners(1);
    runners.close();
    int runs = 0;
    bool was_closing = false;
    runners.post([&](bool closing) {
        ++runs;
        was_closing = closing;
    });
    EXPECT_EQ(runs, 1);
    EXPECT_TRUE(was_closing);
}

}  // namespace
}  // namespace fencelock::detail

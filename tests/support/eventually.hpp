#pragma once
// Waits for a condition that another process or the server will make true (a lease expiring
// in Redis, a child writing a file). A condition with a deadline, not a fixed sleep: the test
// continues as soon as it holds and fails with a clear message if it never does.
#include <chrono>
#include <thread>

namespace fencelock::test_support {

template <typename Predicate>
bool eventually(Predicate&& done, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
}

}  // namespace fencelock::test_support

#pragma once
// An independent record of who held a resource when, kept by the holders themselves (not by
// Redis), and the check that no two holders overlapped and fences only increased.
#include <time.h>

#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <vector>

namespace fencelock::test_support {

/// CLOCK_MONOTONIC in ns: one clock shared by all processes of this machine.
inline std::int64_t monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// One critical section: recorded after acquire returned and before release was sent, so it
/// lies inside the real holding interval.
struct Hold {
    std::string resource;
    std::uint64_t fence = 0;
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    std::string holder;
};

inline std::vector<Hold> read_holds(std::istream& in, const std::string& holder) {
    std::vector<Hold> holds;
    Hold h;
    while (in >> h.resource >> h.fence >> h.start_ns >> h.end_ns) {
        h.holder = holder;
        holds.push_back(h);
    }
    return holds;
}

/// Violations of mutual exclusion and fence order, one line each (empty: none).
std::vector<std::string> check_holds(std::vector<Hold> holds);

}  // namespace fencelock::test_support

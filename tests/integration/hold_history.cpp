#include "integration/hold_history.hpp"

#include <algorithm>

namespace fencelock::test_support {

std::vector<std::string> check_holds(std::vector<Hold> holds) {
    std::vector<std::string> violations;
    std::map<std::string, std::vector<Hold>> by_resource;
    for (auto& h : holds) by_resource[h.resource].push_back(h);
    for (auto& [resource, list] : by_resource) {
        std::sort(list.begin(), list.end(), [](const Hold& a, const Hold& b) { return a.start_ns < b.start_ns; });
        for (std::size_t i = 1; i < list.size(); ++i) {
            const Hold& prev = list[i - 1];
            const Hold& next = list[i];
            if (next.start_ns < prev.end_ns)
                violations.push_back(resource + ": " + next.holder + " (fence " + std::to_string(next.fence) +
                                     ") started before " + prev.holder + " (fence " + std::to_string(prev.fence) +
                                     ") ended");
            if (next.fence <= prev.fence)
                violations.push_back(resource + ": fence " + std::to_string(next.fence) + " after " +
                                     std::to_string(prev.fence));
        }
    }
    return violations;
}

}  // namespace fencelock::test_support

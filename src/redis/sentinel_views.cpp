#include "redis/sentinel_views.hpp"

#include <algorithm>

namespace fencelock::detail {

MasterView youngest_agreeing_view(const std::vector<std::optional<SentinelAnswer>>& answers,
                                  const ServerAddress& master, std::size_t configured) noexcept {
    std::size_t agreeing = 0;
    MasterView youngest;
    for (const auto& answer : answers) {
        if (!answer || answer->master != master || !answer->view) continue;
        const MasterView& v = *answer->view;
        youngest.age = agreeing == 0 ? v.age : std::min(youngest.age, v.age);
        youngest.epoch = std::max(youngest.epoch, v.epoch);
        ++agreeing;
    }
    const bool majority = agreeing >= sentinel_majority(configured);
    if (!majority) youngest.age = std::chrono::milliseconds::zero();
    youngest.first_term = majority && youngest.epoch == 0;
    return youngest;
}

}  // namespace fencelock::detail

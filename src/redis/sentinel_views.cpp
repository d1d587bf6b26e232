#include "redis/sentinel_views.hpp"

#include <algorithm>

#include "redis/info_text.hpp"

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

bool started_fresh(std::string_view replication, std::string_view persistence) noexcept {
    const auto is = [](std::string_view info, std::string_view name, std::string_view value) {
        return info_field(info, name) == value;
    };
    return is(replication, "role", "master") && is(replication, "second_repl_offset", "-1") &&
           is(persistence, "loading", "0") && is(persistence, "async_loading", "0") &&
           is(persistence, "rdb_last_load_keys_loaded", "0") && is(persistence, "aof_enabled", "0");
}

}  // namespace fencelock::detail

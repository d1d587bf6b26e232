#pragma once
// Records the losses a kept lease's on_lost callback reports (it runs on the keeper's thread).
#include <mutex>
#include <optional>
#include <vector>

#include "fencelock/keeper.hpp"

namespace fencelock::test_support {

struct LossRecorder {
    std::mutex m;
    std::vector<LeaseLoss> losses;
    KeepOptions options() {
        KeepOptions k;
        k.on_lost = [this](const LeaseLoss& loss) {
            std::lock_guard lock(m);
            losses.push_back(loss);
        };
        return k;
    }
    std::optional<LossReason> reason() {
        std::lock_guard lock(m);
        if (losses.empty()) return std::nullopt;
        return losses.front().reason;
    }
};

}  // namespace fencelock::test_support

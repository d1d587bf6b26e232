#include "lease/safe_until.hpp"

namespace fencelock::detail {

steady_time safe_until(steady_time sent, std::chrono::milliseconds ttl, double drift_factor) {
    auto trusted = std::chrono::duration_cast<std::chrono::microseconds>(ttl) * (1.0 - drift_factor);
    return sent + std::chrono::duration_cast<steady_time::duration>(trusted);
}

}  // namespace fencelock::detail

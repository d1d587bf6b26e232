#include "fencelock/version.hpp"

namespace fencelock {

std::string_view version() noexcept { return FENCELOCK_VERSION; }
std::string_view revision() noexcept { return FENCELOCK_REVISION; }

}  // namespace fencelock

#pragma once
/// The library's version (CMake's project version, SemVer) and the commit it was built from.
#include <string_view>

namespace fencelock {

/// "0.2.0": the release this library is (CHANGELOG.md).
std::string_view version() noexcept;
/// The git commit it was configured from (12 hex digits), or "unknown".
std::string_view revision() noexcept;

}  // namespace fencelock

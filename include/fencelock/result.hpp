#pragma once
/// The result of every call that can fail: the value, or the error code that says why (see
/// fencelock/error.hpp for fencelock's own codes).

#include <expected>
#include <system_error>

#include "fencelock/error.hpp"

namespace fencelock {

template <typename T>
using Result = std::expected<T, std::error_code>;

}  // namespace fencelock

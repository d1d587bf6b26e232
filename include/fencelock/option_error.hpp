#pragma once
/// What option validation returns for a value it refuses.

#include <string>

namespace fencelock {

/// A field that failed validation and why.
struct OptionError {
    std::string field;
    std::string message;
};

}  // namespace fencelock

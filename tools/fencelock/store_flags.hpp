#pragma once
// Flags whose text ends up in a fenced store (store and queue commands): checked against the
// store-text rule before anything is opened, so the refusal is exit 2 and nothing changes.
#include <string_view>

#include "cli.hpp"
#include "fencelock/store_text.hpp"

namespace fencelock::cli {

/// Throws InputError{flag} unless `text` is store text (valid UTF-8 without NUL).
inline void require_store_text(std::string_view flag, std::string_view text) {
    if (auto ok = validate_store_text(text); !ok) throw InputError{std::string(flag), ok.error().message};
}

}  // namespace fencelock::cli

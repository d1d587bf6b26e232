#pragma once
// A Lua script as the transport runs it: embedded at build time (cmake/EmbedScripts.cmake) and
// called by EVALSHA with its SHA1. Each layer that owns scripts declares its own set.
#include <string_view>

namespace fencelock::detail {

struct ScriptSource {
    std::string_view name;
    std::string_view body;
    /// Lowercase hex SHA1 of body, as EVALSHA expects.
    std::string_view sha1;
};

}  // namespace fencelock::detail

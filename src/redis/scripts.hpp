#pragma once
// The Lua scripts of the protocol, embedded at build time (cmake/EmbedScripts.cmake).
#include <string_view>

namespace fencelock::detail {

struct ScriptSource {
    std::string_view name;
    std::string_view body;
    /// Lowercase hex SHA1 of body, as EVALSHA expects.
    std::string_view sha1;
};

namespace scripts {
extern const ScriptSource acquire;
extern const ScriptSource renew;
extern const ScriptSource release;
extern const ScriptSource inspect;
extern const ScriptSource force_release;
extern const ScriptSource leave_line;
}  // namespace scripts

}  // namespace fencelock::detail

#pragma once
// The lock protocol's Lua scripts (src/coordinator/redis/scripts/*.lua), embedded at build time
// (cmake/EmbedScripts.cmake). Each file's header comment gives its KEYS, ARGV and replies.
#include "redis/script_source.hpp"

namespace fencelock::detail::scripts {
extern const ScriptSource acquire;
extern const ScriptSource renew;
extern const ScriptSource release;
extern const ScriptSource inspect;
extern const ScriptSource force_release;
extern const ScriptSource leave_line;
extern const ScriptSource clock_probe;
}  // namespace fencelock::detail::scripts

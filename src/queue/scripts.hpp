#pragma once
// The queue's Lua scripts (src/queue/scripts/*.lua), embedded at build time by
// cmake/EmbedScripts.cmake. Each file's header comment gives its KEYS, ARGV and reply.
#include "redis/script_source.hpp"

namespace fencelock::detail::queue_scripts {
extern const ScriptSource complete;
extern const ScriptSource dead;
extern const ScriptSource enqueue;
extern const ScriptSource find;
extern const ScriptSource heartbeat;
extern const ScriptSource leave;
extern const ScriptSource list;
extern const ScriptSource promote;
extern const ScriptSource purge;
extern const ScriptSource reclaim;
extern const ScriptSource requeue;
extern const ScriptSource retry_dead;
extern const ScriptSource stats;
}  // namespace fencelock::detail::queue_scripts

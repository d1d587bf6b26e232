#pragma once
// Where the examples find their servers: FENCELOCK_REDIS_URL and FENCELOCK_DB_URL, with the
// defaults a developer's laptop has. The test suite runs every example against its own Redis
// and a fresh SQLite file (tests/consumer).
#include <cstdio>
#include <cstdlib>
#include <string>

namespace example {

inline std::string env_or(const char* name, const char* fallback) {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' ? value : fallback;
}

inline std::string redis_url() { return env_or("FENCELOCK_REDIS_URL", "redis://127.0.0.1:6379"); }
inline std::string db_url() { return env_or("FENCELOCK_DB_URL", "sqlite:///tmp/fencelock-example.db"); }

/// Prints why the example stopped and returns its exit code.
inline int fail(const std::string& why) {
    std::fprintf(stderr, "example failed: %s\n", why.c_str());
    return 1;
}

}  // namespace example

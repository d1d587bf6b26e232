#pragma once
// Spawning and capturing helpers shared by the throwaway servers (internal to local_servers).
#include <sys/types.h>

#include <string>
#include <vector>

namespace fencelock::local::detail {

/// posix_spawnp(argv); -1 when it could not start.
/// Starts argv[0] (looked up in PATH) with this process's environment plus `env` ("NAME=value").
pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});

/// Runs argv through the shell, returns stdout+stderr with trailing newlines removed.
std::string capture(const std::vector<std::string>& argv);

/// A fresh private directory under /tmp named after `what`.
std::string make_temp_dir(const std::string& what);

}  // namespace fencelock::local::detail

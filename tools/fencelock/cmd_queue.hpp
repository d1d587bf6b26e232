#pragma once
// Shared by the queue commands and the worker command.
#include <string>

#include "cli.hpp"
#include "fencelock/queue.hpp"

namespace fencelock::cli {

/// Validates --queue and the global options into QueueOptions (no I/O).
QueueOptions queue_options(const Globals& g, const std::string& queue);

}  // namespace fencelock::cli

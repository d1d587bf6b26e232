// run: placeholder until the lock-wrapped command lands (being written now).
#include "cli.hpp"

namespace fencelock::cli {
void register_run_command(Program&) {}
}  // namespace fencelock::cli

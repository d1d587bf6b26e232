#include "replica_flags.hpp"

#include <charconv>

namespace fencelock::cli {

void add_replica_flags(CLI::App& command, ReplicaFlags& flags) {
    command.add_option("--replicas", flags.replicas,
                       "replicas that must acknowledge the lease (WAIT) before it counts; fewer: released, "
                       "exit 4 not_replicated (default 0: off)");
    command.add_option("--replica-timeout", flags.timeout,
                       "how long to wait for the replicas' acknowledgement (default 200ms, at most half of --timeout)");
}

void apply_replica_flags(const CLI::App& command, const ReplicaFlags& flags, const Globals& globals,
                         AcquireOptions& options) {
    if (command.count("--replicas")) {
        unsigned n = 0;
        const char* end = flags.replicas.data() + flags.replicas.size();
        const auto [at, ec] = std::from_chars(flags.replicas.data(), end, n);
        if (flags.replicas.empty() || ec != std::errc{} || at != end)
            throw InputError{"--replicas", "must be a whole number from 0 to 100"};
        options.replicas = n;
    }
    if (command.count("--replica-timeout")) {
        if (options.replicas == 0) throw InputError{"--replica-timeout", "needs --replicas 1 or more"};
        options.replica_timeout = parse_duration_flag("--replica-timeout", flags.timeout);
    }
    const auto command_timeout = parse_duration_flag("--timeout", globals.timeout);
    if (auto ok = options.validate_for(command_timeout); !ok) {
        const std::string& field = ok.error().field;
        if (field == "replicas") throw InputError{"--replicas", ok.error().message};
        if (field == "replica_timeout") throw InputError{"--replica-timeout", ok.error().message};
        throw InputError{field, ok.error().message};
    }
}

}  // namespace fencelock::cli

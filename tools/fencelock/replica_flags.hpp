#pragma once
// --replicas N [--replica-timeout D] of acquire, run and worker: AcquireOptions::replicas and
// replica_timeout (replica acknowledgement by WAIT), parsed and checked before anything is sent.
#include <CLI/CLI.hpp>

#include <string>

#include "cli.hpp"

namespace fencelock::cli {

struct ReplicaFlags {
    std::string replicas;
    std::string timeout;
};

/// Registers both flags on `command`, which must outlive nothing but `flags`.
void add_replica_flags(CLI::App& command, ReplicaFlags& flags);

/// Sets options.replicas / replica_timeout from the flags given and checks the result against
/// the client's command timeout (--timeout). Bad input throws InputError naming the flag.
void apply_replica_flags(const CLI::App& command, const ReplicaFlags& flags, const Globals& globals,
                         AcquireOptions& options);

}  // namespace fencelock::cli

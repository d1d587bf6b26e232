#pragma once
// Shared by the queue commands (cmd_queue*.cpp) and the worker command.
#include <string>

#include "cli.hpp"
#include "fencelock/queue.hpp"

namespace fencelock::cli {

/// Validates --queue and the global options into QueueOptions (no I/O).
QueueOptions queue_options(const Globals& g, const std::string& queue);

/// Opens the queue (no I/O yet); an option it refuses is an InputError on its flag.
JobQueue open_queue(QueueOptions options);

/// A job's fields as the queue commands print them (flat: id, resource, key, payload, the
/// attempt counters, deliveries, last_error).
nlohmann::json job_json(const Job& job);

/// `text` when it is a job id (32 lowercase hex characters), else an InputError on `field`.
const std::string& require_job_id(const std::string& field, const std::string& text);

/// The flags of queue enqueue.
struct EnqueueArgs {
    std::string queue, resource, key, payload = "{}", delay;
    bool from_stdin = false;
};

/// queue enqueue (cmd_queue_batch.cpp): one job from the flags, or JSON lines from stdin.
int run_enqueue(const Globals& g, const EnqueueArgs& a, const CLI::App& cmd);

/// queue list / show / retry / discard / purge (cmd_queue_admin.cpp), under `queue`.
void register_queue_admin_commands(Program& p, CLI::App& queue);

}  // namespace fencelock::cli

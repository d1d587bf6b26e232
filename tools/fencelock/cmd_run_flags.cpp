// The flags of `fencelock run`: flock's where flock has one (-n, -w, -E), fencelock's own for
// the lease, and CLI11's positional handling that keeps RESOURCE before `--`.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "cli.hpp"
#include "cmd_run.hpp"

namespace fencelock::cli {

void register_run_command(Program& p) {
    auto args = std::make_shared<RunArgs>();
    auto* cmd = p.app.add_subcommand("run", "run CMD while holding the lease of RESOURCE");
    // `run --lease 1s -- sh -c X` must not lock "sh" and run "-c": RESOURCE only takes an
    // argument seen before `--`. CLI11 validates positionals as it assigns them (when
    // validate_positionals() is on) and has moved a `--` it met to remaining() by then; the first
    // verdict is kept because the validator runs again after parsing, when `--` is always there.
    auto before_mark = std::make_shared<std::optional<std::string>>();
    auto not_after_mark = [cmd, before_mark](std::string&) -> std::string {
        if (!*before_mark) {
            const auto seen = cmd->remaining();
            *before_mark = std::find(seen.begin(), seen.end(), "--") != seen.end() ? "given after --" : "";
        }
        return **before_mark;
    };
    cmd->add_option("resource", args->resource, "resource name (before --)")
        ->required()
        ->check(CLI::Validator(not_after_mark, "", "before --"));
    cmd->add_option("command", args->command, "command and its arguments, after --");
    cmd->validate_positionals();
    cmd->add_option("--lease", args->lease, "lease length, renewed while CMD runs (default 30s)");
    auto* nonblock = cmd->add_flag("-n,--nonblock", args->nonblock,
                                   "one attempt: exit 75 at once if another holds RESOURCE (flock -n)");
    cmd->add_option("-w,--wait", args->wait,
                    "give up after waiting this long, e.g. 10s (default: wait as long as it takes)")
        ->excludes(nonblock);
    cmd->add_option("-E,--conflict-exit-code", args->conflict_exit_code,
                    "exit code when RESOURCE was not acquired (default 75, EX_TEMPFAIL; flock -E)");
    // Taken as soon as it is seen, so that a parse error after it is a JSON object too.
    cmd->add_flag("--json", args->json,
                  "run's summary (last line) and errors as JSON lines on stderr (default: silent unless something "
                  "fails, errors as text)")
        ->trigger_on_parse()
        ->each([](const std::string&) { json_to_stderr(); });
    cmd->add_option("--max-hold", args->max_hold,
                    "renewals refused this long after acquisition: CMD is then stopped and run exits 76 "
                    "(default 720h, the longest allowed)");
    cmd->add_option("--grace", args->grace,
                    "CMD gets SIGTERM this long before its lease can end (renewals failing) or at a loss, and "
                    "SIGKILL when the lease can have ended at the latest (default 10s, less if the lease leaves less; "
                    "at most lease x 0.99 - lease / 2)");
    cmd->add_option("--report", args->report, "write the JSON summary to FILE too (with or without --json)");
    add_replica_flags(*cmd, args->replicas);
    add_observe_flags(*cmd, args->observe);
    cmd->footer(
        "Waits for RESOURCE as flock does. stdout is CMD's alone; run is silent on success, errors go to stderr. "
        "Exit codes: CMD's own when the lease was held throughout (128+N: killed by signal N); "
        "75 not acquired (-n, or -w ran out; -E changes it); 76 lease lost (CMD stopped); 2 invalid input; "
        "4 Redis failure.");
    // From the moment run is named, even for a parse error: stdout belongs to CMD, and without
    // --json run says nothing but its errors, as text.
    cmd->preparse_callback([](std::size_t) { json_off(); });
    cmd->callback([&p, args, cmd] { p.run = [&p, args, cmd] { return run_run(p.globals, *args, *cmd); }; });
}

}  // namespace fencelock::cli

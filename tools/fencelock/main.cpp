// fencelock: command-line entry point. Every command prints one JSON object on stdout (list
// and audit: one per record; run: on stderr); diagnostics go to stderr. Exit codes: see cli.hpp and the README.
#include <csignal>
#include <exception>
#include <iostream>

#include "cli.hpp"
#include "fencelock/version.hpp"
#include "secrets.hpp"

int main(int argc, char** argv) {
    using namespace fencelock::cli;
    // A write to a connection Redis has closed raises SIGPIPE (hiredis writes with write(2));
    // the error is handled where it is reported, so the signal must not end the process.
    caller_ignored_sigpipe = std::signal(SIGPIPE, SIG_IGN) == SIG_IGN;
    Program program;
    program.app.require_subcommand(1);
    // Global options are accepted after the subcommand too (`inspect R --redis URL`): every
    // subcommand registered below inherits fallthrough and hands options it lacks to the root.
    program.app.fallthrough();
    program.app.set_version_flag("--version", "fencelock " + std::string(fencelock::version()) + " (" + std::string(fencelock::revision()) + ")");
    program.app.add_option("--redis", program.globals.redis_url,
                           "redis://[user:password@]host:port[/db] or redis-sentinel://[user:password@]host:port[,...][/db]#master; "
                           "default $FENCELOCK_REDIS_URL, "
                           "else redis://127.0.0.1:6379")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last one given wins
    program.app.add_option("--redis-password-file", program.globals.password_file,
                           "read the Redis password from FILE's first line instead of the URL (default: "
                           "$FENCELOCK_REDIS_PASSWORD, if set); neither shows in ps or reaches a command run starts")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    program.app.add_option("--timeout", program.globals.timeout,
                           "limit for each Redis call, e.g. 500ms (default 1s)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    program.app.add_flag("--allow-eviction", program.globals.allow_eviction,
                         "use a Redis whose maxmemory-policy may evict keys (refused by default: an evicted "
                         "key can hand out a fence twice or let a second owner in)");
    register_lock_commands(program);
    register_bench_command(program);
    register_run_command(program);
    register_ops_commands(program);
#ifdef FENCELOCK_WITH_STORE
    register_store_commands(program);
    register_demo_commands(program);
#ifdef FENCELOCK_WITH_QUEUE
    register_queue_commands(program);
#endif
#endif

    try {
        program.app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return program.app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return program.app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return program.app.exit(e);
    } catch (const CLI::ParseError& e) {
        return usage_failure(program.app, e);
    }
    // The parser has copied every value: the password in a --redis URL leaves /proc/<pid>/cmdline.
    scrub_argv(argc, argv);
    try {
        return program.run();
    } catch (const InputError& e) {
        return fail(exit_invalid_input, "invalid_input", e.message, e.field);
    } catch (const std::exception& e) {
        return fail(exit_internal, "internal", e.what());
    }
}

// fencelock: command-line entry point. Every command prints one JSON object on stdout (list
// and audit: one per record; run: on stderr); diagnostics go to stderr. Exit codes: see cli.hpp and the README.
#include <csignal>
#include <exception>
#include <iostream>

#include "cli.hpp"
#include "fencelock/version.hpp"
#include "secrets.hpp"

namespace {

int run_cli(int argc, char** argv) {
    using namespace fencelock::cli;
    // A write to a connection Redis has closed raises SIGPIPE (hiredis writes with write(2));
    // the error is handled where it is reported, so the signal must not end the process.
    caller_ignored_sigpipe = std::signal(SIGPIPE, SIG_IGN) == SIG_IGN;
    Program program;
    program.app.require_subcommand(1);
    // Global options are accepted after the subcommand too (`inspect R --redis URL`): every
    // subcommand registered below inherits fallthrough and hands options it lacks to the root.
    program.app.fallthrough();
    program.app.set_version_flag("--version", "fencelock " + std::string(fencelock::version()) + " (" +
                                                  std::string(fencelock::revision()) + ")");
    program.app
        .add_option("--redis", program.globals.redis_url,
                    "redis://[user:password@]host:port[/db], "
                    "redis-sentinel://[user:password@]host:port[,...][/db][?query]#master, "
                    "redis-cluster://[user:password@]host:port[,...], unix://[user:password@]/path/redis.sock[?db=N]; "
                    "rediss://, rediss-sentinel://, rediss-cluster:// for TLS (query: tls_ca, tls_ca_dir, "
                    "tls_cert, tls_key, tls_server_name, tls_insecure=1, or the --tls-* options); "
                    "default $FENCELOCK_REDIS_URL, else redis://127.0.0.1:6379")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last one given wins
    program.app
        .add_option("--redis-password-file", program.globals.password_file,
                    "read the Redis password from FILE's first line instead of the URL (default: "
                    "$FENCELOCK_REDIS_PASSWORD, if set); neither shows in ps or reaches a command run starts")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    program.app.add_option("--timeout", program.globals.timeout, "limit for each Redis call, e.g. 500ms (default 1s)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    program.app
        .add_option("--label", program.globals.label,
                    "a label stored with each lease this process takes, shown beside its host and pid by "
                    "inspect and list, e.g. nightly-backup (default $FENCELOCK_LABEL; at most " +
                        std::to_string(max_label_bytes) + " bytes)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    program.app.add_flag("--allow-eviction", program.globals.allow_eviction,
                         "use a Redis whose maxmemory-policy may evict keys (refused by default: an evicted "
                         "key can hand out a fence twice or let a second owner in)");
    // TLS for a rediss URL, kept out of it (each also accepted in its query, in one place only).
    const struct {
        const char* flag;
        std::string* value;
        const char* help;
    } tls_options[] = {
        {"--tls-ca", &program.globals.tls_ca,
         "PEM file of the CAs to trust instead of the system's (default $FENCELOCK_TLS_CA)"},
        {"--tls-ca-dir", &program.globals.tls_ca_dir,
         "directory of hashed CA certificates to trust (default $FENCELOCK_TLS_CA_DIR)"},
        {"--tls-cert", &program.globals.tls_cert,
         "client certificate (PEM), with --tls-key (default $FENCELOCK_TLS_CERT)"},
        {"--tls-key", &program.globals.tls_key,
         "the client certificate's private key (PEM), with --tls-cert (default $FENCELOCK_TLS_KEY)"},
        {"--tls-server-name", &program.globals.tls_server_name,
         "name to send (SNI) and verify instead of the host connected to (default $FENCELOCK_TLS_SERVER_NAME)"},
    };
    for (const auto& o : tls_options)
        program.app.add_option(o.flag, *o.value, o.help)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    program.app.add_flag("--tls-insecure", program.globals.tls_insecure,
                         "do not verify the server's certificate or name (default: $FENCELOCK_TLS_INSECURE=1); "
                         "anyone on the path can then read and change the traffic");
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

}  // namespace

// Building the command line can throw too (CLI11 refuses a duplicate option name): an internal
// error, reported as one, never std::terminate.
int main(int argc, char** argv) {
    try {
        return run_cli(argc, argv);
    } catch (const std::exception& e) {
        return fencelock::cli::fail(fencelock::cli::exit_internal, "internal", e.what());
    }
}

#pragma once
// Shared plumbing of the fencelock command-line tool: exit codes, the one-JSON-object output
// rule, global options and input parsing that names the offending flag.
#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "fencelock/client.hpp"
#include "human_output.hpp"

namespace fencelock::cli {

/// Documented exit codes (README, "Exit codes").
enum Exit : int {
    exit_ok = 0,
    exit_internal = 1,
    exit_invalid_input = 2,
    exit_negative = 3,
    exit_unavailable = 4,
};

/// Whether SIGPIPE was ignored before main() ignored it (commands that start a child restore
/// the caller's disposition for it).
extern bool caller_ignored_sigpipe;

/// Thrown by parsing helpers for bad user input; main() turns it into exit 2.
struct InputError {
    std::string field;
    std::string message;
};

/// Options every command shares.
struct Globals {
    std::string redis_url;
    /// --redis-password-file: the Redis password, kept out of the URL and argv (secrets.hpp).
    std::string password_file;
    std::string timeout = "1s";
    /// --allow-eviction: RedisEndpoint::allow_eviction.
    bool allow_eviction = false;
    /// --tls-ca, --tls-ca-dir, --tls-cert, --tls-key, --tls-server-name, --tls-insecure: the
    /// TlsOptions of a rediss URL given outside it (each defaults to $FENCELOCK_TLS_CA,
    /// $FENCELOCK_TLS_CA_DIR, $FENCELOCK_TLS_CERT, $FENCELOCK_TLS_KEY, $FENCELOCK_TLS_SERVER_NAME,
    /// $FENCELOCK_TLS_INSECURE=1). Empty / false: not given.
    std::string tls_ca;
    std::string tls_ca_dir;
    std::string tls_cert;
    std::string tls_key;
    std::string tls_server_name;
    bool tls_insecure = false;
    /// --label: ClientOptions::holder_label, shown beside host and pid by inspect and list
    /// (default $FENCELOCK_LABEL). At most max_label_bytes, no control characters.
    std::string label;
};

/// The longest --label: holder metadata is stored with every lease.
inline constexpr std::size_t max_label_bytes = 200;

/// The program: registered commands set `run`, which main() calls after parsing.
struct Program {
    // Named, so usage lines say `fencelock` whatever path started the binary (not argv[0]).
    CLI::App app{"fencelock: Redis leases with fencing tokens", "fencelock"};
    Globals globals;
    std::function<int()> run;
};

/// Prints exactly one JSON object, on stdout (on stderr after json_to_stderr()).
void emit(const nlohmann::json& object);
/// From now on emit() and fail() print their JSON on stderr: `run` leaves stdout to CMD alone.
void json_to_stderr();
/// From now on emit() prints nothing, and errors are only their line of text on stderr: `run`
/// without --json, which is silent on success as flock is.
void json_off();
/// Prints `records` in `format` (human_output.hpp): each through emit(), or all as one table on
/// stdout, with `none` on a line of its own when there are none (a person is not left with an
/// empty screen; a script gets nothing at all).
void print_records(Format format, const std::vector<Column>& columns, const std::vector<nlohmann::json>& records,
                   const std::string& none);
/// Prints an error object (README, "JSON output": `error`, `code` as a string, `message`,
/// `field` when a flag or argument is at fault) and a diagnostic on stderr; returns the exit
/// code. `code` defaults to `error`.
int fail(int exit_code, std::string_view error, std::string_view message, std::string_view field = {},
         std::string_view code = {});
/// Reports a Redis failure (exit 4) with its classification; `code` names the error.
int redis_failure(std::error_code ec);
/// Stable snake_case name of a Redis-side error code ("unavailable", "reply_timeout",
/// "eviction_policy"...), for the `code` of an error object.
std::string redis_error_name(std::error_code ec);
/// The `code` of a Redis failure's error object: the finer cause when there is one
/// (error_cause: "connection_refused", "auth_required"...), else redis_error_name.
std::string redis_error_code(std::error_code ec);
/// A parse error of the command line as an error object (exit 2): names the unknown
/// subcommand and lists the valid ones, or names the flag at fault in `field`.
int usage_failure(const CLI::App& root, const CLI::ParseError& e);

std::chrono::milliseconds parse_duration_flag(std::string_view flag, const std::string& text);
/// The stop grace of `run --grace` / `worker --kill-grace` for a kept lease of `lease`
/// (posix/stop_schedule.hpp): `text` when given (`given`) and it fits the lease, else an
/// InputError that names the bound; not given: 10 s, or the bound when that is less.
std::chrono::milliseconds stop_grace_flag(std::string_view flag, bool given, const std::string& text,
                                          std::chrono::milliseconds lease);
ResourceName parse_resource(const std::string& text);
OwnerToken parse_owner(const std::string& text);
/// The Redis server and per-call timeout the global options name: --redis, else
/// $FENCELOCK_REDIS_URL, else redis://127.0.0.1:6379; --timeout; the --tls-* options (or their
/// variables) merged into a rediss URL's TLS options, each given in one place only. Validated;
/// no I/O but a check that each TLS file (and the CA directory) can be opened for reading.
struct RedisTarget {
    RedisEndpoint endpoint;
    std::chrono::milliseconds timeout;
};
RedisTarget redis_target(const Globals& globals);
/// True when the global options turn TLS verification off (tls_insecure): inspect and list
/// say so in every object they print, so nobody mistakes an unverified answer for a verified one.
bool tls_insecure(const Globals& globals);

/// The client options the global options describe (not validated yet).
ClientOptions client_options(const Globals& globals, std::shared_ptr<LockObserver> observer = {},
                             std::size_t connections = 1);

/// Validates the global options and builds a client (no I/O yet) with `connections`
/// multiplexed connections, reporting to `observer`.
LockClient make_client(const Globals& globals, std::shared_ptr<LockObserver> observer = {},
                       std::size_t connections = 1);

/// Refuses, as bad input naming its flag, what `client`'s coordinator cannot do (etcd: --fair,
/// --replicas, a --lease that is not whole seconds of at least 2 s).
void require_supported(const LockClient& client, const AcquireOptions& options);

/// --lease, optional --wait and --max-hold (default max(1h, lease)) of acquire and run.
AcquireOptions parse_acquire_options(const CLI::App& command, const std::string& lease, const std::string& wait,
                                     const std::string& max_hold);

/// argv/envp arrays for exec: pointers into `strings`, null-terminated.
std::vector<char*> c_strings(std::vector<std::string>& strings);

void register_lock_commands(Program& program);
void register_bench_command(Program& program);
void register_store_commands(Program& program);
void register_run_command(Program& program);
void register_demo_commands(Program& program);
void register_ops_commands(Program& program);
void register_queue_commands(Program& program);
void register_worker_command(Program& program);

}  // namespace fencelock::cli

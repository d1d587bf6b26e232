// run: a command wrapped in a lease.
//
//   fencelock run R [--lease D] [-n | -w D] [-E N] [--json] [--max-hold D] [--grace D]
//                 [--report FILE] [--replicas N [--replica-timeout D]] -- CMD [ARGS...]
//
// As flock(1): waits for R as long as it takes (-n: one attempt, -w D: up to D), runs CMD in a
// process group of its own with FENCELOCK_RESOURCE, FENCELOCK_OWNER and FENCELOCK_FENCE added
// to its environment, renews the lease (default 30 s) while CMD runs, releases it when CMD ends
// and says nothing unless something went wrong, so cron mails nothing for a good run. Errors
// are a line of text on stderr; with --json, every message of run is a JSON object on stderr
// and the last line is the summary (after CMD is gone). stdout is CMD's alone: `run R --
// pg_dump > dump.sql` holds pg_dump's bytes and nothing else.
// CMD's own stdin/stdout/stderr are fencelock's. When stdin is a terminal whose foreground
// group is fencelock's, CMD's group becomes the foreground group (CMD can read the terminal
// and gets ^C) and fencelock takes it back when CMD ends; a ^Z that stops CMD stops fencelock
// too, so the shell's job control works as for any foreground command.
//
// The default --max-hold of run is the longest allowed, 720h: a wrapped job is not stopped
// after an hour as acquire's default would (a job that hangs keeps the lock, as with flock).
//
// Exit codes of `run` (besides 2 = invalid input and 4 = Redis failure, as for every command):
//   CMD's own  CMD ran and the lease was held from its start to its end; 128+N when CMD died
//              from signal N. (CMD may itself exit 75 or 76: the summary's "lease_lost" and
//              "cmd_exit_code" tell them apart.)
//   75         the lock was not acquired: held by another with -n, or still held when -w ran
//              out (EX_TEMPFAIL: try again later; -E N changes it, as flock's -E). CMD never
//              ran. Silent, as flock is; the --json summary says "contended".
//   76         the lease was lost while CMD ran (a renewal found another owner or the max hold,
//              renewals failed until the safe-until deadline, or the server's clock stepped).
//              CMD's tree got SIGTERM and then SIGKILL, never later than the lease's safe-until
//              (posix/stop_schedule.hpp: --grace must fit the lease), and CMD is gone. Also when CMD ended on its
//              own but the lease did not last up to its end (a loss noticed just after CMD's
//              exit, or the release found the lock in other hands).
//   126, 127   CMD could not be started (not executable / not found). The lease is released.
//   128+N      fencelock got signal N while still waiting for the lock. CMD never ran.
//
// Events without polling sleeps. The signals fencelock forwards (posix/signals.hpp has the
// table) are blocked before any thread exists (every thread inherits the mask, so no thread but
// the one reading the signalfd ever sees them) and read through a signalfd; CMD's exit is read
// from a pidfd; the keeper thread reports a lost lease by writing an eventfd from
// KeepOptions::on_lost. The main thread poll()s them, with a timeout only while a SIGKILL is
// scheduled. There are no signal handlers, so nothing races with waitpid(). fencelock ignores
// SIGPIPE, so a dead Redis socket cannot kill it, and SIGXCPU/SIGXFSZ, which report its own
// limits.
//
// Signals fencelock receives whose default action would end it (HUP, INT, QUIT, TERM, USR1,
// USR2, ALRM, ... the realtime ones) go to CMD's process group and fencelock keeps waiting for
// CMD, renewing meanwhile: CMD decides how to stop. If fencelock dies anyway (SIGKILL from the
// OOM killer, a crash), CMD and its group get SIGKILL at once (posix/child.hpp: PDEATHSIG and
// the group guard); the lease is then not released and runs out on its own. CMD starts with an
// empty signal mask and default dispositions, except for signals fencelock's caller ignored
// (nohup, `cmd &`): those stay ignored by both fencelock and CMD, as they would without the
// wrapper. Only CMD itself is waited for. When CMD exits, whatever is left of its group gets
// SIGKILL before the lease is released: nothing of the command runs on without a lease (a
// process that must outlive CMD has to leave the group, and then has no lease either).
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <expected>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "cmd_run.hpp"
#include "fencelock/limits.hpp"
#include "observe.hpp"
#include "posix/child.hpp"
#include "posix/fd.hpp"
#include "posix/signals.hpp"
#include "replica_flags.hpp"

namespace fencelock::cli {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

std::system_error os_error(const char* what) { return {errno, std::generic_category(), what}; }

Fd make_eventfd() {
    Fd fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (fd.get() < 0) throw os_error("eventfd");
    return fd;
}

void notify(int eventfd) noexcept {
    const std::uint64_t one = 1;
    (void)!::write(eventfd, &one, sizeof one);
}

/// The file descriptors open right now (the ones fencelock inherited, when called first).
std::vector<int> open_fds() {
    std::vector<int> fds;
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) return fds;
    while (const dirent* entry = ::readdir(dir)) {
        const int fd = std::atoi(entry->d_name);
        if (entry->d_name[0] != '.' && fd != ::dirfd(dir)) fds.push_back(fd);
    }
    ::closedir(dir);
    return fds;
}

/// Signal state of the process, set up before any thread exists.
struct Signals {
    Fd fd;              ///< signalfd for the forwarded signals
    sigset_t defaults;  ///< dispositions CMD starts with as SIG_DFL
};

/// `job_control`: stdin is a terminal whose foreground group is fencelock's, so CMD will get it
/// (posix/child.hpp, take_terminal); SIGCHLD is then watched too, to follow CMD's ^Z.
Signals take_signals(bool job_control) {
    Signals s{.fd = Fd{}, .defaults = {}};
    // CMD gets default dispositions, except for what our caller ignored (nohup, `cmd &`).
    sigemptyset(&s.defaults);
    for (int sig = 1; sig < NSIG; ++sig) {
        struct sigaction old {};
        if (sig == SIGKILL || sig == SIGSTOP || ::sigaction(sig, nullptr, &old) != 0) continue;
        if (old.sa_handler != SIG_IGN) sigaddset(&s.defaults, sig);
    }
    // main() ignores SIGPIPE for itself; CMD gets it back unless our caller had ignored it.
    if (!caller_ignored_sigpipe) sigaddset(&s.defaults, SIGPIPE);
    for (int sig : own_limit_signals) ::signal(sig, SIG_IGN);
    // SIGCHLD must not be ignored, or children are reaped behind our back and never reported.
    ::signal(SIGCHLD, SIG_DFL);
    // A signal our caller ignored stays ignored here too: it is neither watched nor forwarded.
    sigset_t watched;
    sigemptyset(&watched);
    for (int sig : forwarded_signals())
        if (sigismember(&s.defaults, sig)) sigaddset(&watched, sig);
    if (job_control) sigaddset(&watched, SIGCHLD);
    s.fd = block_into_signalfd(watched);
    return s;
}

void drain_eventfd(int fd) {
    std::uint64_t count = 0;
    (void)!::read(fd, &count, sizeof count);
}

/// Waits for fds[i] to become readable; retries on EINTR. `timeout` < 0: no limit.
void wait_readable(pollfd* fds, nfds_t n, int timeout_ms) {
    for (std::size_t i = 0; i < n; ++i) fds[i].revents = 0;
    while (::poll(fds, n, timeout_ms) < 0)
        if (errno != EINTR) throw os_error("poll");
}

Fd open_report(const std::string& path) {
    if (path.empty()) throw InputError{"--report", "empty file name"};
    Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) throw InputError{"--report", "cannot write " + path + ": " + std::strerror(errno)};
    return fd;
}

/// Writes the summary to the --report file, if any. A failure is reported on stderr only: the
/// exit code stays CMD's.
void write_report(const json& summary, const Fd& report) {
    if (report.get() < 0) return;
    const std::string text = summary.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    for (std::size_t done = 0; done < text.size();) {
        const ssize_t n = ::write(report.get(), text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            std::cerr << "fencelock: --report: write failed: " << std::strerror(errno) << "\n";
            return;
        }
        done += static_cast<std::size_t>(n);
    }
}

/// Prints the summary on stderr (and to the report); returns its exit code.
int finish(const json& summary, const Fd& report) {
    write_report(summary, report);
    emit(summary);
    return summary["exit_code"].get<int>();
}

/// The metrics and logs of run, for the rest of the process: never destroyed. Stopping the
/// metrics server (civetweb's mg_stop) waits up to 2 s for its listener's poll() to time out;
/// the process exit closes the socket at once and nothing is left to flush. A static keeps it
/// reachable, so leak checkers stay quiet.
Observability& process_observability(const ObserveArgs& args) {
    static Observability* const kept = new Observability(args);
    return *kept;
}

// --- acquisition -----------------------------------------------------------------------------

struct Acquired {
    std::optional<Result<Holding>> result;
    int interrupted = 0;  ///< signal that arrived while waiting (0: none)
};

/// LockClient::hold() on a worker thread while this thread keeps reading signals: a SIGINT
/// during a long wait stops the attempts (through the stop token) instead of waiting them out.
/// `forever`: hold() again each time options.wait runs out, until granted or stopped.
Acquired acquire(LockClient& client, const ResourceName& resource, const AcquireOptions& options,
                 const KeepOptions& keep, bool forever, int sigfd) {
    Acquired out;
    std::exception_ptr failure;
    std::stop_source stop;
    Fd done = make_eventfd();
    {
        std::jthread worker([&] {
            try {
                const std::stop_token token = stop.get_token();
                Result<Holding> got = client.hold(resource, options, keep, token);
                unsigned attempts = 0, unsuccessful = 0;
                while (forever && got && !got->acquired() && !token.stop_requested()) {
                    attempts += got->attempts;
                    unsuccessful += got->unsuccessful_attempts;
                    got = client.hold(resource, options, keep, token);
                }
                if (got) {
                    got->attempts += attempts;
                    got->unsuccessful_attempts += unsuccessful;
                }
                out.result.emplace(std::move(got));
            } catch (...) {
                failure = std::current_exception();
            }
            notify(done.get());
        });
        pollfd fds[2] = {{sigfd, POLLIN, 0}, {done.get(), POLLIN, 0}};
        for (;;) {
            wait_readable(fds, 2, -1);
            if (fds[1].revents != 0) break;
            for (int sig : read_signals(sigfd)) {
                if (out.interrupted != 0 || sig == SIGCHLD) continue;
                out.interrupted = sig;
                stop.request_stop();
            }
        }
    }
    if (failure) std::rethrow_exception(failure);
    return out;
}

// --- CMD -------------------------------------------------------------------------------------

/// Starts CMD in a new process group (see posix/child.hpp). Returns it, or the errno.
std::expected<Child, int> spawn(const std::vector<std::string>& command, const HeldLease& lease,
                                const sigset_t& defaults, const std::vector<int>& inherited) {
    // Descriptors opened since start (Redis sockets, whatever a library opened without
    // O_CLOEXEC) stay here; the ones fencelock inherited pass on to CMD as they would have.
    for (int fd : open_fds())
        if (fd > 2 && std::find(inherited.begin(), inherited.end(), fd) == inherited.end())
            ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) | FD_CLOEXEC);
    return spawn_group({.argv = command,
                        .env = environment_with({{"FENCELOCK_RESOURCE", lease.resource().str()},
                                                 {"FENCELOCK_OWNER", lease.owner().str()},
                                                 {"FENCELOCK_FENCE", std::to_string(lease.fence().value())}}),
                        .defaults = defaults,
                        .take_terminal = true});
}

struct Supervision {
    int status = 0;          ///< CMD's wait status
    bool loss_seen = false;  ///< on_lost fired while CMD ran
    bool killed = false;     ///< SIGKILL was sent to the group once the grace was over
    std::vector<std::string> forwarded;
};

/// Waits for CMD (the leader of its process group), forwarding signals, and stops the group
/// before its lease can end (posix/stop_schedule.hpp): SIGTERM `grace` before the lease's
/// safe-until (or at once when the lease is lost), SIGKILL after the grace, at safe-until at
/// the latest.
Supervision supervise(Child& cmd, const HeldLease& lease, int sigfd, int lossfd, milliseconds grace) {
    Supervision s;
    GroupStop stop(grace);
    pollfd fds[3] = {{sigfd, POLLIN, 0}, {lossfd, POLLIN, 0}, {cmd.exit_fd(), POLLIN, 0}};
    for (;;) {
        stop.lease_until(lease.safe_until());
        stop.act(cmd);
        wait_readable(fds, 3, stop.poll_timeout());
        stop.lease_until(lease.safe_until());
        if (fds[1].revents != 0) {
            drain_eventfd(lossfd);
            s.loss_seen = true;
            stop.begin(cmd);
        }
        if (fds[0].revents != 0) {
            for (int sig : read_signals(sigfd)) {
                if (sig == SIGCHLD) {
                    cmd.follow_stop();  // ^Z on the terminal stopped CMD: stop with it
                    continue;
                }
                cmd.signal_group(sig);
                s.forwarded.push_back(signal_name(sig));
            }
        }
        stop.act(cmd);
        if (fds[2].revents != 0) break;
    }
    // Without a lease nothing of CMD's may go on: what is left of the group (already sent
    // SIGTERM) is killed. With the lease held, leftovers are only reported.
    const Reaped reaped = cmd.reap();
    s.status = reaped.status;
    s.killed = stop.killed();
    // Stopped because renewals failed until a grace before safe-until: the lease did not last.
    s.loss_seen = s.loss_seen || stop.begun();
    return s;
}

// --- the command -----------------------------------------------------------------------------

}  // namespace

int run_run(const Globals& g, const RunArgs& a, const CLI::App& cmd) {
    const std::vector<int> inherited = open_fds();
    // Everything is checked before anything is sent to Redis.
    const auto resource = parse_resource(a.resource);
    if (resource.str().find('\0') != std::string::npos)
        throw InputError{"RESOURCE", "must not contain NUL: CMD receives it in FENCELOCK_RESOURCE"};
    AcquireOptions options = parse_acquire_options(cmd, a.lease, a.wait, a.max_hold);
    if (cmd.count("--max-hold") == 0) options.max_hold = limits::max_hold;
    // Neither -n nor --wait: wait as long as it takes, in spans of the longest wait allowed.
    // A Redis failure then ends the wait at once (exit 4): it waits for the lock, not through
    // an outage; with --wait, failures are retried within it like refusals.
    const bool forever = !a.nonblock && cmd.count("--wait") == 0;
    if (forever) {
        options.wait = limits::wait;
        options.retry_errors = false;
    }
    if (a.conflict_exit_code < 0 || a.conflict_exit_code > 255)
        throw InputError{"--conflict-exit-code", std::to_string(a.conflict_exit_code) + " is no exit code: 0 to 255"};
    apply_replica_flags(cmd, a.replicas, g, options);
    const milliseconds grace = stop_grace_flag("--grace", cmd.count("--grace") > 0, a.grace, options.lease);
    if (a.command.empty()) throw InputError{"CMD", "missing command after --"};
    if (a.command.front().empty()) throw InputError{"CMD", "empty command name"};

    // Before the client (and so before the keeper thread) exists: every thread inherits the mask.
    Signals signals = take_signals(terminal_in_foreground());
    Fd lossfd = make_eventfd();
    // After the mask: the metrics server's threads must not receive our signals either.
    // Without --json, run tells people what went wrong in a line of text; its JSON log then
    // starts at errors unless --log-level says otherwise.
    ObserveArgs observe_args = a.observe;
    if (!a.json && cmd.count("--log-level") == 0) observe_args.log_level = "error";
    Observability& observe = process_observability(observe_args);
    auto client = make_client(g, observe.lock_observer());
    require_supported(client, options);
    Fd report = cmd.count("--report") ? open_report(a.report) : Fd{};

    const KeepOptions keep{.on_lost = [fd = lossfd.get()](const LeaseLoss&) { notify(fd); }};
    Acquired acquired = acquire(client, resource, options, keep, forever, signals.fd.get());
    json summary{{"resource", resource.str()}};
    if (!*acquired.result) {
        summary.update({{"acquired", false},
                        {"error", "redis"},
                        {"code", redis_error_code(acquired.result->error())},
                        {"message", acquired.result->error().message()},
                        {"exit_code", int(exit_unavailable)}});
        write_report(summary, report);  // stderr gets redis_failure()'s error object
        return redis_failure(acquired.result->error());
    }
    Holding& holding = **acquired.result;
    summary["attempts"] = holding.attempts;
    if (!holding.acquired()) {
        const bool interrupted = acquired.interrupted != 0;
        summary.update({{"acquired", false},
                        {"result", interrupted ? "interrupted" : "contended"},
                        {"pttl_ms", holding.holder_ttl.count()},
                        {"exit_code", interrupted ? 128 + acquired.interrupted : a.conflict_exit_code}});
        if (interrupted) summary["signal"] = signal_name(acquired.interrupted);
        return finish(summary, report);
    }

    HeldLease& lease = *holding.lease;
    summary.update({{"acquired", true}, {"fence", lease.fence().value()}, {"owner", lease.owner().str()}});
    bool lost = false;
    std::optional<Supervision> supervision;
    if (acquired.interrupted != 0) {
        // Granted as the signal came in: give the lease back without running CMD.
        summary.update({{"result", "interrupted"},
                        {"signal", signal_name(acquired.interrupted)},
                        {"exit_code", 128 + acquired.interrupted}});
    } else if (!lease.valid()) {
        lost = true;  // lost before CMD could start
        summary["exit_code"] = exit_lease_lost;
    } else if (auto cmd = spawn(a.command, lease, signals.defaults, inherited); !cmd) {
        std::cerr << "fencelock: CMD: cannot run " << a.command.front() << ": " << std::strerror(cmd.error()) << "\n";
        summary.update({{"result", "not_started"},
                        {"error", "spawn"},
                        {"code", cmd.error() == ENOENT ? "not_found" : "not_executable"},
                        {"message", std::strerror(cmd.error())},
                        {"exit_code", cmd.error() == ENOENT ? 127 : 126}});
    } else {
        summary["result"] = "completed";  // unless the lease turns out lost, below
        summary["cmd_pid"] = cmd->pid();
        supervision = supervise(*cmd, lease, signals.fd.get(), lossfd.get(), grace);
        // A loss the keeper reported after CMD's exit, or not yet: either way the lease was
        // not held throughout.
        lost = supervision->loss_seen || !lease.valid();
        const int status = supervision->status;
        if (WIFEXITED(status)) summary["cmd_exit_code"] = WEXITSTATUS(status);
        else summary["cmd_signal"] = signal_name(WTERMSIG(status));
        summary["exit_code"] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        summary["killed"] = supervision->killed;
        // CMD ended after a signal fencelock received was passed on to it: it was asked to stop.
        if (!supervision->forwarded.empty()) {
            summary["forwarded"] = supervision->forwarded;
            summary["result"] = "interrupted";
        }
    }

    summary["renewals"] = lease.renewals();
    std::optional<LossReason> reason = lease.loss();
    auto released = lease.release();
    if (!released) {
        summary.update({{"released", false}, {"release_error", released.error().message()}});
        std::cerr << "fencelock: release failed: " << released.error().message() << " ["
                  << to_string(classify(released.error())) << "]; the lease runs out on its own\n";
    } else {
        summary["released"] = *released == ReleaseStatus::released;
        // The lease ran out (not_held) or someone took the lock (not_owner) and the keeper had
        // not noticed yet.
        if (*released != ReleaseStatus::released && !lost) {
            lost = true;
            reason = *released == ReleaseStatus::not_held ? LossReason::expired : LossReason::not_owner;
        }
    }
    summary["lease_lost"] = lost;
    if (lost) {
        summary["result"] = "lease_lost";
        summary["loss_reason"] = to_string(reason.value_or(LossReason::expired));
        if (supervision) summary["exit_code"] = exit_lease_lost;
        std::cerr << "fencelock: lease on " << resource.str() << " lost (" << summary["loss_reason"].get<std::string>()
                  << ")" << (supervision && supervision->loss_seen ? "; CMD was stopped" : "") << "\n";
    }
    return finish(summary, report);
}

}  // namespace fencelock::cli

// worker: runs CMD once per job of a queue, each under the lease of the job's resource.
//
//   fencelock worker --queue Q --db URL [--concurrency N] [--lease D] [--max-attempts N]
//                    [--visibility-timeout D] [--grace D] [--kill-grace D] -- CMD [ARGS...]
//
// For every job: one attempt at the resource's lease (contended: the job is requeued with a
// delay, the slot takes the next job); then CMD runs in a process group of its own with the
// payload on stdin and FENCELOCK_FENCE, FENCELOCK_OWNER, FENCELOCK_RESOURCE, FENCELOCK_JOB_ID and
// FENCELOCK_IDEMPOTENCY_KEY in its environment; its stdout and stderr go to the worker's stderr
// (stdout is kept for the worker's JSON summary). CMD's exit status decides:
//   0      completed: the idempotency key is recorded in the store, fenced (JobProcessor's
//          external mode), and the job acknowledged; a key already recorded counts as duplicate;
//   75     retry later (EX_TEMPFAIL), not a failure;
//   other  business failure (also death by a signal): retried up to --max-attempts, then
//          dead-lettered with the reason.
// Lease loss stops CMD as `fencelock run` does: SIGTERM to its group at once, SIGKILL after
// --kill-grace; the attempt then counts as lease_lost and the job is retried.
//
// SIGTERM / SIGINT / SIGHUP: graceful shutdown (no new jobs; running CMDs may finish for
// --grace, then they are stopped as on lease loss and their jobs stay for redelivery). A
// second signal stops running CMDs at once. Then one JSON object with the counters; exit 0.
// Exit 2: invalid input (nothing contacted); 4: Redis or the database unavailable at start.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <thread>

#include "cli.hpp"
#include "cmd_queue.hpp"
#include "job_observer.hpp"
#include "observe.hpp"
#include "fencelock/queue.hpp"

extern char** environ;

namespace fencelock::cli {


namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

constexpr int exit_tempfail = 75;
constexpr int handled_signals[] = {SIGHUP, SIGINT, SIGTERM};
constexpr const char* job_env[] = {"FENCELOCK_FENCE=", "FENCELOCK_OWNER=", "FENCELOCK_RESOURCE=", "FENCELOCK_JOB_ID=",
                                   "FENCELOCK_IDEMPOTENCY_KEY="};

struct WorkerArgs {
    std::string queue, db, lease = "30s", visibility = "60s", grace = "30s", kill_grace = "10s";
    std::size_t concurrency = 1;
    unsigned max_attempts = 5;
    std::vector<std::string> command;
    ObserveArgs observe;
};

/// A file descriptor closed on scope exit.
struct OwnedFd {
    int fd = -1;
    explicit OwnedFd(int f) : fd(f) {}
    OwnedFd(const OwnedFd&) = delete;
    ~OwnedFd() {
        if (fd >= 0) ::close(fd);
    }
};

std::string signal_text(int sig) {
    const char* abbrev = sigabbrev_np(sig);
    return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

/// The payload as an anonymous file, so a large payload never blocks on a pipe CMD does not read.
int payload_fd(const std::string& payload) {
    const int fd = ::memfd_create("fencelock-payload", MFD_CLOEXEC);
    if (fd < 0) return -1;
    for (std::size_t done = 0; done < payload.size();) {
        const ssize_t n = ::write(fd, payload.data() + done, payload.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            ::close(fd);
            return -1;
        }
        done += static_cast<std::size_t>(n);
    }
    ::lseek(fd, 0, SEEK_SET);
    return fd;
}

/// Runs CMD for one job and waits for it; stops its group when `stop` fires (lease lost or
/// shutdown deadline): SIGTERM, then SIGKILL after `kill_grace`.
std::expected<void, JobFailure> run_command(const std::vector<std::string>& command, const JobContext& ctx,
                                            milliseconds kill_grace) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string_view entry(*e);
        bool ours = false;
        for (const char* name : job_env) ours = ours || entry.starts_with(name);
        if (!ours) env.emplace_back(entry);
    }
    env.push_back(std::string("FENCELOCK_FENCE=") + std::to_string(ctx.fence.value()));
    env.push_back("FENCELOCK_OWNER=" + ctx.owner.str());
    env.push_back("FENCELOCK_RESOURCE=" + ctx.job.resource.str());
    env.push_back("FENCELOCK_JOB_ID=" + ctx.job.id);
    env.push_back("FENCELOCK_IDEMPOTENCY_KEY=" + ctx.job.idempotency_key);
    std::vector<std::string> args = command;
    auto argv = c_strings(args);
    auto envp = c_strings(env);

    OwnedFd input(payload_fd(ctx.job.payload));
    if (input.fd < 0) return std::unexpected(JobFailure::retry_later(std::string("memfd: ") + std::strerror(errno)));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, input.fd, 0);
    posix_spawn_file_actions_adddup2(&actions, 2, 1);
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);  // Redis and database sockets stay here
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t empty, defaults;
    sigemptyset(&empty);
    sigemptyset(&defaults);
    for (int sig : handled_signals) sigaddset(&defaults, sig);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setsigmask(&attr, &empty);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    pid_t pid = -1;
    const int rc = ::posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    // Cannot start: a broken deployment, not the job's fault; it does not burn business attempts.
    if (rc != 0) return std::unexpected(JobFailure::retry_later("cannot run " + command.front() + ": " + std::strerror(rc)));

    // pidfd_open(2) by syscall: glibc 2.36 declares it without C linkage for C++.
    OwnedFd child(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    OwnedFd stopped(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    std::stop_callback on_stop(ctx.stop, [fd = stopped.fd] {
        const std::uint64_t one = 1;
        (void)!::write(fd, &one, sizeof one);
    });
    std::optional<steady::time_point> kill_at;
    bool killed = false;
    for (;;) {
        pollfd fds[2] = {{child.fd, POLLIN, 0}, {stopped.fd, POLLIN, 0}};
        int timeout = -1;
        if (kill_at && !killed)
            timeout = static_cast<int>(std::max<long long>(
                0, std::chrono::ceil<milliseconds>(*kill_at - steady::now()).count()));
        if (::poll(fds, 2, timeout) < 0 && errno != EINTR) break;
        if (fds[1].revents != 0 && !kill_at) {
            ::kill(-pid, SIGTERM);
            kill_at = steady::now() + kill_grace;
        }
        if (kill_at && !killed && steady::now() >= *kill_at) {
            ::kill(-pid, SIGKILL);
            killed = true;
        }
        if (fds[0].revents != 0) break;
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    // Group members that outlived CMD no longer have a lease.
    if (ctx.stop.stop_requested()) ::kill(-pid, SIGKILL);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
    if (WIFEXITED(status) && WEXITSTATUS(status) == exit_tempfail)
        return std::unexpected(JobFailure::retry_later("CMD exited 75 (retry later)"));
    if (WIFEXITED(status))
        return std::unexpected(JobFailure::business("CMD exited " + std::to_string(WEXITSTATUS(status))));
    return std::unexpected(JobFailure::business("CMD killed by " + signal_text(WTERMSIG(status))));
}

int store_unavailable(const StoreError& e) {
    const auto kind = classify_store_error(e.code);
    emit({{"error", "store"}, {"code", to_name(e.code)}, {"kind", to_string(kind)}, {"message", e.detail}});
    std::cerr << "fencelock: " << e.code.message() << ": " << e.detail << " [" << to_string(kind) << "]\n";
    return exit_unavailable;
}

int run_worker(const Globals& g, const WorkerArgs& a) {
    // Everything is validated before anything is contacted.
    QueueOptions queue = queue_options(g, a.queue);
    const auto lease = parse_duration_flag("--lease", a.lease);
    const auto visibility = parse_duration_flag("--visibility-timeout", a.visibility);
    const auto grace = parse_duration_flag("--grace", a.grace);
    const auto kill_grace = parse_duration_flag("--kill-grace", a.kill_grace);
    if (a.command.empty() || a.command.front().empty()) throw InputError{"CMD", "missing command after --"};
    if (a.db.empty()) throw InputError{"--db", "a database URL is required (--db or $FENCELOCK_DB_URL)"};
    WorkerOptions options{.concurrency = a.concurrency,
                          .processing = {.lease = lease, .max_hold = std::max(lease, milliseconds(std::chrono::hours(1)))},
                          .visibility_timeout = visibility,
                          .shutdown_grace = grace};
    options.processing.retry.max_business_attempts = a.max_attempts;
    if (auto ok = options.validate(); !ok) {
        std::string field = ok.error().field;
        if (field == "retry.max_business_attempts") field = "max_attempts";
        if (field == "visibility_timeout") field = "visibility-timeout";
        throw InputError{"--" + field, ok.error().message};
    }
    auto store = FencedStore::create(StoreOptions{.url = a.db, .pool_size = a.concurrency * 2});
    if (!store) throw InputError{store.error().field == "url" ? "--db" : "--" + store.error().field, store.error().message};

    // Signals are read from a signalfd by this thread only: block them before any thread exists.
    ::signal(SIGPIPE, SIG_IGN);
    ::signal(SIGCHLD, SIG_DFL);
    sigset_t watched;
    sigemptyset(&watched);
    for (int sig : handled_signals) sigaddset(&watched, sig);
    ::pthread_sigmask(SIG_BLOCK, &watched, nullptr);
    OwnedFd sigfd(::signalfd(-1, &watched, SFD_CLOEXEC | SFD_NONBLOCK));
    OwnedFd finished(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));

    // After the mask: the metrics server's threads must not receive our signals either.
    Observability observe(a.observe);
    options.processing.observer = std::make_shared<JobObserver>(observe);
    auto client = make_client(g, observe.lock_observer());
    // Fail fast when Redis or the database cannot be reached at all (later outages are retried).
    auto probe = JobQueue::create(queue).value();
    if (auto s = probe.stats(); !s) return redis_failure(s.error());
    if (auto r = store->read(ResourceName::make("fencelock-worker-probe").value()); !r) return store_unavailable(r.error());

    auto worker = QueueWorker::create(queue, options, client, *store);
    if (!worker) throw InputError{"--" + worker.error().field, worker.error().message};
    std::stop_source stop;
    WorkerStats stats;
    std::thread runner([&] {
        stats = worker->run_external(
            [&a, kill_grace](const JobContext& ctx) { return run_command(a.command, ctx, kill_grace); },
            stop.get_token());
        const std::uint64_t one = 1;
        (void)!::write(finished.fd, &one, sizeof one);
    });
    std::vector<std::string> received;
    for (;;) {
        pollfd fds[2] = {{sigfd.fd, POLLIN, 0}, {finished.fd, POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
        if (fds[1].revents != 0) break;
        signalfd_siginfo info{};
        while (::read(sigfd.fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
            received.push_back(signal_text(static_cast<int>(info.ssi_signo)));
            if (received.size() == 1) stop.request_stop();
            else worker->cancel_in_flight();
        }
    }
    runner.join();
    emit({{"queue", a.queue},
          {"signals", received},
          {"delivered", stats.delivered},
          {"reclaimed", stats.reclaimed},
          {"completed", stats.completed},
          {"duplicates", stats.duplicates},
          {"contention_retries", stats.contention_retries},
          {"business_retries", stats.business_retries},
          {"retry_later", stats.retry_later},
          {"infrastructure_retries", stats.infrastructure_retries},
          {"lease_lost", stats.lease_lost},
          {"dead", stats.dead},
          {"cancelled", stats.cancelled},
          {"transport_errors", stats.transport_errors}});
    return exit_ok;
}

}  // namespace

void register_worker_command(Program& p) {
    auto args = std::make_shared<WorkerArgs>();
    if (const char* env = std::getenv("FENCELOCK_DB_URL")) args->db = env;
    auto* cmd = p.app.add_subcommand("worker", "run CMD once per job of a queue, under the job resource's lease");
    cmd->add_option("--queue", args->queue, "queue name")->required();
    cmd->add_option("--db", args->db, "fenced store recording completions (default $FENCELOCK_DB_URL)");
    cmd->add_option("--concurrency", args->concurrency, "jobs run at once (default 1)");
    add_observe_flags(*cmd, args->observe);
    cmd->add_option("--lease", args->lease, "lease on each job's resource, renewed while CMD runs (default 30s)");
    cmd->add_option("--max-attempts", args->max_attempts, "business attempts before dead-lettering (default 5)");
    cmd->add_option("--visibility-timeout", args->visibility,
                    "a job of a crashed worker is redelivered after this (default 60s)");
    cmd->add_option("--grace", args->grace, "on shutdown, running CMDs may finish for this long (default 30s)");
    cmd->add_option("--kill-grace", args->kill_grace, "after SIGTERM to a CMD, SIGKILL this much later (default 10s)");
    cmd->add_option("command", args->command, "command and its arguments, after --");
    cmd->footer("CMD exit: 0 completes the job, 75 retries later, other fails (dead after --max-attempts). "
                "Worker exit: 0 after a graceful shutdown (SIGTERM/SIGINT); 2 invalid input; 4 Redis or "
                "database unavailable.");
    cmd->callback([&p, args] { p.run = [&p, args] { return run_worker(p.globals, *args); }; });
}

}  // namespace fencelock::cli

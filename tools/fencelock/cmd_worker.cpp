// worker: runs CMD once per job of a queue, each under the lease of the job's resource.
//
//   fencelock worker --queue Q --db URL [--concurrency N] [--lease D] [--max-attempts N]
//                    [--visibility-timeout D] [--grace D] [--kill-grace D]
//                    [--handler-output FILE] -- CMD [ARGS...]
//
// For every job: one attempt at the resource's lease (contended: the job is requeued with a
// delay, the slot takes the next job); then CMD runs in a process group of its own with the
// payload on stdin and FENCELOCK_FENCE, FENCELOCK_OWNER, FENCELOCK_RESOURCE, FENCELOCK_JOB_ID and
// FENCELOCK_IDEMPOTENCY_KEY in its environment. Its stdout and stderr are two pipes the worker
// reads as they fill: each line becomes one warn `handler_output` object of the worker's JSON
// log on stderr, tagged with the job (handler_output.hpp), so stderr stays one JSON object per
// line and stdout is kept for the worker's JSON summary; with --handler-output FILE each line
// is appended to FILE instead, as "<job-id> <stream>: <line>" (cmd_worker_output.hpp).
// CMD's exit status decides:
//   0      completed: the idempotency key is recorded in the store, fenced (JobProcessor's
//          external mode), and the job acknowledged; a key already recorded counts as duplicate;
//   75     retry later (EX_TEMPFAIL), not a failure;
//   other  business failure (also death by a signal): retried up to --max-attempts, then
//          dead-lettered with the reason.
// Lease loss stops CMD as `fencelock run` does: SIGTERM to its group at once, SIGKILL after
// --kill-grace; the attempt then counts as lease_lost and the job is retried.
//
// A worker that dies (SIGKILL, the OOM killer, any other signal that ends it) takes every
// running CMD and its process group with it (posix/child.hpp); their jobs come back after
// --visibility-timeout and their leases run out on their own.
// SIGTERM / SIGINT / SIGHUP: graceful shutdown (no new jobs; running CMDs may finish for
// --grace, then they are stopped as on lease loss and their jobs stay for redelivery). A
// second signal stops running CMDs at once. Then one JSON object with the counters; exit 0.
// Exit 2: invalid input (nothing contacted); 4: Redis or the database unavailable at start.
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <thread>

#include "cli.hpp"
#include "cmd_queue.hpp"
#include "cmd_worker_output.hpp"
#include "fencelock/queue.hpp"
#include "fencelock/queue_metrics.hpp"
#include "observe.hpp"
#include "posix/child.hpp"
#include "posix/fd.hpp"
#include "posix/signals.hpp"
#include "replica_flags.hpp"

namespace fencelock::cli {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr int exit_tempfail = 75;
constexpr int handled_signals[] = {SIGHUP, SIGINT, SIGTERM};

struct WorkerArgs {
    std::string queue, db, handler_output, lease = "30s", visibility = "60s", grace = "30s", kill_grace = "10s";
    std::size_t concurrency = 1;
    unsigned max_attempts = 5;
    ReplicaFlags replicas;
    std::vector<std::string> command;
    ObserveArgs observe;
};

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
/// shutdown deadline): SIGTERM, then SIGKILL after `kill_grace`. Runs on the slot's thread,
/// which waits for CMD: PR_SET_PDEATHSIG fires when the forking thread ends (posix/child.hpp).
std::expected<void, JobFailure> run_command(const std::vector<std::string>& command, const JobContext& ctx,
                                            milliseconds kill_grace, HandlerOutputSink& output) {
    Fd input(payload_fd(ctx.job.payload));
    if (input.get() < 0) return std::unexpected(JobFailure::retry_later(std::string("memfd: ") + std::strerror(errno)));
    OutputStream out("stdout", output, ctx), err("stderr", output, ctx);
    Fd out_write = out.open(), err_write = err.open();
    if (out_write.get() < 0 || err_write.get() < 0)
        return std::unexpected(JobFailure::retry_later(std::string("pipe: ") + std::strerror(errno)));
    SpawnOptions spawn{.argv = command,
                       .env = environment_with({{"FENCELOCK_FENCE", std::to_string(ctx.fence.value())},
                                                {"FENCELOCK_OWNER", ctx.owner.str()},
                                                {"FENCELOCK_RESOURCE", ctx.job.resource.str()},
                                                {"FENCELOCK_JOB_ID", ctx.job.id},
                                                {"FENCELOCK_IDEMPOTENCY_KEY", ctx.job.idempotency_key}}),
                       .stdin_fd = input.get(),
                       .stdout_fd = out_write.get(),
                       .stderr_fd = err_write.get(),
                       .close_other_fds = true};  // Redis and database sockets stay here
    sigemptyset(&spawn.defaults);
    for (int sig : handled_signals) sigaddset(&spawn.defaults, sig);
    sigaddset(&spawn.defaults, SIGPIPE);
    auto cmd = spawn_group(spawn);
    // Cannot start: a broken deployment, not the job's fault; it does not burn business attempts.
    if (!cmd)
        return std::unexpected(
            JobFailure::retry_later("cannot run " + command.front() + ": " + std::strerror(cmd.error())));
    out_write.reset();  // CMD's group holds the write ends now: EOF once it is gone
    err_write.reset();

    Fd stopped(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    std::stop_callback on_stop(ctx.stop, [fd = stopped.get()] {
        const std::uint64_t one = 1;
        (void)!::write(fd, &one, sizeof one);
    });
    // SIGTERM kill_grace before the lease can end, or at once on a stop; SIGKILL by then.
    GroupStop stop(kill_grace);
    for (;;) {
        stop.lease_until(ctx.lease.safe_until());
        stop.act(*cmd);
        pollfd fds[4] = {
            {cmd->exit_fd(), POLLIN, 0}, {stopped.get(), POLLIN, 0}, {out.fd(), POLLIN, 0}, {err.fd(), POLLIN, 0}};
        if (::poll(fds, 4, stop.poll_timeout()) < 0 && errno != EINTR) break;
        if (fds[2].revents != 0) out.drain();
        if (fds[3].revents != 0) err.drain();
        stop.lease_until(ctx.lease.safe_until());
        if (fds[1].revents != 0) {
            std::uint64_t count = 0;
            (void)!::read(stopped.get(), &count, sizeof count);  // read, or poll() would spin
            stop.begin(*cmd);
        }
        stop.act(*cmd);
        if (fds[0].revents != 0) break;
    }
    // Group members that outlived CMD no longer have a lease.
    const int status = cmd->reap().status;
    // The group is dead now: what it wrote is all in the pipes (a pipe's worth at most), unless
    // a process that escaped it (posix/child.hpp) holds a write end; drain() never waits for it.
    out.finish();
    err.finish();
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
    if (WIFEXITED(status) && WEXITSTATUS(status) == exit_tempfail)
        return std::unexpected(JobFailure::retry_later("CMD exited 75 (retry later)"));
    if (WIFEXITED(status))
        return std::unexpected(JobFailure::business("CMD exited " + std::to_string(WEXITSTATUS(status))));
    return std::unexpected(JobFailure::business("CMD killed by " + signal_name(WTERMSIG(status))));
}

int store_unavailable(const StoreError& e) {
    const auto kind = classify_store_error(e.code);
    emit({{"error", "store"}, {"code", to_name(e.code)}, {"kind", to_string(kind)}, {"message", e.detail}});
    std::cerr << "fencelock: " << e.code.message() << ": " << e.detail << " [" << to_string(kind) << "]\n";
    return exit_unavailable;
}

int run_worker(const Globals& g, const WorkerArgs& a, const CLI::App& cmd) {
    // Everything is validated before anything is contacted.
    QueueOptions queue = queue_options(g, a.queue);
    const auto lease = parse_duration_flag("--lease", a.lease);
    const auto visibility = parse_duration_flag("--visibility-timeout", a.visibility);
    const auto grace = parse_duration_flag("--grace", a.grace);
    const auto kill_grace = stop_grace_flag("--kill-grace", cmd.count("--kill-grace") > 0, a.kill_grace, lease);
    if (a.command.empty() || a.command.front().empty()) throw InputError{"CMD", "missing command after --"};
    if (a.db.empty()) throw InputError{"--db", "a database URL is required (--db or $FENCELOCK_DB_URL)"};
    WorkerOptions options{
        .concurrency = a.concurrency,
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
    AcquireOptions acked{.lease = lease, .max_hold = options.processing.max_hold};
    apply_replica_flags(cmd, a.replicas, g, acked);
    options.processing.replicas = acked.replicas;
    options.processing.replica_timeout = acked.replica_timeout;
    // Opened once, before anything is contacted: a path that cannot be written is bad input.
    Fd output_file = cmd.count("--handler-output") > 0 ? open_handler_output(a.handler_output) : Fd{};

    // Signals are read from a signalfd by this thread only: block them before any thread exists.
    ::signal(SIGPIPE, SIG_IGN);
    ::signal(SIGCHLD, SIG_DFL);
    sigset_t watched;
    sigemptyset(&watched);
    for (int sig : handled_signals) sigaddset(&watched, sig);
    Fd sigfd = block_into_signalfd(watched);
    Fd finished(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));

    // After the mask: the metrics server's threads must not receive our signals either.
    Observability observe(a.observe);
    options.processing.observer = std::make_shared<QueueMetricsObserver>(observe.metrics(), observe.log());
    HandlerOutputSink output(*observe.log(), std::move(output_file));
    auto client = make_client(g, observe.lock_observer());
    auto store = FencedStore::create(
        StoreOptions{.url = a.db, .pool_size = a.concurrency * 2, .observer = observe.store_observer()});
    if (!store)
        throw InputError{store.error().field == "url" ? "--db" : "--" + store.error().field, store.error().message};
    // Queue depth is read from Redis when Prometheus asks, not per job.
    if (observe.registry()) {
        auto depth = std::make_shared<QueueDepthMetrics>(*observe.registry(), queue, observe.metrics());
        observe.on_scrape([depth] { (void)depth->sample(); });
    }
    // Fail fast when Redis or the database cannot be reached at all (later outages are retried).
    auto probe = JobQueue::create(queue).value();
    if (auto s = probe.stats(); !s) return redis_failure(s.error());
    if (auto r = store->read(ResourceName::make("fencelock-worker-probe").value()); !r)
        return store_unavailable(r.error());

    auto worker = QueueWorker::create(queue, options, client, *store);
    if (!worker) throw InputError{"--" + worker.error().field, worker.error().message};
    std::stop_source stop;
    WorkerStats stats;
    std::thread runner([&] {
        stats =
            worker->run_external([&a, kill_grace, &output](
                                     const JobContext& ctx) { return run_command(a.command, ctx, kill_grace, output); },
                                 stop.get_token());
        const std::uint64_t one = 1;
        (void)!::write(finished.get(), &one, sizeof one);
    });
    std::vector<std::string> received;
    for (;;) {
        pollfd fds[2] = {{sigfd.get(), POLLIN, 0}, {finished.get(), POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
        if (fds[1].revents != 0) break;
        for (int sig : read_signals(sigfd.get())) {
            received.push_back(signal_name(sig));
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
    cmd->add_option("--kill-grace", args->kill_grace,
                    "after SIGTERM to a CMD, SIGKILL this much later, and never after its lease can have ended; "
                    "SIGTERM comes this long before that when renewals fail (default 10s, less if the lease leaves "
                    "less; at most lease x 0.99 - lease / 2)");
    cmd->add_option("--handler-output", args->handler_output,
                    "append CMD's stdout and stderr to FILE (opened once at start, created if missing) as "
                    "\"<job-id> stdout: <line>\" / \"<job-id> stderr: <line>\" instead of logging them");
    add_replica_flags(*cmd, args->replicas);
    cmd->add_option("command", args->command, "command and its arguments, after --");
    cmd->footer(
        "CMD exit: 0 completes the job, 75 retries later, other fails (dead after --max-attempts). "
        "CMD output: each line of its stdout and stderr is one warn \"handler_output\" JSON log line on "
        "the worker's stderr with job_id, fence, stream and line (lines over 16 KiB in pieces marked "
        "continues; see docs/QUEUE.md); --log-level error or off hides it; --handler-output FILE puts it in "
        "FILE instead, one \"<job-id> <stream>: <line>\" per line (\"<stream>+\" for a piece the next "
        "line continues). "
        "Worker exit: 0 after a graceful shutdown (SIGTERM/SIGINT); 2 invalid input; 4 Redis or "
        "database unavailable.");
    cmd->callback([&p, args, cmd] { p.run = [&p, args, cmd] { return run_worker(p.globals, *args, *cmd); }; });
}

}  // namespace fencelock::cli

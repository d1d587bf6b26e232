// bench --processes: spawn the contender processes, hold them at a start barrier, merge their
// samples. The barrier is two pipes per child: the child writes "ready" on stdout once its
// client is connected, and starts when the parent closes its stdin (it reads end of file), so
// every process measures the same window.
#include "bench_processes.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string_view>

#include "posix/fd.hpp"

extern char** environ;

namespace fencelock::cli {
namespace {

using nlohmann::json;

struct ContenderProcess {
    pid_t pid = -1;
    Fd to_child;    // its stdin: closed to start it
    Fd from_child;  // its stdout: "ready", then the sample
    std::string output;
};

std::string self_exe() {
    std::error_code ec;
    auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? "fencelock" : p.string();
}

// The child's command line: the same connection options, its share of the contenders.
std::vector<std::string> child_argv(const Globals& g, const BenchArgs& a, int clients) {
    std::vector<std::string> argv{self_exe()};
    if (!g.redis_url.empty()) argv.insert(argv.end(), {"--redis", g.redis_url});
    argv.insert(argv.end(), {"--timeout", g.timeout});
    if (g.allow_eviction) argv.push_back("--allow-eviction");
    argv.insert(argv.end(),
                {"bench", "--scenario", "hot", "--clients", std::to_string(clients), "--duration", a.duration,
                 "--lease", a.lease, "--connections", std::to_string(a.connections), "--as-child"});
    if (a.fair) argv.push_back("--fair");
    if (a.keep) argv.push_back("--keep");
    if (a.async) argv.push_back("--async");
    if (!a.replicas.replicas.empty()) argv.insert(argv.end(), {"--replicas", a.replicas.replicas});
    if (!a.replicas.timeout.empty()) argv.insert(argv.end(), {"--replica-timeout", a.replicas.timeout});
    return argv;
}

std::expected<ContenderProcess, ChildFailure> spawn_contender(const std::vector<std::string>& args) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0) return std::unexpected(ChildFailure{exit_internal, std::strerror(errno)});
    Fd in_read(in[0]), in_write(in[1]);
    if (pipe2(out, O_CLOEXEC) != 0) return std::unexpected(ChildFailure{exit_internal, std::strerror(errno)});
    Fd out_read(out[0]), out_write(out[1]);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in_read.get(), STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out_write.get(), STDOUT_FILENO);
    std::vector<char*> argv;
    for (const auto& s : args) argv.push_back(const_cast<char*>(s.c_str()));
    argv.push_back(nullptr);
    ContenderProcess p;
    const int rc = posix_spawn(&p.pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0)
        return std::unexpected(ChildFailure{exit_internal, "cannot start " + args[0] + ": " + std::strerror(rc)});
    p.to_child = std::move(in_write);
    p.from_child = std::move(out_read);
    return p;
}

// Reads until `stop` is in the output (true), or to end of file (false).
bool read_until(ContenderProcess& p, std::string_view stop) {
    char buf[65536];
    while (stop.empty() || p.output.find(stop) == std::string::npos) {
        const ssize_t n = ::read(p.from_child.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p.output.append(buf, static_cast<std::size_t>(n));
    }
    return true;
}

// The last JSON object the child printed (its sample, or its error), or a discarded value.
json last_object(const ContenderProcess& p) {
    const std::string text = "\n" + p.output;  // the object may be the only line
    const auto at = text.rfind("\n{");
    return at == std::string::npos ? json(json::value_t::discarded) : json::parse(text.substr(at + 1), nullptr, false);
}

// Waits for the child; its failure, if it did not exit 0, with the message it printed.
std::optional<ChildFailure> reap(ContenderProcess& p) {
    int status = 0;
    while (waitpid(p.pid, &status, 0) < 0 && errno == EINTR) {
    }
    p.pid = -1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return std::nullopt;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : exit_internal;
    std::string message = WIFEXITED(status) ? "a contender process exited with " + std::to_string(code)
                                            : "a contender process ended on signal " + std::to_string(WTERMSIG(status));
    if (json error = last_object(p); error.is_object() && error.contains("message"))
        message += ": " + error["message"].get<std::string>();
    return ChildFailure{code, message};
}

}  // namespace

void await_start_signal() {
    std::cout << "ready" << std::endl;
    char go = 0;
    while (::read(STDIN_FILENO, &go, 1) < 0 && errno == EINTR) {  // end of file: start
    }
}

void write_child_sample(std::ostream& out, const HotSample& sample) {
    out << json{{"wait_us", sample.wait_us},
                {"unsuccessful", sample.unsuccessful},
                {"errors", sample.errors},
                {"elapsed_s", sample.elapsed_s}}
               .dump()
        << '\n';
}

std::expected<HotSample, ChildFailure> run_contender_processes(const Globals& g, const BenchArgs& a) {
    std::vector<ContenderProcess> children;
    std::optional<ChildFailure> failure;
    for (int i = 0; i < a.processes && !failure; ++i) {
        // Contenders dealt out as evenly as they go: the first (clients % processes) get one more.
        const int share = a.clients / a.processes + (i < a.clients % a.processes ? 1 : 0);
        auto child = spawn_contender(child_argv(g, a, share));
        if (!child) {
            failure = child.error();
            break;
        }
        children.push_back(std::move(*child));
        // A child that cannot connect ends before it is ready: its exit code and message.
        if (!read_until(children.back(), "ready\n")) failure = reap(children.back());
    }
    // Closing their stdin starts every child together. After a failure the others are killed
    // instead (bench removes whatever lease they held once they are gone).
    for (auto& c : children) {
        if (failure && c.pid > 0) ::kill(c.pid, SIGKILL);
        c.to_child.reset();
    }
    for (auto& c : children) {
        if (c.pid < 0) continue;
        read_until(c, {});
        if (auto f = reap(c); f && !failure) failure = std::move(f);
    }
    if (failure) return std::unexpected(*failure);

    HotSample merged;
    for (const auto& c : children) {
        json raw = last_object(c);
        if (!raw.is_object() || !raw.contains("wait_us"))
            return std::unexpected(ChildFailure{exit_internal, "a contender process printed no sample"});
        for (auto& w : raw["wait_us"]) merged.wait_us.push_back(w.get<std::vector<std::int64_t>>());
        merged.unsuccessful += raw["unsuccessful"].get<std::uint64_t>();
        merged.errors += raw["errors"].get<std::uint64_t>();
        // The children measured the same window, started together: the longest is the run's.
        merged.elapsed_s = std::max(merged.elapsed_s, raw["elapsed_s"].get<double>());
    }
    return merged;
}

}  // namespace fencelock::cli

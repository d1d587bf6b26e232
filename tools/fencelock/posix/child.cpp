// spawn_group(): fork, PDEATHSIG, exec; the group guard; reaping. See child.hpp for why it is
// safe. Between fork() and exec the child of a multi-threaded process may only make
// async-signal-safe calls: everything it needs (argv, envp, the signal set) is built before
// fork(), and it calls nothing but system calls and glibc's execvpe (which searches PATH with
// stack buffers, no malloc, no locks).
#include "posix/child.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <random>
#include <string_view>

#include "cli.hpp"
#include "posix/process_tree.hpp"
#include "secrets.hpp"

extern char** environ;

namespace fencelock::cli {
namespace {

/// Closes every descriptor but `keep` (async-signal-safe).
void close_all_but(int keep) noexcept {
    if (keep > 0) ::close_range(0, static_cast<unsigned>(keep) - 1, 0);
    ::close_range(static_cast<unsigned>(keep) + 1, ~0U, 0);
}

[[noreturn]] void fail_exec(int report_fd, int error) noexcept {
    (void)!::write(report_fd, &error, sizeof error);
    ::_exit(127);
}

/// tcsetpgrp() from a background group sends SIGTTOU to the caller's group unless the caller
/// blocks it: block it in this thread around the call (async-signal-safe).
void set_foreground(pid_t group) noexcept {
    sigset_t ttou, old;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    ::pthread_sigmask(SIG_BLOCK, &ttou, &old);
    ::tcsetpgrp(0, group);
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

/// `fd` when it is above 0-2 (or < 0), else a close-on-exec duplicate above them
/// (async-signal-safe). The child's own copy: fencelock's stays as it was.
int above_stdio_kept(int fd) noexcept { return fd < 0 || fd > 2 ? fd : ::fcntl(fd, F_DUPFD_CLOEXEC, 3); }

/// The forked child, up to exec. `report_fd` (O_CLOEXEC) gets errno if exec never happens.
[[noreturn]] void exec_child(const SpawnOptions& o, bool take_terminal, char* const* argv, char* const* envp,
                             pid_t parent, int report_fd) noexcept {
    ::setpgid(0, 0);
    // Before exec, so CMD's first read of the terminal finds its group in the foreground.
    if (take_terminal) set_foreground(::getpid());
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail_exec(report_fd, errno);
    if (::getppid() != parent) ::_exit(127);  // fencelock died before the request counted
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig)
        if (sigismember(&o.defaults, sig) == 1) ::sigaction(sig, &dfl, nullptr);
    sigset_t empty;
    sigemptyset(&empty);
    ::sigprocmask(SIG_SETMASK, &empty, nullptr);
    // Each source first moved above 0-2, so no dup2 below overwrites another's source.
    const int in = above_stdio_kept(o.stdin_fd), out = above_stdio_kept(o.stdout_fd),
              err = above_stdio_kept(o.stderr_fd);
    if ((o.stdin_fd >= 0 && in < 0) || (o.stdout_fd >= 0 && out < 0) || (o.stderr_fd >= 0 && err < 0))
        fail_exec(report_fd, errno);
    if (in >= 0 && ::dup2(in, 0) < 0) fail_exec(report_fd, errno);
    if (out >= 0 && ::dup2(out, 1) < 0) fail_exec(report_fd, errno);
    if (err >= 0 && ::dup2(err, 2) < 0) fail_exec(report_fd, errno);
    if (o.stdout_to_stderr && ::dup2(2, 1) < 0) fail_exec(report_fd, errno);
    if (o.close_other_fds) {
        ::close_range(3, static_cast<unsigned>(report_fd) - 1, 0);  // report_fd > 2 (above_stdio)
        ::close_range(static_cast<unsigned>(report_fd) + 1, ~0U, 0);
    }
    ::execvpe(argv[0], argv, envp);
    fail_exec(report_fd, errno);
}

/// The guard, a forked copy of fencelock: waits for a byte (stand down) or EOF (fencelock died),
/// then kills CMD's group and every process of its tree (posix/process_tree.hpp).
[[noreturn]] void guard_group(int read_fd, pid_t group, std::string_view marker) noexcept {
    sigset_t all;
    sigfillset(&all);
    ::sigprocmask(SIG_SETMASK, &all, nullptr);  // only SIGKILL ends it: its group's ^C does not
    close_all_but(read_fd);
    char byte = 0;
    ssize_t n;
    while ((n = ::read(read_fd, &byte, 1)) < 0 && errno == EINTR) {
    }
    if (n == 0) {
        ::kill(-group, SIGKILL);
        (void)kill_tree(marker, SIGKILL);
    }
    ::_exit(0);
}

/// `fd`, or a duplicate above 0-2 when fencelock runs with its stdio closed (then closed).
int above_stdio(int fd) noexcept {
    if (fd > 2) return fd;
    const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    ::close(fd);
    return high;
}

void reap_quietly(pid_t pid) noexcept {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
}

}  // namespace

bool terminal_in_foreground() noexcept { return ::isatty(0) == 1 && ::tcgetpgrp(0) == ::getpgrp(); }

std::vector<std::string> environment_with(const std::vector<std::pair<std::string, std::string>>& vars) {
    std::vector<std::string> env;
    const auto names = [](const std::string_view entry, std::string_view name) {
        return entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=';
    };
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string_view entry(*e);
        const bool replaced =
            std::any_of(vars.begin(), vars.end(), [&](const auto& v) { return names(entry, v.first); });
        const bool secret = std::any_of(std::begin(secret_variables), std::end(secret_variables),
                                        [&](std::string_view s) { return names(entry, s); });
        if (!replaced && !secret) env.emplace_back(entry);
    }
    for (const auto& [name, value] : vars) env.push_back(name + "=" + value);
    return env;
}

/// A tag no other tree has: 64 random bits in hex.
std::string fresh_tree_tag() {
    std::random_device random;
    const std::uint64_t bits = (std::uint64_t{random()} << 32) ^ random();
    static constexpr char hex[] = "0123456789abcdef";
    std::string tag(16, '0');
    for (int i = 0; i < 16; ++i) tag[static_cast<std::size_t>(i)] = hex[(bits >> (4 * i)) & 0xf];
    return tag;
}

std::expected<Child, int> spawn_group(const SpawnOptions& options) {
    if (options.stdout_fd >= 0 && options.stdout_to_stderr) return std::unexpected(EINVAL);
    std::vector<std::string> args = options.argv, env = options.env;
    // Every descendant inherits the tag, whatever group or parent it ends up with.
    std::string marker = std::string(tree_variable) + "=" + fresh_tree_tag();
    std::erase_if(env, [](const std::string& e) { return e.starts_with(std::string(tree_variable) + "="); });
    env.push_back(marker);
    const auto argv = c_strings(args);
    const auto envp = c_strings(env);
    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0) return std::unexpected(errno);
    Fd report_read(report[0]), report_write(above_stdio(report[1]));
    if (report_write.get() < 0) return std::unexpected(errno);
    const bool take_terminal = options.take_terminal && options.stdin_fd < 0 && terminal_in_foreground();
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) return std::unexpected(errno);
    if (pid == 0) exec_child(options, take_terminal, argv.data(), envp.data(), parent, report_write.get());
    ::setpgid(pid, pid);  // as the child does: whichever runs first (EACCES once it has exec'd)
    report_write.reset();
    // From here on every early return leaves it to ~Child to kill CMD's group and reap it (and
    // to take the terminal back).
    Child child(pid, Fd{}, -1, Fd{});
    child.has_terminal_ = take_terminal;
    child.marker_ = std::move(marker);

    // The guard, at once: CMD may already be forking children of its own.
    int guard_pipe[2];
    if (::pipe2(guard_pipe, O_CLOEXEC) != 0) return std::unexpected(errno);
    Fd guard_read(guard_pipe[0]);
    child.guard_fd_.reset(guard_pipe[1]);
    child.guard_ = ::fork();
    if (child.guard_ < 0) return std::unexpected(errno);
    if (child.guard_ == 0) guard_group(guard_read.get(), pid, child.marker_);
    guard_read.reset();

    // pidfd_open(2) by syscall: glibc 2.36 declares it without C linkage for C++.
    child.pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (child.pidfd_.get() < 0) return std::unexpected(errno);

    int exec_error = 0;
    ssize_t n;
    while ((n = ::read(report_read.get(), &exec_error, sizeof exec_error)) < 0 && errno == EINTR) {
    }
    if (n > 0) return std::unexpected(exec_error);  // CMD never ran
    return child;
}

Child::Child(pid_t pid, Fd pidfd, pid_t guard, Fd guard_fd) noexcept
    : pid_(pid), pidfd_(std::move(pidfd)), guard_(guard), guard_fd_(std::move(guard_fd)) {}

Child::Child(Child&& other) noexcept
    : pid_(other.pid_),
      pidfd_(std::move(other.pidfd_)),
      guard_(std::exchange(other.guard_, -1)),
      guard_fd_(std::move(other.guard_fd_)),
      reaped_(std::exchange(other.reaped_, true)),
      has_terminal_(std::exchange(other.has_terminal_, false)),
      marker_(std::move(other.marker_)) {}

Child::~Child() {
    if (reaped_) return;
    signal_tree(SIGKILL);
    take_terminal_back();
    stand_guard_down();
    reap_quietly(pid_);
}

void Child::take_terminal_back() noexcept {
    if (!has_terminal_) return;
    has_terminal_ = false;
    // CMD is gone by now (reap) or about to be (~Child): whoever of its group held the terminal.
    set_foreground(::getpgrp());
}

void Child::signal_group(int sig) const noexcept { ::kill(-pid_, sig); }

void Child::signal_tree(int sig) const noexcept {
    signal_group(sig);
    if (!marker_.empty()) (void)kill_tree(marker_, sig);
}

void Child::follow_stop() noexcept {
    if (!has_terminal_) return;
    // Consumes the stop report only: an exit stays for the pidfd and reap().
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WSTOPPED | WNOHANG) != 0 || info.si_pid != pid_) return;
    set_foreground(::getpgrp());
    ::kill(::getpid(), SIGSTOP);                              // every thread stops here until the shell's SIGCONT
    if (::tcgetpgrp(0) == ::getpgrp()) set_foreground(pid_);  // fg; after bg CMD stays in the background
    signal_group(SIGCONT);
}

void Child::stand_guard_down() noexcept {
    if (guard_ < 0) return;
    const char byte = 0;
    (void)!::write(guard_fd_.get(), &byte, 1);
    guard_fd_.reset();
    reap_quietly(std::exchange(guard_, -1));
}

Reaped Child::reap() {
    // Wait for the exit but leave CMD a zombie: its pid, the group id, stays taken meanwhile,
    // so the SIGKILL below reaches CMD's group and no other.
    siginfo_t info{};
    while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
    }
    signal_tree(SIGKILL);
    take_terminal_back();
    stand_guard_down();
    Reaped out;
    while (::waitpid(pid_, &out.status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    return out;
}

void GroupStop::begin(const Child& child) {
    schedule_.stop_now(std::chrono::steady_clock::now());
    act(child);
}

void GroupStop::act(const Child& child) {
    // Both may be due at once (a wakeup past safe-until): SIGTERM, then SIGKILL.
    for (auto a = schedule_.due(std::chrono::steady_clock::now()); a != StopSchedule::Action::none;
         a = schedule_.due(std::chrono::steady_clock::now()))
        child.signal_tree(a == StopSchedule::Action::term ? SIGTERM : SIGKILL);
}

int GroupStop::poll_timeout() const {
    const auto next = schedule_.next();
    if (!next) return -1;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - std::chrono::steady_clock::now());
    return static_cast<int>(std::clamp<std::chrono::milliseconds::rep>(left.count(), 0, 1'000'000));
}

}  // namespace fencelock::cli

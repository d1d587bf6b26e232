#pragma once
// A command started by `run` or `worker`: the leader of a process group of its own that dies
// with fencelock, however fencelock ends.
//
// Why nothing of CMD outlives fencelock (and so its lease):
// - CMD itself: the child sets PR_SET_PDEATHSIG = SIGKILL before exec, then compares getppid()
//   with the pid fencelock had before fork(): if fencelock died in between, the request came
//   too late and the child exits at once. The kernel sends that signal when the *thread* that
//   forked ends, not the process: spawn_group() must be called on a thread that waits for the
//   Child it returns (run's main thread, a worker slot); ~Child kills and reaps what is left.
// - The rest of CMD's group (its children): PDEATHSIG only reaches the direct child. Each Child
//   has a guard, a forked copy of fencelock that holds nothing but the read end of a pipe whose
//   write end only fencelock holds. When fencelock dies, for any reason, the kernel closes that
//   end, the guard reads EOF and sends SIGKILL to CMD's group. When fencelock reaps CMD it first
//   stands the guard down (one byte, then EOF), while CMD is still a zombie: the group id (CMD's
//   pid) cannot be reused by then, so the guard never kills a stranger's group.
// Limits: a process of CMD's that moves to another group or session (setsid, a daemon) escapes
// the group kill; a SIGKILL that also takes the guard (sent to fencelock's own group) leaves
// only PDEATHSIG; a grandchild created in the microseconds between CMD's fork and the guard's
// escapes when fencelock dies in that window.
#include <sys/types.h>

#include <chrono>
#include <expected>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <signal.h>

#include "posix/fd.hpp"

namespace fencelock::cli {

/// What spawn_group() starts, and the state it starts in.
struct SpawnOptions {
    std::vector<std::string> argv;  ///< CMD; argv[0] is looked up in fencelock's PATH
    std::vector<std::string> env;   ///< CMD's whole environment ("NAME=value")
    sigset_t defaults{};            ///< set to SIG_DFL in CMD; other ignored signals stay ignored
    int stdin_fd = -1;              ///< CMD's stdin when >= 0 (default: fencelock's)
    bool stdout_to_stderr = false;  ///< CMD's stdout is fencelock's stderr (default: its stdout)
    bool close_other_fds = false;   ///< close every descriptor above 2 (default: only O_CLOEXEC ones)
    /// When stdin is a terminal whose foreground process group is fencelock's: make CMD's group
    /// the foreground one before exec (else CMD stops with SIGTTIN at its first read), and take
    /// the terminal back in reap() / ~Child. Default: CMD's group stays in the background.
    bool take_terminal = false;
};

/// The environment fencelock runs with, minus any variable named in `vars`, plus `vars`.
std::vector<std::string> environment_with(const std::vector<std::pair<std::string, std::string>>& vars);

/// CMD once reaped: its wait status and whether members of its group outlived it.
struct Reaped {
    int status = 0;  ///< as waitpid() reports it
};

/// A running CMD: the leader of process group pid(), with its guard. Not copyable.
class Child {
public:
    Child(Child&& other) noexcept;
    Child& operator=(Child&&) = delete;
    /// Kills the group and reaps CMD if reap() never ran; reports nothing, throws nothing.
    ~Child();

    pid_t pid() const noexcept { return pid_; }
    /// Readable once CMD has exited (a pidfd); CMD stays unreaped until reap().
    int exit_fd() const noexcept { return pidfd_.get(); }
    /// Sends `sig` to CMD's whole group.
    void signal_group(int sig) const noexcept;
    /// Job control when CMD has the terminal (take_terminal), on SIGCHLD: if CMD was stopped
    /// (^Z), fencelock takes the terminal back and stops itself, so the shell sees its job
    /// stopped and gets the terminal; once continued (fg), CMD's group gets the terminal again
    /// and SIGCONT (after bg, SIGCONT only). Renewals stop meanwhile, as for any stopped
    /// fencelock. Does nothing otherwise.
    void follow_stop() noexcept;
    /// Waits for CMD to exit, sends SIGKILL to what is left of its group (nothing of it may
    /// outlive the lease, which is released next), stands the guard down and reaps CMD.
    /// Call once.
    Reaped reap();

private:
    friend std::expected<Child, int> spawn_group(const SpawnOptions&);
    Child(pid_t pid, Fd pidfd, pid_t guard, Fd guard_fd) noexcept;
    void stand_guard_down() noexcept;
    /// Makes fencelock's group the terminal's foreground group again, if CMD had it.
    void take_terminal_back() noexcept;

    pid_t pid_;
    Fd pidfd_;
    pid_t guard_;
    Fd guard_fd_;  ///< write end of the guard's pipe
    bool reaped_ = false;
    bool has_terminal_ = false;  ///< CMD's group was made the foreground group of stdin's terminal
};

/// Whether stdin is a terminal whose foreground process group is fencelock's (take_terminal
/// then applies).
bool terminal_in_foreground() noexcept;

/// Starts CMD in a new process group with PR_SET_PDEATHSIG and a group guard (see above), with
/// an empty signal mask. Returns the Child, or the errno of the failed step (ENOENT / EACCES
/// when CMD cannot be executed: nothing is left running then).
std::expected<Child, int> spawn_group(const SpawnOptions& options);

/// The stop sequence for a group whose lease is gone: SIGTERM at begin(), SIGKILL once the
/// grace has passed. For a poll() loop: poll_timeout() says how long it may sleep.
class GroupStop {
public:
    /// Sends SIGTERM to `child`'s group (once; later calls do nothing) and starts the grace.
    void begin(const Child& child, std::chrono::milliseconds grace);
    /// Sends SIGKILL when the grace is over; call after every wakeup.
    void kill_when_due(const Child& child);
    /// poll() timeout in ms: -1 (no limit) unless a SIGKILL is due.
    int poll_timeout() const;
    bool begun() const noexcept { return kill_at_.has_value(); }
    bool killed() const noexcept { return killed_; }

private:
    std::optional<std::chrono::steady_clock::time_point> kill_at_;
    bool killed_ = false;
};

}  // namespace fencelock::cli

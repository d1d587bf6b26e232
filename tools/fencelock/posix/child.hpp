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
// - Processes of CMD's that left its group (GNU timeout, `set -m`, a double fork's orphan, setsid):
//   each carries FENCELOCK_TREE=<tag> in its environment, inherited from CMD, so stops, the kill
//   at CMD's exit and the guard's kill reach them too (posix/process_tree.hpp).
// Limits: a process that starts with a cleared environment (env -i) or that fencelock may not
// inspect (another user, setuid) escapes; a SIGKILL that also takes the guard (sent to
// fencelock's own group) leaves only PDEATHSIG; a grandchild created in the microseconds
// between CMD's fork and the guard's escapes when fencelock dies in that window.
#include <sys/types.h>

#include <chrono>
#include <expected>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <signal.h>

#include "posix/fd.hpp"
#include "posix/stop_schedule.hpp"

namespace fencelock::cli {

/// What spawn_group() starts, and the state it starts in.
struct SpawnOptions {
    std::vector<std::string> argv;  ///< CMD; argv[0] is looked up in fencelock's PATH
    std::vector<std::string> env;   ///< CMD's whole environment ("NAME=value")
    sigset_t defaults{};            ///< set to SIG_DFL in CMD; other ignored signals stay ignored
    int stdin_fd = -1;              ///< CMD's stdin when >= 0 (default: fencelock's)
    int stdout_fd = -1;             ///< CMD's stdout when >= 0 (default: fencelock's; see below)
    int stderr_fd = -1;             ///< CMD's stderr when >= 0 (default: fencelock's)
    /// CMD's stdout is fencelock's stderr (default: its stdout). Not with stdout_fd (EINVAL).
    bool stdout_to_stderr = false;
    bool close_other_fds = false;  ///< close every descriptor above 2 (default: only O_CLOEXEC ones)
    /// When stdin is a terminal whose foreground process group is fencelock's: make CMD's group
    /// the foreground one before exec (else CMD stops with SIGTTIN at its first read), and take
    /// the terminal back in reap() / ~Child. Default: CMD's group stays in the background.
    bool take_terminal = false;
};

/// The environment fencelock runs with, minus fencelock's own Redis credentials
/// (secret_variables: a command gets none of them), minus any variable named in `vars`, plus
/// `vars`.
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
    /// Sends `sig` to CMD's whole group (forwarded signals).
    void signal_group(int sig) const noexcept;
    /// Sends `sig` to CMD's group and to every process of its tree, wherever it moved
    /// (posix/process_tree.hpp): stops and kills.
    void signal_tree(int sig) const noexcept;
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
    std::string marker_;         ///< FENCELOCK_TREE=<tag>, in the environment of CMD's tree
};

/// Whether stdin is a terminal whose foreground process group is fencelock's (take_terminal
/// then applies).
bool terminal_in_foreground() noexcept;

/// Starts CMD in a new process group with PR_SET_PDEATHSIG and a group guard (see above), with
/// an empty signal mask. Returns the Child, or the errno of the failed step (ENOENT / EACCES
/// when CMD cannot be executed, EINVAL for stdout_fd with stdout_to_stderr: nothing is left
/// running then). The descriptors given stay the caller's to close.
std::expected<Child, int> spawn_group(const SpawnOptions& options);

/// The stop sequence of a group whose lease may end (posix/stop_schedule.hpp says when):
/// SIGTERM `grace` before the lease's safe-until, or at once on begin(); SIGKILL after the grace
/// and never later than safe-until. For a poll() loop: poll_timeout() says how long it may sleep.
class GroupStop {
public:
    explicit GroupStop(std::chrono::milliseconds grace) : schedule_(grace) {}
    /// The lease's safe-until as it is now; call after every wakeup while CMD runs.
    void lease_until(std::chrono::steady_clock::time_point safe_until) { schedule_.lease_until(safe_until); }
    /// Stops the group now (the lease is lost, or a shutdown): SIGTERM once, then SIGKILL.
    void begin(const Child& child);
    /// Sends the signal that is due, if any; call after every wakeup.
    void act(const Child& child);
    /// poll() timeout in ms: -1 (no limit) unless a signal is due some day.
    int poll_timeout() const;
    bool begun() const noexcept { return schedule_.stopping(); }
    bool killed() const noexcept { return schedule_.killed(); }

private:
    StopSchedule schedule_;
};

}  // namespace fencelock::cli

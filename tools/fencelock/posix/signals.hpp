#pragma once
// Signals for the commands that supervise a child (`run`, `worker`): names, the table of what
// `run` does with each signal, and a signalfd to read them without handlers.
//
// What `run` does with a signal whose default action would end it (and so, before PDEATHSIG
// and the group guard, orphan CMD while the lease ran out):
//   forwarded to CMD's group   SIGHUP SIGINT SIGQUIT SIGTERM SIGUSR1 SIGUSR2 SIGALRM SIGVTALRM
//                              SIGPROF SIGPOLL SIGSTKFLT SIGPWR SIGRTMIN..SIGRTMAX
//                              (run keeps renewing; CMD decides whether to stop; run exits
//                              with CMD). fencelock arms no timers, so SIGALRM/SIGVTALRM/SIGPROF
//                              can only come from someone else, meant for CMD.
//   ignored by fencelock       SIGPIPE (a dead Redis socket), SIGXCPU, SIGXFSZ (its own CPU and
//                              file-size limits: a report write past RLIMIT_FSIZE fails with
//                              EFBIG and is reported; past the CPU hard limit the kernel sends
//                              SIGKILL). CMD starts with them at default.
//   not caught (death path)    SIGKILL; faults of fencelock's own code (SIGSEGV SIGBUS SIGFPE
//                              SIGILL SIGTRAP SIGSYS SIGABRT): fencelock dies, CMD gets SIGKILL
//                              (PR_SET_PDEATHSIG), its group gets SIGKILL (the group guard), the
//                              lease is not released and runs out on its own.
// Stop signals (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU) keep their default: a stopped fencelock
// renews nothing and the lease can run out while CMD works on; that pause is what fencing
// tokens are for. When CMD has the terminal (run on a terminal in the foreground), ^Z reaches
// CMD's group, and fencelock, told by SIGCHLD, stops itself too (Child::follow_stop). A signal fencelock's caller
// ignored stays ignored for fencelock and CMD.
#include <signal.h>

#include <string>
#include <vector>

#include "posix/fd.hpp"

namespace fencelock::cli {

/// Signals `run` forwards to CMD's process group (see the table above).
std::vector<int> forwarded_signals();

/// Signals that report fencelock's own resource limits: fencelock ignores them, CMD does not.
inline constexpr int own_limit_signals[] = {SIGXCPU, SIGXFSZ};

/// "SIGTERM", or "signal 40" for a signal without an abbreviation (the realtime ones).
std::string signal_name(int sig);

/// Blocks `watched` in the calling thread (call it before any other thread exists: threads
/// inherit the mask, so none of them ever sees these signals) and returns a non-blocking
/// signalfd to read them from. Throws std::system_error.
Fd block_into_signalfd(const sigset_t& watched);

/// The signals waiting on `sigfd`, oldest first (empty when none).
std::vector<int> read_signals(int sigfd);

}  // namespace fencelock::cli

// Signal names, `run`'s forwarding table and the signalfd both supervisors read.
#include "posix/signals.hpp"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace fencelock::cli {

std::vector<int> forwarded_signals() {
    std::vector<int> out = {SIGHUP,  SIGINT,    SIGQUIT, SIGTERM, SIGUSR1,   SIGUSR2,
                            SIGALRM, SIGVTALRM, SIGPROF, SIGPOLL, SIGSTKFLT, SIGPWR};
    // SIGRTMIN is a function: glibc keeps the first realtime signals for its threads.
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; ++sig) out.push_back(sig);
    return out;
}

std::string signal_name(int sig) {
    const char* abbrev = sigabbrev_np(sig);
    return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

Fd block_into_signalfd(const sigset_t& watched) {
    if (int rc = ::pthread_sigmask(SIG_BLOCK, &watched, nullptr); rc != 0)
        throw std::system_error(rc, std::generic_category(), "pthread_sigmask");
    Fd fd(::signalfd(-1, &watched, SFD_CLOEXEC | SFD_NONBLOCK));
    if (fd.get() < 0) throw std::system_error(errno, std::generic_category(), "signalfd");
    return fd;
}

std::vector<int> read_signals(int sigfd) {
    std::vector<int> out;
    signalfd_siginfo info{};
    while (::read(sigfd, &info, sizeof info) == static_cast<ssize_t>(sizeof info))
        out.push_back(static_cast<int>(info.ssi_signo));
    return out;
}

}  // namespace fencelock::cli

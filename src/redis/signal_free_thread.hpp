#pragma once
// Threads that write to Redis sockets take no asynchronous signal: the application's handlers
// keep running on its own threads, and the SIGPIPE of a write to a socket Redis has closed
// (sent to the writing thread) stays pending there instead of ending the process.
#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace fencelock::detail {

template <typename F>
std::thread start_signal_free_thread(F&& body) {
    sigset_t blocked, old;
    sigfillset(&blocked);
    for (int synchronous : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP}) sigdelset(&blocked, synchronous);
    pthread_sigmask(SIG_BLOCK, &blocked, &old);  // the new thread inherits the mask
    struct Restore {
        sigset_t mask;
        ~Restore() { pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
    } restore{old};
    return std::thread(std::forward<F>(body));
}

}  // namespace fencelock::detail

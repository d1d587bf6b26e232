// fault_postgres: one PostgreSQL server for a whole `ctest -L faults` run (the faults_postgres
// fixture), instead of one per test process, which would cost an initdb for every case.
//
//   fault_postgres start STATE   starts the server and returns once it accepts connections;
//                                writes STATE: line 1 the admin URL, line 2 the keeper's pid
//   fault_postgres stop STATE    stops it and waits until its directory and STATE are gone
//
// `start` forks a keeper process that owns the server (local::PostgresServer: a free port,
// a private directory, removed on destruction). The keeper leaves when `stop` signals it, or
// when the process that ran `start` (ctest) is gone: a run interrupted before its cleanup step
// leaves no server behind. Its stdio goes to /dev/null so ctest's output pipes close.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "local_servers/postgres_server.hpp"

namespace {

namespace fs = std::filesystem;

void write_state(const fs::path& state, const std::string& url) {
    const fs::path tmp = state.string() + ".tmp";
    std::ofstream(tmp) << url << '\n' << ::getpid() << '\n';
    fs::rename(tmp, state);
}

// Serves until SIGTERM/SIGINT/SIGHUP or until `watched` is gone, then stops the server.
int keep(const fs::path& state, pid_t watched, int ready_fd) {
    sigset_t stop;
    sigemptyset(&stop);
    for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop, s);
    sigprocmask(SIG_BLOCK, &stop, nullptr);
    try {
        fencelock::local::PostgresServer server;
        write_state(state, server.url());
        (void)::write(ready_fd, "ok", 2);
        ::close(ready_fd);
        const timespec tick{0, 250'000'000};
        while (sigtimedwait(&stop, nullptr, &tick) < 0) {
            if (::kill(watched, 0) != 0 && errno == ESRCH) break;
        }
    } catch (const std::exception& e) {
        const std::string why = e.what();
        (void)::write(ready_fd, why.data(), why.size());
        return 1;
    }
    std::error_code ec;
    fs::remove(state, ec);  // last: `stop` waits for this
    return 0;
}

int start(const fs::path& state) {
    std::error_code ec;
    fs::remove(state, ec);
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) != 0) return 1;
    const pid_t watched = ::getppid();
    const pid_t pid = ::fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        ::close(ready[0]);
        ::setsid();
        const int null = ::open("/dev/null", O_RDWR);
        for (int fd : {0, 1, 2}) ::dup2(null, fd);
        ::_exit(keep(state, watched, ready[1]));
    }
    ::close(ready[1]);
    std::string reply;
    char buf[512];
    for (ssize_t n; (n = ::read(ready[0], buf, sizeof buf)) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        reply.append(buf, static_cast<std::size_t>(n));
    }
    if (reply != "ok") {
        std::fprintf(stderr, "fault_postgres: %s\n", reply.empty() ? "the keeper died" : reply.c_str());
        return 1;
    }
    std::ifstream in(state);
    std::string url;
    std::getline(in, url);
    std::printf("PostgreSQL for the fault suite at %s (state %s)\n", url.c_str(), state.c_str());
    return 0;
}

int stop(const fs::path& state) {
    std::ifstream in(state);
    std::string url;
    pid_t keeper = 0;
    if (!std::getline(in, url) || !(in >> keeper) || keeper <= 0) {
        std::printf("fault_postgres: no server recorded in %s\n", state.c_str());
        return 0;
    }
    if (::kill(keeper, SIGTERM) != 0) {
        std::fprintf(stderr, "fault_postgres: keeper %d is gone; removing %s\n", keeper, state.c_str());
        fs::remove(state);
        return 1;
    }
    // The keeper is not our child (it cannot be waited for): it removes STATE when done.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (fs::exists(state)) {
        if (std::chrono::steady_clock::now() > deadline) {
            std::fprintf(stderr, "fault_postgres: keeper %d did not stop\n", keeper);
            return 1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::printf("PostgreSQL for the fault suite stopped\n");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string command = argc == 3 ? argv[1] : "";
    if (command == "start") return start(argv[2]);
    if (command == "stop") return stop(argv[2]);
    std::fprintf(stderr, "usage: fault_postgres start|stop STATE_FILE\n");
    return 2;
}

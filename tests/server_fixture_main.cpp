// server_fixture: servers one whole ctest run shares (ctest fixtures), instead of one per
// test process: a PostgreSQL for the fault suite (the faults_postgres fixture; an initdb per
// case would be slow) and a Sentinel group for the Sentinel suite (sentinel_group; a master,
// a replica and three sentinels take seconds to agree), a Redis Cluster for the cluster
// suite (cluster_group: three masters and three replicas), and etcd for the etcd suites (one
// member, or a three-member cluster).
//
//   server_fixture start KIND STATE   KIND is postgres, sentinel, cluster, etcd or etcd_cluster;
//                                     starts the servers and returns once they serve; writes
//                                     STATE: line 1 the URL (PostgreSQL's admin URL, the
//                                     redis-sentinel://, redis-cluster:// or etcd:// URL),
//                                     line 2 the keeper's pid
//   server_fixture stop STATE         stops them and waits until their directories and STATE
//                                     are gone
//
// `start` forks a keeper process that owns the servers (local::PostgresServer,
// local::SentinelGroup, local::EtcdServer ...: free ports, private directories, removed on
// destruction). The keeper leaves when `stop` signals it, or
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
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "local_servers/cluster_group.hpp"
#include "local_servers/etcd_cluster.hpp"
#include "local_servers/etcd_server.hpp"
#include "local_servers/postgres_server.hpp"
#include "local_servers/sentinel_group.hpp"

namespace {

namespace fs = std::filesystem;

// What the keeper owns while it serves, and the URL its tests connect with.
struct Served {
    std::shared_ptr<void> owner;
    std::string url;
};

Served serve(const std::string& kind) {
    if (kind == "postgres") {
        auto server = std::make_shared<fencelock::local::PostgresServer>();
        return {server, server->url()};
    }
    if (kind == "sentinel") {
        auto group = std::make_shared<fencelock::local::SentinelGroup>();
        return {group, group->url()};
    }
    if (kind == "cluster") {
        auto group = std::make_shared<fencelock::local::ClusterGroup>();
        return {group, group->url()};
    }
    if (kind == "etcd") {
        auto server = std::make_shared<fencelock::local::EtcdServer>();
        return {server, server->url()};
    }
    if (kind == "etcd_cluster") {
        auto cluster = std::make_shared<fencelock::local::EtcdCluster>();
        return {cluster, cluster->url()};
    }
    throw std::runtime_error("unknown server kind '" + kind + "' (postgres, sentinel, cluster, etcd or etcd_cluster)");
}

void write_state(const fs::path& state, const std::string& url) {
    const fs::path tmp = state.string() + ".tmp";
    std::ofstream(tmp) << url << '\n' << ::getpid() << '\n';
    fs::rename(tmp, state);
}

// Serves until SIGTERM/SIGINT/SIGHUP or until `watched` is gone, then stops the server.
int keep(const std::string& kind, const fs::path& state, pid_t watched, int ready_fd) {
    sigset_t stop;
    sigemptyset(&stop);
    for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop, s);
    sigprocmask(SIG_BLOCK, &stop, nullptr);
    try {
        const Served served = serve(kind);
        write_state(state, served.url);
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

int start(const std::string& kind, const fs::path& state) {
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
        ::_exit(keep(kind, state, watched, ready[1]));
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
        std::fprintf(stderr, "server_fixture: %s\n", reply.empty() ? "the keeper died" : reply.c_str());
        return 1;
    }
    std::ifstream in(state);
    std::string url;
    std::getline(in, url);
    std::printf("%s servers for this ctest run at %s (state %s)\n", kind.c_str(), url.c_str(), state.c_str());
    return 0;
}

int stop(const fs::path& state) {
    std::ifstream in(state);
    std::string url;
    pid_t keeper = 0;
    if (!std::getline(in, url) || !(in >> keeper) || keeper <= 0) {
        std::printf("server_fixture: no server recorded in %s\n", state.c_str());
        return 0;
    }
    if (::kill(keeper, SIGTERM) != 0) {
        std::fprintf(stderr, "server_fixture: keeper %d is gone; removing %s\n", keeper, state.c_str());
        fs::remove(state);
        return 1;
    }
    // The keeper is not our child (it cannot be waited for): it removes STATE when done.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (fs::exists(state)) {
        if (std::chrono::steady_clock::now() > deadline) {
            std::fprintf(stderr, "server_fixture: keeper %d did not stop\n", keeper);
            return 1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::printf("servers of %s stopped\n", state.c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string command = argc >= 2 ? argv[1] : "";
    if (command == "start" && argc == 4) return start(argv[2], argv[3]);
    if (command == "stop" && argc == 3) return stop(argv[2]);
    std::fprintf(
        stderr,
        "usage: server_fixture start postgres|sentinel|cluster|etcd|etcd_cluster STATE_FILE | stop STATE_FILE\n");
    return 2;
}

#include "local_servers/redis_server.hpp"

#include "local_servers/process_io.hpp"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace fencelock::local {

using detail::capture;
using detail::spawn;

std::uint16_t free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        if (fd >= 0) ::close(fd);
        throw std::runtime_error("free_port: cannot bind");
    }
    ::close(fd);
    return ntohs(addr.sin_port);
}

int run_command(const std::vector<std::string>& argv) {
    pid_t pid = spawn(argv);
    if (pid < 0) return -1;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

RedisServer::RedisServer(std::vector<std::string> extra_args, std::vector<std::string> env)
    : port_(free_port()), extra_args_(std::move(extra_args)), env_(std::move(env)) {
    dir_ = detail::make_temp_dir("redis");
    start();
}

RedisServer::~RedisServer() {
    kill();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

void RedisServer::start() {
    std::vector<std::string> argv{"redis-server", "--port", std::to_string(port_), "--bind", "127.0.0.1",
                                  "--save", "", "--appendonly", "no", "--dir", dir_.string(),
                                  "--logfile", (dir_ / "redis.log").string()};
    argv.insert(argv.end(), extra_args_.begin(), extra_args_.end());
    pid_ = spawn(argv, env_);
    if (pid_ < 0) throw std::runtime_error("cannot start redis-server (is it installed?)");
    // Wait for the server to answer; a fresh server needs a few milliseconds.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            throw std::runtime_error("redis-server exited at start; see " + (dir_ / "redis.log").string());
        }
        std::string pong = capture({"redis-cli", "-p", std::to_string(port_), "--no-auth-warning",
                                    "-e", "PING"});
        if (pong == "PONG" || pong.find("NOAUTH") != std::string::npos) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling a starting server
    }
    kill();
    throw std::runtime_error("redis-server did not answer PING within 10s");
}

void RedisServer::kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {}
    pid_ = -1;
}

void RedisServer::pause() { ::kill(pid_, SIGSTOP); }
void RedisServer::resume() { ::kill(pid_, SIGCONT); }

std::string RedisServer::cli(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{"redis-cli", "-p", std::to_string(port_), "--no-auth-warning"};
    argv.insert(argv.end(), args.begin(), args.end());
    return capture(argv);
}

std::string RedisServer::snapshot() const {
    // Keys are listed one per line; resource names in tests contain no newlines.
    std::string keys = cli({"--raw", "KEYS", "*"});
    std::vector<std::string> names;
    for (size_t start = 0; start < keys.size();) {
        size_t end = keys.find('\n', start);
        if (end == std::string::npos) end = keys.size();
        if (end > start) names.push_back(keys.substr(start, end - start));
        start = end + 1;
    }
    std::sort(names.begin(), names.end());
    std::string out;
    for (const auto& k : names)
        out += k + " " + cli({"TYPE", k}) + " " + cli({"--raw", "DUMP", k}) + "\n";
    return out;
}

}  // namespace fencelock::local

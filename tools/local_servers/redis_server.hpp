#pragma once
// A throwaway redis-server for tests, the demo and benches: a free loopback port, a private
// directory, stopped and removed when the object dies. No persistence unless asked for.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace fencelock::local {

/// A loopback TCP port nobody listens on right now (bind to port 0, read it back).
std::uint16_t free_port();

/// Runs `argv` to completion and returns its exit status (-1 if it did not start).
int run_command(const std::vector<std::string>& argv);

class RedisServer {
public:
    /// Starts redis-server with `extra_args` appended (e.g. {"--requirepass", "pw"}) and waits
    /// until it answers PING. Throws std::runtime_error when it does not start.
    /// `env` ("NAME=value") is added to its environment, e.g. a clock shim's (tests).
    explicit RedisServer(std::vector<std::string> extra_args = {}, std::vector<std::string> env = {});
    ~RedisServer();
    RedisServer(const RedisServer&) = delete;
    RedisServer& operator=(const RedisServer&) = delete;

    std::uint16_t port() const { return port_; }
    std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
    pid_t pid() const { return pid_; }

    /// Kills the server (SIGKILL) and waits for it to exit: all data is gone.
    void kill();
    /// Starts it again on the same port with the same arguments.
    void start();
    /// SIGSTOP / SIGCONT: the server keeps its sockets open but answers nothing.
    void pause();
    void resume();

    /// Runs redis-cli against the server and returns its stdout (trailing newline removed).
    std::string cli(const std::vector<std::string>& args) const;

    /// Every key with its type and serialized value: equal snapshots mean nothing changed.
    std::string snapshot() const;

private:
    std::uint16_t port_;
    std::filesystem::path dir_;
    std::vector<std::string> extra_args_;
    std::vector<std::string> env_;
    pid_t pid_ = -1;
};

}  // namespace fencelock::local

#include "local_servers/redis_server.hpp"

#include "local_servers/process_io.hpp"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
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
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const char* auth_clients(TlsClientAuth auth) {
    switch (auth) {
        case TlsClientAuth::required: return "yes";
        case TlsClientAuth::optional: return "optional";
        case TlsClientAuth::off: return "no";
    }
    return "yes";
}

std::vector<std::string> cli_tls_flags(const RedisTlsOptions& tls) {
    std::vector<std::string> flags{"--tls"};
    if (!tls.cli_verifies) flags.emplace_back("--insecure");
    else flags.insert(flags.end(), {"--cacert", tls.cli_ca_file.empty() ? tls.ca_cert_file : tls.cli_ca_file});
    if (!tls.cli_cert_file.empty()) flags.insert(flags.end(), {"--cert", tls.cli_cert_file, "--key", tls.cli_key_file});
    return flags;
}

namespace {

void check(const RedisServerOptions& options) {
    if (!options.tls) return;
    const RedisTlsOptions& tls = *options.tls;
    auto require = [](const std::string& value, const char* field) {
        if (value.empty()) throw std::invalid_argument(std::string("RedisTlsOptions::") + field + " is required");
    };
    require(tls.cert_file, "cert_file");
    require(tls.key_file, "key_file");
    require(tls.ca_cert_file, "ca_cert_file");
    if (tls.cli_cert_file.empty() != tls.cli_key_file.empty())
        throw std::invalid_argument("RedisTlsOptions::cli_cert_file and cli_key_file go together");
    if (tls.client_auth == TlsClientAuth::required && tls.cli_cert_file.empty())
        throw std::invalid_argument("RedisTlsOptions::cli_cert_file is required with TlsClientAuth::required");
}

}  // namespace

RedisServer::RedisServer(std::vector<std::string> extra_args, std::vector<std::string> env)
    : RedisServer(RedisServerOptions{.extra_args = std::move(extra_args), .env = std::move(env)}) {}

RedisServer::RedisServer(RedisServerOptions options) : options_(std::move(options)) {
    check(options_);
    const bool plaintext = !options_.tls || options_.tls->plaintext_port;
    if (plaintext) port_ = free_port();
    while (options_.tls && (tls_port_ == 0 || tls_port_ == port_)) tls_port_ = free_port();
    dir_ = detail::make_temp_dir("redis");
    try {
        if (options_.unix_socket) unix_path_ = (dir_ / "redis.sock").string();
        if (!options_.acl_users.empty()) {
            std::ofstream acl(dir_ / "users.acl");
            for (const auto& line : options_.acl_users) acl << "user " << line << "\n";
            if (!acl.flush()) throw std::runtime_error("cannot write " + (dir_ / "users.acl").string());
        }
        start();
    } catch (...) {
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);  // no destructor runs for a throwing constructor
        throw;
    }
}

RedisServer::~RedisServer() {
    kill();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

void RedisServer::start() {
    std::vector<std::string> argv{"redis-server",
                                  "--port",
                                  std::to_string(port_),
                                  "--bind",
                                  "127.0.0.1",
                                  "--save",
                                  "",
                                  "--appendonly",
                                  "no",
                                  "--dir",
                                  dir_.string(),
                                  "--logfile",
                                  (dir_ / "redis.log").string()};
    if (const auto& tls = options_.tls)
        argv.insert(argv.end(), {"--tls-port", std::to_string(tls_port_), "--tls-cert-file", tls->cert_file,
                                 "--tls-key-file", tls->key_file, "--tls-ca-cert-file", tls->ca_cert_file,
                                 "--tls-auth-clients", auth_clients(tls->client_auth)});
    if (!unix_path_.empty()) argv.insert(argv.end(), {"--unixsocket", unix_path_, "--unixsocketperm", "700"});
    if (!options_.acl_users.empty()) argv.insert(argv.end(), {"--aclfile", (dir_ / "users.acl").string()});
    argv.insert(argv.end(), options_.extra_args.begin(), options_.extra_args.end());
    pid_ = spawn(argv, options_.env);
    if (pid_ < 0) throw std::runtime_error("cannot start redis-server (is it installed?)");
    // Wait for the server to answer; a fresh server needs a few milliseconds.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::string pong;
    while (std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            throw std::runtime_error("redis-server exited at start; see " + (dir_ / "redis.log").string());
        }
        pong = cli({"-e", "PING"});
        if (pong == "PONG" || pong.find("NOAUTH") != std::string::npos) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling a starting server
    }
    kill();
    throw std::runtime_error("redis-server did not answer PING within 10s (redis-cli: " + pong + "); see " +
                             (dir_ / "redis.log").string());
}

void RedisServer::kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
}

void RedisServer::pause() { ::kill(pid_, SIGSTOP); }
void RedisServer::resume() { ::kill(pid_, SIGCONT); }

std::vector<std::string> RedisServer::cli_command() const {
    std::vector<std::string> argv{"redis-cli"};
    if (const auto& tls = options_.tls) {
        argv.insert(argv.end(), {"-p", std::to_string(tls_port_)});
        const auto flags = cli_tls_flags(*tls);
        argv.insert(argv.end(), flags.begin(), flags.end());
    } else {
        argv.insert(argv.end(), {"-p", std::to_string(port_)});
    }
    argv.emplace_back("--no-auth-warning");
    if (!options_.cli_user.empty()) argv.insert(argv.end(), {"--user", options_.cli_user});
    if (!options_.cli_password.empty()) argv.insert(argv.end(), {"-a", options_.cli_password});
    return argv;
}

std::string RedisServer::cli(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = cli_command();
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
    for (const auto& k : names) out += k + " " + cli({"TYPE", k}) + " " + cli({"--raw", "DUMP", k}) + "\n";
    return out;
}

}  // namespace fencelock::local

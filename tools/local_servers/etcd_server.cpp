#include "local_servers/etcd_server.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "local_servers/process_io.hpp"
#include "local_servers/redis_server.hpp"

namespace fencelock::local {
namespace {

using Clock = std::chrono::steady_clock;

// How long one /health or status request may take: a paused member accepts the connection
// (the kernel does) and never answers, so every look at it costs this much.
constexpr std::chrono::milliseconds request_timeout{1000};

class Socket {
public:
    Socket() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) {}
    ~Socket() {
        if (fd_ >= 0) ::close(fd_);
    }
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;
    int fd() const { return fd_; }

    // Waits until `events` are ready or `deadline` passes.
    bool wait(short events, Clock::time_point deadline) const {
        for (;;) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            if (left.count() <= 0) return false;
            pollfd p{fd_, events, 0};
            const int n = ::poll(&p, 1, static_cast<int>(left.count()));
            if (n > 0) return true;
            if (n < 0 && errno != EINTR) return false;
        }
    }

private:
    int fd_;
};

// The body of an HTTP/1.0 response whose status is 200; nullopt for any other.
std::optional<std::string> ok_body(const std::string& response) {
    if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12 || response.compare(9, 3, "200") != 0)
        return std::nullopt;
    const auto end_of_headers = response.find("\r\n\r\n");
    if (end_of_headers == std::string::npos) return std::nullopt;
    return response.substr(end_of_headers + 4);
}

// Whether `response` holds its whole body: the headers and, when they give one, Content-Length
// bytes after them. Without a length only the connection's end says so.
bool complete(const std::string& response) {
    const auto end_of_headers = response.find("\r\n\r\n");
    if (end_of_headers == std::string::npos) return false;
    std::string headers = response.substr(0, end_of_headers);
    for (char& c : headers) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const auto at = headers.find("\r\ncontent-length:");
    if (at == std::string::npos) return false;
    const std::size_t length = std::strtoul(headers.c_str() + at + 17, nullptr, 10);
    return response.size() >= end_of_headers + 4 + length;
}

std::uint64_t id_field(const nlohmann::json& object, const char* field) {
    // The gateway writes 64-bit integers as strings and leaves zero values out.
    const auto it = object.find(field);
    if (it == object.end()) return 0;
    if (it->is_string()) return std::stoull(it->get<std::string>());
    return it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
}

}  // namespace

std::optional<std::string> etcd_http(std::uint16_t port, const std::string& method, const std::string& path,
                                     const std::string& body, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    Socket socket;
    if (socket.fd() < 0) return std::nullopt;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    if (::connect(socket.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        if (errno != EINPROGRESS || !socket.wait(POLLOUT, deadline)) return std::nullopt;
        int error = 0;
        socklen_t len = sizeof error;
        if (::getsockopt(socket.fd(), SOL_SOCKET, SO_ERROR, &error, &len) != 0 || error != 0) return std::nullopt;
    }
    const std::string request = method + " " + path + " HTTP/1.0\r\nHost: 127.0.0.1:" + std::to_string(port) +
                                "\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body;
    for (std::size_t sent = 0; sent < request.size();) {
        if (!socket.wait(POLLOUT, deadline)) return std::nullopt;
        const ssize_t n = ::send(socket.fd(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
        if (n < 0 && errno != EAGAIN && errno != EINTR) return std::nullopt;
        if (n > 0) sent += static_cast<std::size_t>(n);
    }
    // Read until the body is complete, not until the server closes the connection: etcd
    // sometimes kept an HTTP/1.0 connection open for seconds after its answer.
    std::string response;
    char buf[4096];
    while (!complete(response)) {
        if (!socket.wait(POLLIN, deadline)) return std::nullopt;
        const ssize_t n = ::recv(socket.fd(), buf, sizeof buf, 0);
        if (n == 0) break;
        if (n < 0 && errno != EAGAIN && errno != EINTR) return std::nullopt;
        if (n > 0) response.append(buf, static_cast<std::size_t>(n));
    }
    return ok_body(response);
}

ProcessResult etcdctl_at(const std::string& endpoints, const std::vector<std::string>& args) {
    std::vector<std::string> argv{"etcdctl", "--endpoints=" + endpoints, "--dial-timeout=2s", "--command-timeout=5s"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, {"ETCDCTL_API=3"});
}

// The delegated-to constructor has finished when this one's body runs, so the destructor
// cleans up if the wait throws.
EtcdServer::EtcdServer(EtcdServerOptions options) : EtcdServer(std::move(options), EtcdMembership{}) {
    wait_until_healthy();
}

EtcdServer::EtcdServer(EtcdServerOptions options, EtcdMembership membership)
    : options_(std::move(options)), membership_(std::move(membership)) {
    if (options_.election_timeout < 5 * options_.heartbeat_interval)
        throw std::invalid_argument("EtcdServerOptions::election_timeout must be at least 5 heartbeat_intervals");
    if (membership_.client_port == 0) {  // alone: a one-member cluster of its own
        membership_.client_port = free_port();
        do membership_.peer_port = free_port();
        while (membership_.peer_port == membership_.client_port);
        membership_.name = "etcd0";
        membership_.initial_cluster = "etcd0=http://127.0.0.1:" + std::to_string(membership_.peer_port);
    }
    if (options_.tls) {
        do metrics_port_ = free_port();
        while (metrics_port_ == membership_.client_port || metrics_port_ == membership_.peer_port);
    }
    if (membership_.cluster_token.empty())
        membership_.cluster_token = "fencelock-" + std::to_string(::getpid()) + "-" + std::to_string(client_port());
    dir_ = detail::make_temp_dir("etcd");
    try {
        launch();
    } catch (...) {
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
        throw;
    }
}

EtcdServer::~EtcdServer() {
    kill_hard();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
}

void EtcdServer::launch() {
    const std::string client_url = (options_.tls ? "https://" : "http://") + endpoint();
    const std::string peer_url = "http://127.0.0.1:" + std::to_string(peer_port());
    // The initial-cluster flags only matter on the first start: a restarted member reads its
    // membership from the WAL in its data directory.
    std::vector<std::string> argv{"etcd",
                                  "--name=" + membership_.name,
                                  "--data-dir=" + (dir_ / "data").string(),
                                  "--listen-client-urls=" + client_url,
                                  "--advertise-client-urls=" + client_url,
                                  "--listen-peer-urls=" + peer_url,
                                  "--initial-advertise-peer-urls=" + peer_url,
                                  "--initial-cluster=" + membership_.initial_cluster,
                                  "--initial-cluster-token=" + membership_.cluster_token,
                                  "--initial-cluster-state=new",
                                  "--heartbeat-interval=" + std::to_string(options_.heartbeat_interval.count()),
                                  "--election-timeout=" + std::to_string(options_.election_timeout.count()),
                                  "--logger=zap",
                                  "--log-outputs=" + (dir_ / "etcd.log").string()};
    if (const auto& tls = options_.tls) {
        argv.insert(argv.end(), {"--cert-file=" + tls->cert_file, "--key-file=" + tls->key_file,
                                 "--listen-metrics-urls=http://127.0.0.1:" + std::to_string(metrics_port_)});
        if (!tls->ca_file.empty()) argv.push_back("--trusted-ca-file=" + tls->ca_file);
        if (tls->client_cert_auth) argv.push_back("--client-cert-auth");
    }
    argv.insert(argv.end(), options_.extra_args.begin(), options_.extra_args.end());
    pid_ = detail::spawn(argv, options_.env);
    paused_ = false;
    if (pid_ < 0) throw std::runtime_error("cannot start etcd (is etcd-server installed?)");
}

bool EtcdServer::healthy() const {
    if (!serving()) return false;
    const auto body = etcd_http(options_.tls ? metrics_port_ : client_port(), "GET", "/health", "", request_timeout);
    return body && body->find("\"health\":\"true\"") != std::string::npos;
}

template <class Ready>
void EtcdServer::wait_until(Ready ready, const std::string& what) {
    const auto deadline = Clock::now() + options_.start_timeout;
    const std::string log = (dir_ / "etcd.log").string();
    while (!ready()) {
        int status = 0;
        if (pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            throw std::runtime_error("etcd " + name() + " exited at start; see " + log);
        }
        if (Clock::now() >= deadline)
            throw std::runtime_error("etcd " + name() + " did not " + what + " within " +
                                     std::to_string(options_.start_timeout.count()) + " ms; see " + log);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));  // etcd starts on its own clock
    }
}

void EtcdServer::wait_until_healthy() {
    wait_until([this] { return healthy(); }, "serve");
}

bool EtcdServer::peer_ready() const {
    return serving() && etcd_http(peer_port(), "GET", "/members", "", request_timeout).has_value();
}

void EtcdServer::wait_until_peer_ready() {
    wait_until([this] { return peer_ready(); }, "serve its peers");
}

std::optional<EtcdMemberStatus> EtcdServer::status() const {
    if (!serving()) return std::nullopt;
    const auto body = etcd_http(client_port(), "POST", "/v3/maintenance/status", "{}", request_timeout);
    if (!body) return std::nullopt;
    const auto json = nlohmann::json::parse(*body, nullptr, false);
    if (json.is_discarded() || !json.contains("header")) return std::nullopt;
    const auto& header = json["header"];
    return EtcdMemberStatus{.member_id = id_field(header, "member_id"),
                            .leader_id = id_field(json, "leader"),
                            .raft_term = static_cast<std::int64_t>(id_field(header, "raft_term")),
                            .revision = static_cast<std::int64_t>(id_field(header, "revision"))};
}

void EtcdServer::pause() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGSTOP);
    paused_ = true;
}

void EtcdServer::resume() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGCONT);
    paused_ = false;
}

void EtcdServer::kill_hard() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    (void)wait_process(pid_);
    pid_ = -1;
    paused_ = false;
}

void EtcdServer::restart() {
    kill_hard();
    launch();
    wait_until_healthy();
}

ProcessResult EtcdServer::etcdctl(const std::vector<std::string>& args) const { return etcdctl_at(endpoint(), args); }

}  // namespace fencelock::local

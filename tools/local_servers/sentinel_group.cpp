#include "local_servers/sentinel_group.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "local_servers/process_io.hpp"

namespace fencelock::local {
namespace {

using Clock = std::chrono::steady_clock;

// Polls `done` until it holds or `timeout` passes; the servers change state on their own
// clocks (replication sync, sentinel gossip), so polling is the only way to wait for them.
template <class Done>
bool poll_until(std::chrono::milliseconds timeout, Done done) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
        if (done()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return done();
}

// redis-cli prints a RESP map or flat array one element per line: field, value, field, ...
std::map<std::string, std::string> fields(const std::string& text) {
    std::map<std::string, std::string> out;
    std::istringstream in(text);
    std::string key, value;
    while (std::getline(in, key) && std::getline(in, value)) out[key] = value;
    return out;
}

int count_online_replicas(const std::string& info) {
    int online = 0;
    for (std::size_t at = info.find("state=online"); at != std::string::npos; at = info.find("state=online", at + 1))
        ++online;
    return online;
}

// What a sentinel.conf says to serve and connect over TLS only, and the redis-cli options that
// reach a sentinel so configured.
std::string sentinel_tls_conf(const RedisTlsOptions& tls, std::uint16_t port) {
    std::ostringstream conf;
    conf << "port 0\ntls-port " << port << "\ntls-cert-file " << tls.cert_file << "\ntls-key-file " << tls.key_file
         << "\ntls-ca-cert-file " << tls.ca_cert_file << "\ntls-auth-clients " << auth_clients(tls.client_auth)
         << "\ntls-replication yes\n";
    if (!tls.cli_cert_file.empty())
        conf << "tls-client-cert-file " << tls.cli_cert_file << "\ntls-client-key-file " << tls.cli_key_file << "\n";
    return conf.str();
}

std::vector<std::string> sentinel_cli_flags(const SentinelGroupOptions& options) {
    std::vector<std::string> flags;
    if (options.tls) flags = cli_tls_flags(*options.tls);
    if (!options.sentinel_password.empty())
        flags.insert(flags.end(), {"--no-auth-warning", "-a", options.sentinel_password});
    return flags;
}

}  // namespace

SentinelServer::SentinelServer(const std::string& master_name, std::uint16_t master_port, int quorum,
                               const SentinelGroupOptions& options, const std::vector<std::string>& env)
    : port_(free_port()), dir_(detail::make_temp_dir("sentinel")), cli_flags_(sentinel_cli_flags(options)) {
    const auto conf = dir_ / "sentinel.conf";
    std::ofstream out(conf);
    if (options.tls) out << sentinel_tls_conf(*options.tls, port_);
    else out << "port " << port_ << "\n";
    if (!options.sentinel_password.empty())
        out << "requirepass " << options.sentinel_password << "\nsentinel sentinel-pass " << options.sentinel_password
            << "\n";
    out << "bind 127.0.0.1\ndir " << dir_.string() << "\nlogfile " << (dir_ / "sentinel.log").string()
        << "\nsentinel resolve-hostnames no"
        << "\nsentinel monitor " << master_name << " 127.0.0.1 " << master_port << " " << quorum
        << "\nsentinel down-after-milliseconds " << master_name << " " << options.down_after_ms
        << "\nsentinel failover-timeout " << master_name << " " << options.failover_timeout_ms
        << "\nsentinel parallel-syncs " << master_name << " 1\n";
    out.close();
    pid_ = detail::spawn({"redis-server", conf.string(), "--sentinel"}, env);
    if (pid_ < 0) throw std::runtime_error("cannot start redis-server --sentinel");
    if (!poll_until(std::chrono::seconds(10), [&] { return cli({"PING"}) == "PONG"; })) {
        kill();
        throw std::runtime_error("sentinel did not answer PING; see " + (dir_ / "sentinel.log").string());
    }
}

SentinelServer::~SentinelServer() {
    kill();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

void SentinelServer::kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
}

std::string SentinelServer::cli(const std::vector<std::string>& args) const { return cli_at(port_, args, cli_flags_); }

SentinelGroup::SentinelGroup(SentinelGroupOptions options) : options_(std::move(options)) {
    // Without this a replica waits 5 s before its first full sync.
    auto args = options_.server_args;
    args.insert(args.end(), {"--repl-diskless-sync-delay", "0"});
    const auto env_of = [](const std::vector<std::vector<std::string>>& envs, std::size_t i) {
        return i < envs.size() ? envs[i] : std::vector<std::string>{};
    };
    if (const auto& tls = options_.tls) {
        args.insert(args.end(), {"--tls-replication", "yes"});
        if (!tls->cli_cert_file.empty())
            args.insert(args.end(),
                        {"--tls-client-cert-file", tls->cli_cert_file, "--tls-client-key-file", tls->cli_key_file});
    }
    const auto server = [&](std::vector<std::string> server_args, std::size_t i) {
        return std::make_unique<RedisServer>(RedisServerOptions{.extra_args = std::move(server_args),
                                                                .env = env_of(options_.server_env, i),
                                                                .tls = options_.tls,
                                                                .acl_users = options_.server_acl_users});
    };
    servers_.push_back(server(args, 0));
    const std::uint16_t master_port = servers_[0]->serving_port();
    for (int i = 0; i < options_.replicas; ++i) {
        auto replica_args = args;
        replica_args.insert(replica_args.end(), {"--replicaof", "127.0.0.1", std::to_string(master_port)});
        servers_.push_back(server(replica_args, static_cast<std::size_t>(i) + 1));
    }
    const int quorum = options_.sentinels / 2 + 1;
    for (int i = 0; i < options_.sentinels; ++i)
        sentinels_.push_back(std::make_unique<SentinelServer>(options_.master_name, master_port, quorum, options_,
                                                              env_of(options_.sentinel_env, i)));
    wait_ready();
}

SentinelGroup::~SentinelGroup() {
    sentinels_.clear();  // first, so no sentinel reconfigures a server while it stops
    servers_.clear();
}

std::string SentinelGroup::url(std::string_view query) const {
    std::string url = options_.tls ? "rediss-sentinel://" : "redis-sentinel://";
    for (std::size_t i = 0; i < sentinels_.size(); ++i)
        url += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(sentinels_[i]->port());
    if (!query.empty()) url += "?" + std::string(query);
    return url + "#" + options_.master_name;
}

void wait_master_known_for(const SentinelGroupShape& group, std::chrono::milliseconds d) {
    const auto deadline = std::chrono::steady_clock::now() + d + std::chrono::seconds(30);
    for (;;) {
        bool known = true;
        for (const std::uint16_t port : group.sentinel_ports) {
            const std::string record =
                cli_at(port, {"SENTINEL", "MASTER", group.master_name}, group.sentinel_cli_flags);
            const auto at = record.find("role-reported-time\n");
            if (at == std::string::npos || std::stoll(record.substr(at + 19)) < d.count()) known = false;
        }
        if (known) return;
        if (std::chrono::steady_clock::now() >= deadline)
            throw std::runtime_error("the sentinels have not known the master for " + std::to_string(d.count()) +
                                     " ms");
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

std::string cli_at(std::uint16_t port, const std::vector<std::string>& args, const std::vector<std::string>& flags) {
    std::vector<std::string> argv{"redis-cli", "-p", std::to_string(port)};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), args.begin(), args.end());
    return detail::capture(argv);
}

std::optional<std::uint16_t> master_port_seen_by(std::uint16_t sentinel_port, const std::string& master_name,
                                                 const std::vector<std::string>& flags) {
    const auto out = cli_at(sentinel_port, {"SENTINEL", "get-master-addr-by-name", master_name}, flags);
    const auto newline = out.find('\n');
    if (newline == std::string::npos) return std::nullopt;
    try {
        return static_cast<std::uint16_t>(std::stoi(out.substr(newline + 1)));
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

std::optional<std::uint16_t> majority_master_port(const SentinelGroupShape& group) {
    std::map<std::uint16_t, std::size_t> votes;
    for (std::uint16_t sentinel : group.sentinel_ports)
        if (auto port = master_port_seen_by(sentinel, group.master_name, group.sentinel_cli_flags)) ++votes[*port];
    for (const auto& [port, n] : votes)
        if (n * 2 > group.sentinel_ports.size()) return port;
    return std::nullopt;
}

bool group_ready(const SentinelGroupShape& group) {
    const auto m = majority_master_port(group);
    if (!m || count_online_replicas(cli_at(*m, {"INFO", "replication"}, group.server_cli_flags)) < group.replicas)
        return false;
    const auto replicas = std::to_string(group.replicas);
    const auto others = std::to_string(group.sentinel_ports.size() - 1);
    for (std::uint16_t sentinel : group.sentinel_ports) {
        auto f = fields(cli_at(sentinel, {"SENTINEL", "master", group.master_name}, group.sentinel_cli_flags));
        if (f["num-slaves"] != replicas || f["num-other-sentinels"] != others || f["flags"] != "master") return false;
    }
    return true;
}

void wait_group_ready(const SentinelGroupShape& group, std::chrono::milliseconds timeout) {
    if (!poll_until(timeout, [&] { return group_ready(group); }))
        throw std::runtime_error("the Sentinel group did not become ready in time");
}

SentinelGroupShape SentinelGroup::shape() const {
    SentinelGroupShape out{.sentinel_ports = {},
                           .master_name = options_.master_name,
                           .replicas = options_.replicas,
                           .sentinel_cli_flags = sentinel_cli_flags(options_),
                           .server_cli_flags = options_.tls ? cli_tls_flags(*options_.tls)
                                                            : std::vector<std::string>{}};
    for (const auto& s : sentinels_) out.sentinel_ports.push_back(s->port());
    return out;
}

std::optional<std::uint16_t> SentinelGroup::master_port_seen_by(std::size_t i) const {
    return local::master_port_seen_by(sentinels_.at(i)->port(), options_.master_name, sentinel_cli_flags(options_));
}

std::optional<std::size_t> SentinelGroup::master() const {
    const auto port = majority_master_port(shape());
    for (std::size_t s = 0; port && s < servers_.size(); ++s)
        if (servers_[s]->serving_port() == *port) return s;
    return std::nullopt;
}

void SentinelGroup::wait_ready(std::chrono::milliseconds timeout) const { wait_group_ready(shape(), timeout); }

void SentinelGroup::cut_replication(std::size_t replica) {
    const auto m = master();
    if (!m) throw std::runtime_error("cut_replication: no master");
    servers_.at(replica)->pause();
    servers_[*m]->cli({"CLIENT", "KILL", "TYPE", "replica"});
}

std::size_t SentinelGroup::wait_for_new_master(std::size_t old_master, std::chrono::milliseconds timeout) const {
    std::optional<std::size_t> found;
    const bool moved = poll_until(timeout, [&] {
        found = master();
        if (!found || *found == old_master) return false;
        return servers_[*found]->cli({"ROLE"}).starts_with("master");
    });
    if (!moved) throw std::runtime_error("no failover away from server " + std::to_string(old_master));
    return *found;
}

}  // namespace fencelock::local

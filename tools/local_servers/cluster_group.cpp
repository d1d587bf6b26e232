#include "local_servers/cluster_group.hpp"

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "local_servers/process_io.hpp"
#include "local_servers/sentinel_group.hpp"

namespace fencelock::local {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

// CLUSTER NODES: "id host:port@bus flags master ping pong epoch state slot slot...". The
// masters that serve slots, as "host:port" -> slot ranges text, sorted: equal between nodes
// means they agree on the map.
std::string slot_owners(std::uint16_t port, const std::vector<std::string>& flags = {}) {
    std::vector<std::string> owners;
    for (const auto& line : lines(cli_at(port, {"CLUSTER", "NODES"}, flags))) {
        std::istringstream in(line);
        std::vector<std::string> f;
        for (std::string w; in >> w;) f.push_back(w);
        if (f.size() < 9 || f[2].find("master") == std::string::npos || f[2].find("fail") != std::string::npos)
            continue;
        std::string slots;
        for (std::size_t i = 8; i < f.size(); ++i)
            if (f[i].front() != '[') slots += f[i] + " ";  // "[slot->-id]": a migration in flight
        if (!slots.empty()) owners.push_back(f[1].substr(0, f[1].find('@')) + " " + slots);
    }
    std::sort(owners.begin(), owners.end());
    std::string out;
    for (const auto& o : owners) out += o + "\n";
    return out;
}

}  // namespace

bool cluster_ready(const std::vector<std::uint16_t>& ports, int masters, const std::vector<std::string>& flags) {
    std::optional<std::string> agreed;
    for (std::uint16_t p : ports) {
        const std::string info = cli_at(p, {"CLUSTER", "INFO"}, flags);
        if (info.find("Could not connect") != std::string::npos || info.empty()) continue;  // a killed node
        if (info.find("cluster_state:ok") == std::string::npos) return false;
        if (info.find("cluster_slots_assigned:16384") == std::string::npos) return false;
        const std::string owners = slot_owners(p, flags);
        if (agreed && *agreed != owners) return false;
        agreed = owners;
    }
    return agreed && static_cast<int>(lines(*agreed).size()) == masters;
}

void wait_cluster_ready(const std::vector<std::uint16_t>& ports, int masters, std::chrono::milliseconds timeout,
                        const std::vector<std::string>& flags) {
    const auto deadline = Clock::now() + timeout;
    while (!cluster_ready(ports, masters, flags)) {
        if (Clock::now() > deadline) throw std::runtime_error("the cluster did not reach cluster_state:ok in time");
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the nodes gossip on their own clock
    }
}

std::optional<std::uint16_t> slot_master_port(std::uint16_t port, std::uint16_t slot,
                                              const std::vector<std::string>& flags) {
    // CLUSTER SLOTS in redis-cli's flat output: first, last, ip, port, id, ... per range. Read
    // CLUSTER NODES instead: one line per node with its ranges.
    for (const auto& line : lines(cli_at(port, {"CLUSTER", "NODES"}, flags))) {
        std::istringstream in(line);
        std::vector<std::string> f;
        for (std::string w; in >> w;) f.push_back(w);
        if (f.size() < 9 || f[2].find("master") == std::string::npos) continue;
        for (std::size_t i = 8; i < f.size(); ++i) {
            if (f[i].front() == '[') continue;
            const auto dash = f[i].find('-');
            const int first = std::stoi(f[i].substr(0, dash));
            const int last = dash == std::string::npos ? first : std::stoi(f[i].substr(dash + 1));
            if (slot >= first && slot <= last) {
                const std::string address = f[1].substr(0, f[1].find('@'));
                return static_cast<std::uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
            }
        }
    }
    return std::nullopt;
}

std::string node_id(std::uint16_t port) { return cli_at(port, {"CLUSTER", "MYID"}); }

std::vector<std::uint16_t> master_ports(std::uint16_t port) {
    std::vector<std::uint16_t> out;
    for (const auto& owner : lines(slot_owners(port))) {
        const std::string address = owner.substr(0, owner.find(' '));
        out.push_back(static_cast<std::uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
    }
    return out;
}

SlotMigration::SlotMigration(std::vector<std::uint16_t> ports, std::uint16_t slot, std::uint16_t to_port)
    : ports_(std::move(ports)), slot_(slot), to_(to_port) {
    const auto from = slot_master_port(to_port, slot);
    if (!from) throw std::runtime_error("slot " + std::to_string(slot) + " has no master");
    from_ = *from;
}

void SlotMigration::begin() {
    const std::string slot = std::to_string(slot_);
    // The target first, so the source never sends ASK to a node that would refuse it.
    if (cli_at(to_, {"CLUSTER", "SETSLOT", slot, "IMPORTING", node_id(from_)}) != "OK" ||
        cli_at(from_, {"CLUSTER", "SETSLOT", slot, "MIGRATING", node_id(to_)}) != "OK")
        throw std::runtime_error("CLUSTER SETSLOT " + slot + " MIGRATING/IMPORTING refused");
}

int SlotMigration::move_keys() {
    int moved = 0;
    for (;;) {
        const auto keys = lines(cli_at(from_, {"--raw", "CLUSTER", "GETKEYSINSLOT", std::to_string(slot_), "100"}));
        if (keys.empty() || (keys.size() == 1 && keys[0].empty())) return moved;
        std::vector<std::string> migrate{"MIGRATE", "127.0.0.1", std::to_string(to_), "", "0", "5000", "KEYS"};
        migrate.insert(migrate.end(), keys.begin(), keys.end());
        const std::string answer = cli_at(from_, migrate);
        if (answer != "OK") throw std::runtime_error("MIGRATE: " + answer);
        moved += static_cast<int>(keys.size());
    }
}

void SlotMigration::finish() {
    const std::vector<std::string> assign{"CLUSTER", "SETSLOT", std::to_string(slot_), "NODE", node_id(to_)};
    // Target, then source, then the other masters (the order redis-cli uses).
    if (cli_at(to_, assign) != "OK" || cli_at(from_, assign) != "OK")
        throw std::runtime_error("CLUSTER SETSLOT NODE refused");
    for (std::uint16_t m : master_ports(to_))
        if (m != to_ && m != from_) (void)cli_at(m, assign);
}

ClusterGroup::ClusterGroup(ClusterGroupOptions options)
    : options_(std::move(options)),
      cli_flags_(options_.tls ? cli_tls_flags(*options_.tls) : std::vector<std::string>{}) {
    const int total = options_.masters * (1 + options_.replicas_per_master);
    for (int i = 0; i < total; ++i) {
        // The bus port defaults to port + 10000, which is out of range for ports above
        // 55535: give it a free port of its own.
        std::vector<std::string> args{"--cluster-enabled",
                                      "yes",
                                      "--cluster-config-file",
                                      "nodes.conf",
                                      "--cluster-node-timeout",
                                      std::to_string(options_.node_timeout_ms),
                                      "--cluster-port",
                                      std::to_string(free_port()),
                                      "--repl-diskless-sync-delay",
                                      "0"};
        if (const auto& tls = options_.tls) {
            args.insert(args.end(), {"--tls-cluster", "yes", "--tls-replication", "yes"});
            if (!tls->cli_cert_file.empty())
                args.insert(args.end(),
                            {"--tls-client-cert-file", tls->cli_cert_file, "--tls-client-key-file", tls->cli_key_file});
        }
        args.insert(args.end(), options_.server_args.begin(), options_.server_args.end());
        const auto i_env = static_cast<std::size_t>(i);
        servers_.push_back(std::make_unique<RedisServer>(RedisServerOptions{
            .extra_args = args,
            .env = i_env < options_.server_env.size() ? options_.server_env[i_env] : std::vector<std::string>{},
            .tls = options_.tls,
            .acl_users = options_.server_acl_users}));
    }
    std::vector<std::string> create{"redis-cli", "--cluster", "create"};
    for (const std::uint16_t port : ports()) create.push_back("127.0.0.1:" + std::to_string(port));
    for (const char* a : {"--cluster-replicas", "", "--cluster-yes"}) create.emplace_back(a);
    create[create.size() - 2] = std::to_string(options_.replicas_per_master);
    create.insert(create.end(), cli_flags_.begin(), cli_flags_.end());
    if (run_command(create) != 0) throw std::runtime_error("redis-cli --cluster create failed");
    wait_cluster_ready(ports(), options_.masters, std::chrono::seconds(60), cli_flags_);
}

ClusterGroup::~ClusterGroup() = default;

std::string ClusterGroup::url() const {
    std::string url = options_.tls ? "rediss-cluster://" : "redis-cluster://";
    for (std::size_t i = 0; i < servers_.size(); ++i)
        url += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(servers_[i]->serving_port());
    return url;
}

std::vector<std::uint16_t> ClusterGroup::ports() const {
    std::vector<std::uint16_t> out;
    for (const auto& s : servers_) out.push_back(s->serving_port());
    return out;
}

std::size_t ClusterGroup::index_of(std::uint16_t port) const {
    for (std::size_t i = 0; i < servers_.size(); ++i)
        if (servers_[i]->serving_port() == port) return i;
    throw std::out_of_range("no server of the cluster on port " + std::to_string(port));
}

std::size_t ClusterGroup::replica_of(std::uint16_t port) {
    for (std::size_t i = 0; i < servers_.size(); ++i) {
        std::istringstream role(servers_[i]->cli({"ROLE"}));  // "slave", host, port, ...
        std::string kind, host, master_port;
        role >> kind >> host >> master_port;
        if (kind == "slave" && master_port == std::to_string(port)) return i;
    }
    throw std::runtime_error("no replica of " + std::to_string(port));
}

std::uint16_t ClusterGroup::wait_for_takeover(std::uint16_t dead_port, std::uint16_t slot,
                                              std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    // Ask a node that is running: the others' view of the slot changes once the replica won
    // its election and its claim reached them.
    std::uint16_t asked = 0;
    for (std::uint16_t p : ports())
        if (p != dead_port) asked = p;
    std::optional<std::uint16_t> owner;
    while (!(owner = slot_master_port(asked, slot, cli_flags_)) || *owner == dead_port) {
        if (Clock::now() > deadline) throw std::runtime_error("no node took over from " + std::to_string(dead_port));
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the nodes decide on their own clock
    }
    wait_cluster_ready(ports(), options_.masters,
                       std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()), cli_flags_);
    return *owner;
}

}  // namespace fencelock::local

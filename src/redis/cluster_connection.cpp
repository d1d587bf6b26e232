#include "redis/cluster_connection.hpp"

#include <algorithm>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "fencelock/error.hpp"
#include "redis/cluster_redirect.hpp"
#include "redis/cluster_slot.hpp"
#include "redis/cluster_slot_map.hpp"

namespace fencelock::detail {
namespace {

using clock = std::chrono::steady_clock;

bool is_transaction(std::span<const std::vector<std::string_view>> commands) {
    return std::ranges::any_of(
        commands, [](const auto& argv) { return !argv.empty() && (argv[0] == "MULTI" || argv[0] == "multi"); });
}

bool is_wait(std::span<const std::string_view> argv) {
    return !argv.empty() && (argv[0] == "WAIT" || argv[0] == "wait");
}

// The answer to a batch's closing WAIT sent to every node the batch wrote to: the fewest
// replicas any node counted (every write is on at least that many), an error reply if one
// node gave one; 0 (not acknowledged) if `resent`: commands resent after a redirect reached
// Redis after the WAITs, which therefore do not cover them.
Reply combined_wait(std::span<const Reply> answers, bool resent) {
    if (resent) return Reply::make_integer(0);
    const Reply* fewest = nullptr;
    for (const Reply& r : answers) {
        if (r.kind != Reply::Kind::integer) return r;
        if (!fewest || r.integer < fewest->integer) fewest = &r;
    }
    return fewest ? *fewest : Reply::make_integer(0);
}

// The answer a caller gets when the cluster kept redirecting until the deadline: an error
// reply that maps to server_busy (nothing ran; retry later), like TRYAGAIN itself.
Reply gave_up(const Reply& last) {
    if (last.str.starts_with("TRYAGAIN") || last.str.starts_with("CLUSTERDOWN")) return last;
    return Reply::make_error("TRYAGAIN fencelock: too many cluster redirects (last: " + last.str + ")");
}

class ClusterConnection final : public Connection, public SlotRoutes {
public:
    ClusterConnection(ConnectionSettings settings, NodeFactory factory)
        : settings_(std::move(settings)), factory_(std::move(factory)) {}

    std::expected<Reply, std::error_code> command(std::span<const std::string_view> argv) override {
        return routed(argv, clock::now() + settings_.command_timeout);
    }

    std::expected<std::vector<Reply>, std::error_code> pipeline(
        std::span<const std::vector<std::string_view>> commands) override {
        if (commands.empty()) return std::vector<Reply>{};
        const auto deadline = clock::now() + settings_.command_timeout;
        if (is_transaction(commands)) return whole_pipeline(commands);
        // Replica acknowledgement: WAIT counts the replicas that acknowledged the writes made
        // before it on its own connection, so a closing WAIT is sent to every node of the
        // batch, after that node's part, and answered by combined_wait().
        const bool closing_wait = commands.size() > 1 && is_wait(commands.back());
        const std::vector<std::string_view>* const wait = closing_wait ? &commands.back() : nullptr;
        if (closing_wait) commands = commands.first(commands.size() - 1);

        // One group per node, in the order of the batch.
        struct Group {
            ServerAddress node;
            std::vector<std::size_t> members;
        };
        std::vector<Group> groups;
        for (std::size_t i = 0; i < commands.size(); ++i) {
            auto node = node_for(routing_key(commands[i]));
            if (!node) return std::unexpected(node.error());
            auto g = std::ranges::find(groups, *node, &Group::node);
            if (g == groups.end()) g = groups.insert(groups.end(), Group{*node, {}});
            g->members.push_back(i);
        }
        // Every node's part at once: the first on this thread, the others on their own, so the
        // batch takes the slowest node's round trip, not the sum of them.
        using Part = std::expected<std::vector<Reply>, std::error_code>;
        auto send_part = [&](const Group& g) -> Part {
            std::vector<std::vector<std::string_view>> part;
            for (std::size_t i : g.members) part.push_back(commands[i]);
            if (wait) part.push_back(*wait);
            return node(g.node).pipeline(part);
        };
        std::vector<std::future<Part>> others;
        for (std::size_t k = 1; k < groups.size(); ++k)
            others.push_back(std::async(std::launch::async, send_part, std::cref(groups[k])));
        std::vector<Part> parts;
        parts.push_back(send_part(groups.front()));
        for (auto& f : others) parts.push_back(f.get());

        std::vector<Reply> replies(commands.size());
        std::vector<std::size_t> resend;
        std::vector<Reply> waits;
        for (std::size_t k = 0; k < groups.size(); ++k) {
            const Group& g = groups[k];
            auto& got = parts[k];
            if (!got && got.error() != errc::unavailable) return std::unexpected(got.error());
            if (got && closing_wait) {
                waits.push_back(std::move(got->back()));
                got->pop_back();
            }
            for (std::size_t j = 0; j < g.members.size(); ++j) {
                // Not written (unavailable), or refused by a redirect: sent again on its own.
                if (!got ||
                    RedirectPolicy(deadline).on_reply((*got)[j], g.node, clock::now()).kind != RedirectStep::Kind::done)
                    resend.push_back(g.members[j]);
                else replies[g.members[j]] = std::move((*got)[j]);
            }
        }
        for (std::size_t i : resend) {
            auto again = routed(commands[i], deadline);
            if (!again) return std::unexpected(again.error());
            replies[i] = std::move(*again);
        }
        if (closing_wait) replies.push_back(combined_wait(waits, !resend.empty()));
        return replies;
    }

    std::optional<ServerAddress> master_hint(std::string_view key) {
        std::lock_guard lock(map_mutex_);
        if (epoch_ == 0) return std::nullopt;
        return map_.master_of(key_slot(key));
    }

    std::expected<std::vector<Connection*>, std::error_code> masters() {
        if (auto ec = ensure_map()) return std::unexpected(ec);
        std::vector<ServerAddress> addresses;
        {
            std::lock_guard lock(map_mutex_);
            addresses = map_.masters();
        }
        std::vector<Connection*> out;
        for (const auto& a : addresses) out.push_back(&node(a));
        return out;
    }

    std::optional<ServerAddress> master_of(std::uint16_t slot) override {
        std::lock_guard lock(map_mutex_);
        return map_.master_of(slot);
    }

    void moved(std::uint16_t slot, const ServerAddress& to) override {
        std::lock_guard lock(map_mutex_);
        map_.moved(slot, to);
    }

    std::error_code load() override { return reload(epoch()); }

private:
    // One command, following the cluster until it answers, gives up, or `deadline` passes.
    std::expected<Reply, std::error_code> routed(std::span<const std::string_view> argv, clock::time_point deadline) {
        const auto key = routing_key(argv);
        RedirectPolicy policy(deadline);
        std::optional<ServerAddress> ask, moved_to;
        for (;;) {
            const std::uint64_t seen = epoch();
            // After MOVED the command goes where the redirect said, whatever key it is
            // routed by (a command whose key is not argv[1] still reaches its node).
            const auto named = ask ? ask : moved_to;
            auto target = named ? std::expected<ServerAddress, std::error_code>(*named) : node_for(key);
            std::expected<Reply, std::error_code> reply = std::unexpected(target ? std::error_code{} : target.error());
            if (target && ask) {
                // ASKING applies to the next command on the same connection: one pipeline
                // keeps the two together, whatever else the socket carries.
                const std::vector<std::vector<std::string_view>> pair{{"ASKING"}, {argv.begin(), argv.end()}};
                auto both = node(*target).pipeline(pair);
                reply = both ? std::expected<Reply, std::error_code>(std::move(both->back()))
                             : std::unexpected(both.error());
            } else if (target) {
                reply = node(*target).command(argv);
            }
            ask.reset();
            moved_to.reset();
            const auto step = reply ? policy.on_reply(*reply, *target, clock::now())
                                    : policy.on_transport_error(reply.error(), clock::now());
            switch (step.kind) {
                case RedirectStep::Kind::done: return reply;
                case RedirectStep::Kind::moved:
                    moved(step.redirect.slot, step.redirect.to);
                    moved_to = step.redirect.to;
                    break;
                case RedirectStep::Kind::ask: ask = step.redirect.to; break;
                case RedirectStep::Kind::wait: std::this_thread::sleep_for(step.delay); break;
                case RedirectStep::Kind::refresh:
                    std::this_thread::sleep_for(step.delay);
                    if (auto ec = reload(seen); ec && classify(ec) == failure_kind::fatal) return std::unexpected(ec);
                    break;
                case RedirectStep::Kind::give_up:
                    if (reply) return gave_up(*reply);
                    return std::unexpected(step.error);
            }
        }
    }

    // A transaction cannot be split or resent in part: it goes whole to its first key's node.
    std::expected<std::vector<Reply>, std::error_code> whole_pipeline(
        std::span<const std::vector<std::string_view>> commands) {
        std::optional<std::string_view> key;
        for (const auto& argv : commands)
            if ((key = routing_key(argv))) break;
        auto target = node_for(key);
        if (!target) return std::unexpected(target.error());
        return node(*target).pipeline(commands);
    }

    // The master of `key`'s slot (any master for a keyless command), loading the map first.
    std::expected<ServerAddress, std::error_code> node_for(std::optional<std::string_view> key) {
        if (auto ec = ensure_map()) return std::unexpected(ec);
        std::lock_guard lock(map_mutex_);
        if (!key) {
            auto all = map_.masters();
            if (!all.empty()) return all.front();
        } else if (auto master = map_.master_of(key_slot(*key))) {
            return *master;
        }
        // A slot without a master (a failover under way): as if its node were unreachable.
        return std::unexpected(make_error_code(errc::unavailable));
    }

    std::uint64_t epoch() {
        std::lock_guard lock(map_mutex_);
        return epoch_;
    }

    std::error_code ensure_map() {
        if (epoch() != 0) return {};
        return reload(0);
    }

    // Asks the known masters, then the seeds, for CLUSTER SLOTS; the first good answer
    // replaces the map. `seen`: the epoch the caller acted on; if another thread reloaded
    // since, its map is used instead of asking again.
    std::error_code reload(std::uint64_t seen) {
        std::lock_guard reloading(reload_mutex_);
        std::vector<ServerAddress> candidates;
        {
            std::lock_guard lock(map_mutex_);
            if (epoch_ != seen) return {};
            candidates = map_.masters();
        }
        for (const auto& s : settings_.endpoint.cluster_seeds)
            if (std::ranges::find(candidates, ServerAddress{s.host, s.port}) == candidates.end())
                candidates.push_back({s.host, s.port});
        std::error_code last = errc::unavailable;
        for (const auto& at : candidates) {
            const std::string_view argv[] = {"CLUSTER", "SLOTS"};
            auto reply = node(at).command(argv);
            if (!reply) {
                if (classify(reply.error()) == failure_kind::fatal) return reply.error();  // AUTH, eviction
                last = reply.error();
                continue;
            }
            if (reply->kind == Reply::Kind::error) {
                if (reply->str.find("cluster support disabled") != std::string::npos) return errc::not_cluster;
                last = error_from_reply(reply->str);
                continue;
            }
            auto map = SlotMap::from_cluster_slots(*reply, at);
            if (!map || map->masters().empty()) {
                last = map ? make_error_code(errc::server_busy) : map.error();  // no slots assigned yet
                continue;
            }
            std::lock_guard lock(map_mutex_);
            map_ = std::move(*map);
            ++epoch_;
            return {};
        }
        return last;
    }

    Connection& node(const ServerAddress& at) {
        std::lock_guard lock(nodes_mutex_);
        for (auto& [address, c] : nodes_)
            if (address == at) return *c;
        nodes_.emplace_back(at, factory_(node_settings(settings_, at)));
        return *nodes_.back().second;
    }

    const ConnectionSettings settings_;
    const NodeFactory factory_;
    std::mutex reload_mutex_;  ///< one reload at a time; taken before map_mutex_
    std::mutex map_mutex_;
    SlotMap map_;
    std::uint64_t epoch_ = 0;  ///< reloads so far; 0: never loaded
    std::mutex nodes_mutex_;
    std::vector<std::pair<ServerAddress, std::unique_ptr<Connection>>> nodes_;  ///< never shrinks
};

}  // namespace

ConnectionSettings node_settings(const ConnectionSettings& settings, const ServerAddress& at) {
    ConnectionSettings s = settings;
    s.endpoint.host = at.host;
    s.endpoint.port = at.port;
    s.endpoint.cluster_seeds.clear();
    s.topology = single_server(s.endpoint);
    return s;
}

std::unique_ptr<Connection> make_cluster_connection(ConnectionSettings settings, NodeFactory node_factory) {
    return std::make_unique<ClusterConnection>(std::move(settings), std::move(node_factory));
}

std::unique_ptr<Connection> make_endpoint_connection(ConnectionSettings settings, const NodeFactory& node_factory) {
    if (settings.endpoint.uses_cluster()) return make_cluster_connection(std::move(settings), node_factory);
    return node_factory(std::move(settings));
}

SlotRoutes* slot_routes(Connection& c) { return dynamic_cast<ClusterConnection*>(&c); }

std::expected<std::vector<Connection*>, std::error_code> each_master(Connection& c) {
    if (auto* cluster = dynamic_cast<ClusterConnection*>(&c)) return cluster->masters();
    return std::vector<Connection*>{&c};
}

std::optional<ServerAddress> master_hint(Connection& c, std::string_view key) {
    if (auto* cluster = dynamic_cast<ClusterConnection*>(&c)) return cluster->master_hint(key);
    return std::nullopt;
}

}  // namespace fencelock::detail

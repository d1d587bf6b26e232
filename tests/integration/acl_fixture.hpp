#pragma once
// The ACL tests' fixture: ops/redis/fencelock.acl read from the source tree, a redis-server that
// loaded it (test passwords in place of its placeholders), clients as each role's user, and
// what the server says about them (ACL LOG, INFO commandstats).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fencelock/client.hpp"
#include "fencelock/error.hpp"
#include "fencelock/redis_url.hpp"
#include "local_servers/redis_server.hpp"
#include "support/eventually.hpp"
#include "support/shipped_acl.hpp"
#include "support/temp_dir.hpp"

namespace fencelock::test_support {

// Sent only to a master the sentinels named (ROLE) or to Cluster nodes (CLUSTER SLOTS, ASKING):
// the Sentinel and Cluster suites run those paths. INFO is the handshake's, and this test reads
// INFO itself: AclTest.EvictionCheckReadsThePolicyFromInfoForEveryUser shows what INFO is for.
inline const std::set<std::string> not_run_here = {"role", "cluster|slots", "asking", "info"};

struct Denial {
    std::string reason, context, object, username;
};

class AclTest : public ::testing::Test {
protected:
    void SetUp() override {
        users = shipped_users();
        ASSERT_EQ(users.size(), 3u);
        std::ofstream out(dir.path() / "fencelock.acl");
        for (const auto& u : users) {
            out << "user " << u.name;
            for (const auto& r : with_test_password(u)) out << " " << r;
            out << "\n";
        }
        out.close();
        redis = std::make_unique<local::RedisServer>(
            std::vector<std::string>{"--aclfile", (dir.path() / "fencelock.acl").string()});
    }

    const AclUser& user(const std::string& name) const {
        for (const auto& u : users)
            if (u.name == name) return u;
        throw std::runtime_error("no user " + name + " in " + shipped_file);
    }
    /// `name`'s line less `rule`, which must be in it.
    std::vector<std::string> rules_without(const std::string& name, const std::string& rule) const {
        auto rules = with_test_password(user(name));
        const auto at = std::ranges::find(rules, rule);
        EXPECT_NE(at, rules.end()) << name << "'s line has no " << rule;
        if (at != rules.end()) rules.erase(at);
        return rules;
    }
    /// Replaces `name`'s permissions (the lines start with `reset`: exactly these rules).
    void set_rules(const std::string& name, const std::vector<std::string>& rules) {
        std::vector<std::string> argv{"ACL", "SETUSER", name};
        argv.insert(argv.end(), rules.begin(), rules.end());
        ASSERT_EQ(redis->cli(argv), "OK");
    }

    /// In database 1, so that SELECT runs too.
    RedisEndpoint endpoint_as(const std::string& name) const {
        return *parse_redis_url("redis://" + name + ":" + password_of(name) +
                                "@127.0.0.1:" + std::to_string(redis->port()) + "/1");
    }
    LockClient client_as(const std::string& name, ClientOptions options = {}) const {
        options.endpoint = endpoint_as(name);
        return LockClient::create(std::move(options)).value();
    }

    /// ACL LOG's entries, newest first.
    std::vector<Denial> denials() const {
        const auto log = nlohmann::json::parse(redis->cli({"-3", "--json", "ACL", "LOG", "1000"}));
        std::vector<Denial> out;
        for (const auto& e : log)
            out.push_back({e.at("reason").get<std::string>(), e.at("context").get<std::string>(),
                           e.at("object").get<std::string>(), e.at("username").get<std::string>()});
        return out;
    }
    /// Every refusal but CONFIG GET's, as "user: reason context object" lines.
    std::string unexpected_denials() const {
        std::string out;
        for (const auto& d : denials())
            if (!(d.reason == "command" && d.object == "config|get"))
                out += d.username + ": " + d.reason + " " + d.context + " " + d.object + "\n";
        return out;
    }
    bool denied(const std::string& reason, const std::string& context, const std::string& object) const {
        return std::ranges::any_of(denials(), [&](const Denial& d) {
            return d.reason == reason && d.context == context && d.object == object;
        });
    }
    /// Calls of `command` since the last reset_stats() (scripts' calls included).
    long calls(const std::string& command) const {
        const std::string stats = redis->cli({"INFO", "commandstats"});
        const std::string marker = "cmdstat_" + command + ":calls=";
        const auto at = stats.find(marker);
        return at == std::string::npos ? 0 : std::stol(stats.substr(at + marker.size()));
    }
    /// The commands `name`'s line grants that nobody ran since the last reset_stats(), beyond
    /// `also` and those this test cannot run (not_run_here).
    std::string granted_unused(const std::string& name, const std::set<std::string>& also = {}) const {
        std::string out;
        for (const auto& r : user(name).rules)
            if (r.starts_with("+") && !not_run_here.contains(r.substr(1)) && !also.contains(r.substr(1)) &&
                calls(r.substr(1)) == 0)
                out += r + " ";
        return out;
    }
    void reset_stats() {
        ASSERT_EQ(redis->cli({"CONFIG", "RESETSTAT"}), "OK");
        ASSERT_EQ(redis->cli({"ACL", "LOG", "RESET"}), "OK");
    }
    std::string type_of(const std::string& key) const { return redis->cli({"-n", "1", "TYPE", key}); }
    long subscribers(const std::string& channel) const {
        const std::string out = redis->cli({"PUBSUB", "SHARDNUMSUB", channel});
        return std::stol(out.substr(out.find('\n') + 1));
    }
    /// A lease on `r` its holder keeps for a minute unless it releases it (no keeper).
    static std::optional<Lease> hold_for_a_minute(LockClient& c, const ResourceName& r) {
        auto held = c.try_acquire(r, {.lease = std::chrono::seconds(60)});
        if (!held || !held->acquired()) return std::nullopt;
        return held->lease;
    }
    static bool has(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

    /// `ec` is a NOPERM refusal whose detail names `name`: the command refused, quoted as Redis
    /// quotes it ("'evalsha'"), or a key the detail lists. Only the NOPERM prefix and the name
    /// are matched, as the words between are not stable: 7.0's "this user has no permissions to
    /// run the 'evalsha' command" is "User u has no permissions to run ..." in 7.2, and "... to
    /// access one of the keys used as arguments" became "No permissions to access a key".
    static void expect_noperm(std::error_code ec, std::string_view name) {
        EXPECT_EQ(ec, errc::auth_failed) << ec.message();
        EXPECT_EQ(error_cause(ec), "noperm");
        EXPECT_TRUE(error_detail(ec).starts_with("NOPERM ")) << error_detail(ec);
        EXPECT_TRUE(has(error_detail(ec), name)) << error_detail(ec);
    }

    TempDir dir{"fencelock-acl"};
    std::vector<AclUser> users;
    std::unique_ptr<local::RedisServer> redis;
};

}  // namespace fencelock::test_support

// The CLI through redis-cluster://: the lock commands, `list` and `audit` over every master,
// `force-release` with its audit entry in the lock's slot (CROSSSLOT before audit:{R}), `run`
// with the URL from the environment, and the bad inputs' exit codes.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "cluster/cluster_fixture.hpp"
#include "local_servers/child_process.hpp"
#include "local_servers/cluster_group.hpp"
#include "local_servers/redis_server.hpp"
#include "support/eventually.hpp"

namespace fencelock::test_support {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

#ifdef FENCELOCK_CLI
local::ProcessResult cli(const std::vector<std::string>& args, const std::string& url) {
    std::vector<std::string> argv{FENCELOCK_CLI, "--redis", url};
    argv.insert(argv.end(), args.begin(), args.end());
    return local::run_process(argv);
}

std::vector<json> json_lines(const std::string& out) {
    std::vector<json> lines;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) lines.push_back(json::parse(line));
    return lines;
}

TEST(ClusterCli, ListAndAuditCoverEveryMasterAndForceReleaseIsAudited) {
    auto& cluster = SharedCluster::get();
    const std::string stem = "clicl" + std::to_string(::getpid());
    std::set<std::string> names;
    for (std::uint16_t master : local::master_ports(cluster.ports().front())) {
        const auto r = resource_on(master, stem);
        auto got = cli({"acquire", r.str(), "--lease", "60s"}, cluster.url());
        ASSERT_EQ(got.exit_code, 0) << got.err;
        names.insert(r.str());
    }
    auto listed = cli({"list", "--pattern", "cluster:" + std::to_string(::getpid()) + ":" + stem + "*"}, cluster.url());
    ASSERT_EQ(listed.exit_code, 0) << listed.err;
    std::set<std::string> seen;
    for (const auto& line : json_lines(listed.out)) seen.insert(line["resource"].get<std::string>());
    EXPECT_EQ(seen, names);  // one lock on each master: all three listed

    for (const auto& name : names) {
        auto forced = cli({"force-release", name, "--reason", "cluster test", "--even-if-active"}, cluster.url());
        ASSERT_EQ(forced.exit_code, 0) << forced.err;
        EXPECT_EQ(json::parse(forced.out)["released"], true);
        auto one = cli({"audit", "--resource", name}, cluster.url());
        ASSERT_EQ(one.exit_code, 0) << one.err;
        const auto entries = json_lines(one.out);
        ASSERT_EQ(entries.size(), 1u) << one.out;
        EXPECT_EQ(entries[0]["reason"], "cluster test");
    }
    auto all = cli({"audit"}, cluster.url());
    ASSERT_EQ(all.exit_code, 0) << all.err;
    std::set<std::string> audited;
    for (const auto& line : json_lines(all.out)) audited.insert(line["resource"].get<std::string>());
    for (const auto& name : names) EXPECT_TRUE(audited.contains(name)) << name;
    auto after = cli({"list", "--pattern", "cluster:" + std::to_string(::getpid()) + ":" + stem + "*"}, cluster.url());
    EXPECT_TRUE(json_lines(after.out).empty()) << after.out;
}

TEST(ClusterCli, RunTakesTheUrlFromTheEnvironment) {
    auto& cluster = SharedCluster::get();
    const std::string name = "cluster:" + std::to_string(::getpid()) + ":run";
    auto ran = local::run_process({FENCELOCK_CLI, "run", name, "--lease", "5s", "--", "sh", "-c", "exit 7"},
                                  {"FENCELOCK_REDIS_URL=" + cluster.url()});
    EXPECT_EQ(ran.exit_code, 7) << ran.err;
    EXPECT_EQ(ran.out, "");  // stdout is CMD's; run's summary is stderr's last line
    const json summary = json::parse(ran.err.substr(ran.err.rfind('{')));
    EXPECT_EQ(summary["acquired"], true);
    EXPECT_EQ(summary["released"], true);
}

// The queue's keys share the queue's tag {QUEUE}, its jobs' locks their resources' tags: a
// worker on a cluster takes jobs from one master and locks on all three.
TEST(ClusterCli, QueueWorkerCompletesJobsWhoseLocksLiveOnEveryMaster) {
    auto& cluster = SharedCluster::get();
    const std::string queue = "cq" + std::to_string(::getpid());
    const std::string db = "sqlite:///tmp/fencelock-cluster-queue-" + std::to_string(::getpid()) + ".db";
    auto init = local::run_process({FENCELOCK_CLI, "store", "init", "--db", db});
    ASSERT_EQ(init.exit_code, 0) << init.err;
    int jobs = 0;
    for (std::uint16_t master : local::master_ports(cluster.ports().front())) {
        for (int i = 0; i < 2; ++i, ++jobs) {
            const auto r = resource_on(master, "job" + std::to_string(i));
            auto e = cli({"queue", "enqueue", "--queue", queue, "--resource", r.str(), "--key", r.str()}, cluster.url());
            ASSERT_EQ(e.exit_code, 0) << e.err;
        }
    }
    const pid_t worker = local::start_process({FENCELOCK_CLI, "--redis", cluster.url(), "worker", "--queue", queue,
                                               "--db", db, "--lease", "5s", "--", "true"},
                                              "/tmp/fencelock-cluster-worker.out", "/tmp/fencelock-cluster-worker.err");
    const bool done = eventually([&] {
        auto s = cli({"queue", "stats", "--queue", queue}, cluster.url());
        return s.exit_code == 0 && json::parse(s.out)["completed"] == jobs;
    }, 60s);
    ::kill(worker, SIGTERM);
    EXPECT_EQ(local::wait_process(worker), 0);
    std::remove(db.substr(std::string("sqlite://").size()).c_str());
    EXPECT_TRUE(done) << cli({"queue", "stats", "--queue", queue}, cluster.url()).out;
}

TEST(ClusterCli, BadEndpointsExitFourAndWriteNothing) {
    local::RedisServer plain;
    const std::string before = plain.snapshot();
    auto wrong = cli({"acquire", "x", "--lease", "5s"}, "redis-cluster://127.0.0.1:" + std::to_string(plain.port()));
    EXPECT_EQ(wrong.exit_code, 4) << wrong.err;
    EXPECT_NE(wrong.err.find("not a Redis Cluster node"), std::string::npos) << wrong.err;
    EXPECT_EQ(plain.snapshot(), before);

    const std::string nobody = "redis-cluster://127.0.0.1:" + std::to_string(local::free_port());
    auto down = cli({"acquire", "x", "--lease", "5s", "--wait", "1s"}, nobody);
    EXPECT_EQ(down.exit_code, 4) << down.err;
}
#endif

}  // namespace
}  // namespace fencelock::test_support

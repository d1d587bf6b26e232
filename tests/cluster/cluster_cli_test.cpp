// The CLI through redis-cluster://: the lock commands, `list` and `audit` over every master,
// `force-release` with its audit entry in the lock's slot (CROSSSLOT before audit:{R}), `run`
// with the URL from the environment, the lock commands while their slot migrates (ASK, then
// MOVED) and after a master failover, and the bad inputs' exit codes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>

#include "cluster/cluster_fixture.hpp"
#include "cluster/cluster_reshard.hpp"
#include "local_servers/child_process.hpp"
#include "local_servers/cluster_group.hpp"
#include "local_servers/redis_server.hpp"
#include "local_servers/sentinel_group.hpp"
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

// A command run on a thread of its own, so the test can move its slot while it waits.
class Background {
public:
    Background(std::vector<std::string> args, std::string url)
        : thread_([this, args = std::move(args), url = std::move(url)] {
              result_ = cli(args, url);
              done_ = true;
          }) {}
    ~Background() {
        if (thread_.joinable()) thread_.join();
    }
    bool done() const { return done_; }
    local::ProcessResult get() {
        thread_.join();
        return result_;
    }

private:
    std::atomic<bool> done_{false};
    local::ProcessResult result_;
    std::thread thread_;
};

// `fencelock run R -- sh -c 'read line < FIFO'`: a command that holds its lease until the
// test lets it end (a line into the FIFO), with no timer involved.
class HeldRun {
public:
    HeldRun(const ResourceName& r, const std::string& lease, const std::string& url)
        : fifo_("/tmp/fencelock-cluster-run-" + std::to_string(::getpid()) + "-" +
                r.str().substr(r.str().rfind(':') + 1)),
          made_(::mkfifo(fifo_.c_str(), 0600) == 0),
          run_({"run", r.str(), "--json", "--lease", lease, "--", "sh", "-c", "read line < " + fifo_}, url) {}
    ~HeldRun() {
        if (!finished_) (void)finish();  // a failed test must not leave run waiting
        std::remove(fifo_.c_str());
    }
    /// Lets the command end (once it reads the FIFO) and returns run's result.
    local::ProcessResult finish() {
        finished_ = true;
        int fd = -1;
        // A FIFO opens for writing only once its reader has it open: the command started.
        eventually([&] { return (fd = ::open(fifo_.c_str(), O_WRONLY | O_NONBLOCK)) >= 0 || run_.done(); }, 30s);
        if (fd >= 0) {
            (void)!::write(fd, "go\n", 3);
            ::close(fd);
        }
        return run_.get();
    }
    bool made() const { return made_; }

private:
    std::string fifo_;
    bool made_;
    bool finished_ = false;
    Background run_;
};

// run's summary (stderr's last line) says the command completed under a lease held throughout.
void expect_completed(const local::ProcessResult& ran) {
    EXPECT_EQ(ran.exit_code, 0) << ran.err;
    const auto brace = ran.err.rfind('{');
    ASSERT_NE(brace, std::string::npos) << ran.err;
    const json summary = json::parse(ran.err.substr(brace));
    EXPECT_EQ(summary["result"], "completed") << ran.err;
    EXPECT_EQ(summary["lease_lost"], false) << ran.err;
    EXPECT_EQ(summary["released"], true) << ran.err;
}

// The resources `list` shows for `pattern`, each as often as it is listed.
std::multiset<std::string> listed(const std::string& pattern, const std::string& url) {
    auto out = cli({"list", "--pattern", pattern}, url);
    EXPECT_EQ(out.exit_code, 0) << out.err;
    std::multiset<std::string> names;
    for (const auto& line : json_lines(out.out)) names.insert(line["resource"].get<std::string>());
    return names;
}

// `owner` releases `r`; the next acquisition's fence is above `fence`, its lock on `port`.
void expect_released_and_next_fence_above(const ResourceName& r, const std::string& owner, std::uint64_t fence,
                                          std::uint16_t port, const std::string& url) {
    auto released = cli({"release", r.str(), "--owner", owner}, url);
    ASSERT_EQ(released.exit_code, 0) << released.err;
    EXPECT_EQ(json::parse(released.out)["result"], "released");
    auto next = cli({"acquire", r.str(), "--lease", "5s"}, url);
    ASSERT_EQ(next.exit_code, 0) << next.err;
    EXPECT_GT(json::parse(next.out)["fence"].get<std::uint64_t>(), fence);
    EXPECT_EQ(local::cli_at(port, {"EXISTS", "lock:{" + r.str() + "}"}), "1");
    (void)cli({"release", r.str(), "--owner", json::parse(next.out)["owner"]}, url);
}

std::string renewals_at(std::uint16_t port, const ResourceName& r) {
    return local::cli_at(port, {"HGET", "lock:{" + r.str() + "}", "renewals"});
}

TEST(ClusterCli, LockCommandsCompleteWhileTheirSlotMigratesAndRunFollowsTheMove) {
    auto& cluster = SharedCluster::get();
    const auto masters = local::master_ports(cluster.ports().front());
    const std::string pid = std::to_string(::getpid());
    const auto r = resource_on(masters[0], "cliask");
    const auto job = in_slot_of(r, "cluster:" + pid + ":cliask-run:", 2)[1];
    SlotHome home{cluster.ports(), slot_of(r), masters[0]};
    auto got = cli({"acquire", r.str(), "--lease", "60s"}, cluster.url());
    ASSERT_EQ(got.exit_code, 0) << got.err;
    const json lease = json::parse(got.out);
    const std::string owner = lease["owner"];
    HeldRun run(job, "1s", cluster.url());  // renews every third of a second
    ASSERT_TRUE(run.made());
    ASSERT_TRUE(eventually([&] { return !renewals_at(masters[0], job).empty(); }, 20s)) << "run took no lease";

    // The ASK window: the keys are on the target, the slot is still the source's.
    const std::uint16_t target = other_master(masters[0]);
    local::SlotMigration move(cluster.ports(), slot_of(r), target);
    move.begin();
    ASSERT_GE(move.move_keys(), 4);  // both leases' lock and fence keys
    auto seen = cli({"inspect", r.str()}, cluster.url());
    ASSERT_EQ(seen.exit_code, 0) << seen.err;
    EXPECT_EQ(json::parse(seen.out)["held"], true) << seen.out;
    EXPECT_EQ(json::parse(seen.out)["fence"], lease["fence"]) << seen.out;
    auto renewed = cli({"renew", r.str(), "--owner", owner, "--lease", "60s"}, cluster.url());
    ASSERT_EQ(renewed.exit_code, 0) << renewed.err;
    EXPECT_EQ(json::parse(renewed.out)["result"], "renewed");
    // Once each, from the target.
    EXPECT_EQ(listed("cluster:" + pid + ":cliask*", cluster.url()), (std::multiset<std::string>{r.str(), job.str()}));

    // A script naming a key the target lacks (acquire's fair line) gets TRYAGAIN there until
    // the slot is assigned: the contender waits it out, then finds the lock held.
    const long refusals = error_count(target, "TRYAGAIN");
    Background contender({"acquire", r.str(), "--lease", "5s", "--wait", "3s"}, cluster.url());
    EXPECT_TRUE(eventually([&] { return error_count(target, "TRYAGAIN") > refusals || contender.done(); }, 20s));
    const std::string renewals_before = renewals_at(target, job);
    move.finish();  // from now on the source answers MOVED
    auto refused = contender.get();
    EXPECT_EQ(refused.exit_code, 3) << refused.out << refused.err;
    EXPECT_EQ(json::parse(refused.out)["result"], "contended") << refused.out;

    // run's map still names the source: its renewals meet MOVED and go on at the target.
    EXPECT_TRUE(eventually([&] { return renewals_at(target, job) != renewals_before; }, 10s))
        << "no renewal after the move";
    expect_completed(run.finish());

    expect_released_and_next_fence_above(r, owner, lease["fence"], target, cluster.url());
}

// A master SIGKILLed (replicated first: nothing is lost) and its replica promoted by the
// cluster, on a cluster of this test's own. Every command, started afresh with the dead node
// still among the seeds, finds the new master; a `run` that held a lease throughout keeps it.
TEST(ClusterCli, LockCommandsWorkAfterAMasterFailover) {
    local::ClusterGroup group({.node_timeout_ms = 1000, .server_args = {"--cluster-require-full-coverage", "no"}});
    const std::uint16_t doomed = local::master_ports(group.ports().front()).front();
    const auto r = resource_on(group, doomed, "clifail:");
    const auto job = resource_on(group, doomed, "clifail-run:");
    auto got = cli({"acquire", r.str(), "--lease", "60s"}, group.url());
    ASSERT_EQ(got.exit_code, 0) << got.err;
    const json lease = json::parse(got.out);
    const std::string owner = lease["owner"];
    HeldRun run(job, "10s", group.url());  // a renewal every 3.3 s: the failover fits between two
    ASSERT_TRUE(run.made());
    ASSERT_TRUE(eventually([&] { return !renewals_at(doomed, job).empty(); }, 20s)) << "run took no lease";
    local::RedisServer& master = group.server(group.index_of(doomed));
    ASSERT_EQ(master.cli({"WAIT", "1", "5000"}), "1");

    master.kill();
    const std::uint16_t promoted = group.wait_for_takeover(doomed, slot_of(r), 60s);
    auto seen = cli({"inspect", r.str()}, group.url());
    ASSERT_EQ(seen.exit_code, 0) << seen.err;
    EXPECT_EQ(json::parse(seen.out)["owner"], owner) << seen.out;
    auto refused = cli({"acquire", r.str(), "--lease", "5s"}, group.url());
    EXPECT_EQ(refused.exit_code, 3) << refused.out << refused.err;
    EXPECT_EQ(listed("clifail*", group.url()), (std::multiset<std::string>{r.str(), job.str()}));
    auto renewed = cli({"renew", r.str(), "--owner", owner, "--lease", "60s"}, group.url());
    ASSERT_EQ(renewed.exit_code, 0) << renewed.err;
    EXPECT_EQ(json::parse(renewed.out)["result"], "renewed");
    expect_released_and_next_fence_above(r, owner, lease["fence"], promoted, group.url());

    const std::string renewals_before = renewals_at(promoted, job);
    EXPECT_TRUE(eventually([&] { return renewals_at(promoted, job) != renewals_before; }, 10s))
        << "run stopped renewing";
    expect_completed(run.finish());
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
    auto ran = local::run_process({FENCELOCK_CLI, "run", name, "--json", "--lease", "5s", "--", "sh", "-c", "exit 7"},
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
            auto e =
                cli({"queue", "enqueue", "--queue", queue, "--resource", r.str(), "--key", r.str()}, cluster.url());
            ASSERT_EQ(e.exit_code, 0) << e.err;
        }
    }
    const pid_t worker = local::start_process({FENCELOCK_CLI, "--redis", cluster.url(), "worker", "--queue", queue,
                                               "--db", db, "--lease", "5s", "--", "true"},
                                              "/tmp/fencelock-cluster-worker.out", "/tmp/fencelock-cluster-worker.err");
    const bool done = eventually(
        [&] {
            auto s = cli({"queue", "stats", "--queue", queue}, cluster.url());
            return s.exit_code == 0 && json::parse(s.out)["completed"] == jobs;
        },
        60s);
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

    // The reverse: a redis:// URL at a cluster node, for a key that node does not serve, says
    // to use redis-cluster:// (it used to print the bare MOVED).
    auto& cluster = SharedCluster::get();
    const std::string r = "moved:" + std::to_string(::getpid());
    const std::uint16_t owner = cluster.master_of("lock:{" + r + "}");
    const auto ports = cluster.ports();
    const auto other = std::ranges::find_if(ports, [&](std::uint16_t p) { return p != owner; });
    ASSERT_NE(other, ports.end());
    auto moved = cli({"acquire", r, "--lease", "5s"}, "redis://127.0.0.1:" + std::to_string(*other));
    EXPECT_EQ(moved.exit_code, 4) << moved.out << moved.err;
    const json e = json::parse(moved.out, nullptr, false);
    EXPECT_EQ(e.value("code", ""), "cluster_node") << moved.out;
    EXPECT_NE(e.value("detail", "").find("use a redis-cluster:// URL"), std::string::npos) << moved.out;
    EXPECT_EQ(cluster.cli_for("lock:{" + r + "}", {"EXISTS", "lock:{" + r + "}"}), "0");
}
#endif

}  // namespace
}  // namespace fencelock::test_support

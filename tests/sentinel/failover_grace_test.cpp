// The failover grace against a group of its own (these tests kill the master): a lease the old
// master granted but never replicated is gone from the promoted replica, so without the grace
// a second owner gets the lock while the first still trusts its lease. With it the new master
// grants nothing until that lease has run out, and its holder has stopped before anyone else
// starts. The library test also runs the control (grace 0) and shows the overlap it prevents;
// the CLI tests hold a kernel lock (flock) in the command, so two commands running at once
// would make the second fail.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "fencelock/client.hpp"
#include "local_servers/child_process.hpp"
#include "local_servers/sentinel_group.hpp"
#include "sentinel/sentinel_fixture.hpp"
#include "support/clock_offset.hpp"
#include "support/eventually.hpp"
#include "support/temp_dir.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;
using std::chrono::steady_clock;

// A lease long enough to outlast the promotion (2-3 s here), and a grace that covers it.
constexpr auto lease = 8s;
// These groups are fresh (first term, confirmed by the master), so their first leases need not
// wait out the grace.
const std::string grace_query = "failover_grace=8s";

LockClient client_for(const std::string& url) {
    auto c = LockClient::create({.endpoint = *parse_redis_url(url)});
    EXPECT_TRUE(c.has_value());
    return std::move(*c);
}

// The group's master dies (SIGKILL) and the replica, resumed, is promoted. True once every
// sentinel names it and it answers as master.
bool kill_master_and_promote(local::SentinelGroup& group) {
    group.server(0).kill();
    group.server(1).resume();
    const std::size_t promoted = group.wait_for_new_master(0, 30s);
    // Every sentinel, not just a majority: a client may ask the laggard first.
    return eventually(
        [&] {
            for (std::size_t i = 0; i < group.sentinels(); ++i)
                if (group.master_port_seen_by(i) != group.server(promoted).port()) return false;
            return true;
        },
        30s);
}

// Server `to` promoted by hand (REPLICAOF NO ONE), `from` made its replica, and every
// sentinel's configuration created anew around `to` (`sentinel remove`, `sentinel monitor`):
// a majority then names it at config epoch 0, as if the group were new, and no
// +switch-master is sent. True once a majority names it.
bool promote_by_hand_behind_new_sentinels(local::SentinelGroup& group, std::size_t to, std::size_t from) {
    const auto port = std::to_string(group.server(to).port());
    bool ok = group.server(to).cli({"REPLICAOF", "NO", "ONE"}) == "OK" &&
              group.server(from).cli({"REPLICAOF", "127.0.0.1", port}) == "OK";
    for (std::size_t i = 0; ok && i < group.sentinels(); ++i)
        ok = group.sentinel(i).cli({"SENTINEL", "REMOVE", group.master_name()}) == "OK" &&
             group.sentinel(i).cli({"SENTINEL", "MONITOR", group.master_name(), "127.0.0.1", port, "2"}) == "OK";
    return ok && eventually([&] { return group.master() == std::optional<std::size_t>(to); }, 30s);
}

// A takes a lease that reaches the master only (replication is cut first); then the master
// dies and the replica, which never saw it, is promoted. A's lease, or nullopt (with a failure
// recorded) when the setup did not work.
std::optional<Lease> lease_lost_with_the_master(local::SentinelGroup& group, LockClient& a_client,
                                                const ResourceName& r) {
    group.cut_replication(1);
    auto a = a_client.try_acquire(r, {.lease = lease});
    if (!a || !a->acquired()) {
        ADD_FAILURE() << (a ? "contended" : a.error().message());
        return std::nullopt;
    }
    if (!kill_master_and_promote(group)) {
        ADD_FAILURE() << "a sentinel still names the old master";
        return std::nullopt;
    }
    return a->lease;
}

// A group that has never failed over grants at once under the default grace (30 s): no other
// master can have granted a lease. With trust_first_term=0 a fresh group is inside the grace.
// After a failover the grace is owed again either way.
TEST(FailoverGrace, AGroupThatNeverFailedOverGrantsAtOnceAndOwesTheGraceAfterAFailover) {
    local::SentinelGroup group;
    auto conservative = client_for(group.url("trust_first_term=0"));
    auto refused = conservative.try_acquire(*ResourceName::make("grace:conservative"), {.lease = lease});
    ASSERT_FALSE(refused.has_value()) << "trust_first_term=0 waits out the grace on a fresh group";
    EXPECT_EQ(refused.error(), errc::failover_grace) << refused.error().message();
    // From the client's creation: the sentinels asked, the master confirming, the connection.
    const auto asked = steady_clock::now();
    auto c = client_for(group.url());
    auto first = c.try_acquire(*ResourceName::make("grace:first-contact"), {.lease = lease});
    const auto took = std::chrono::duration_cast<std::chrono::microseconds>(steady_clock::now() - asked);
    ASSERT_TRUE(first && first->acquired()) << (first ? "contended" : first.error().message());
    std::cout << "[figures] first acquire on a fresh Sentinel group, from the client's creation (default grace "
                 "30 s): "
              << took.count() / 1000.0 << " ms\n";
    ASSERT_TRUE(kill_master_and_promote(group)) << "a sentinel still names the old master";
    auto after = c.try_acquire(*ResourceName::make("grace:after-failover"), {.lease = lease});
    ASSERT_FALSE(after.has_value()) << "granted inside the grace after a failover";
    EXPECT_EQ(after.error(), errc::failover_grace) << after.error().message();
}

// Epoch 0 made to lie, as the hostile review did: the replica is promoted by hand and every
// sentinel's configuration is created anew around it (`sentinel remove`, `sentinel monitor`),
// so a majority names a new master at config epoch 0, moments old. The master's own INFO
// still shows the promotion (second_repl_offset), so the first term is not confirmed and the
// grace is owed. Epoch 0 alone would have granted here.
TEST(FailoverGrace, AHandPromotionBehindReCreatedSentinelsStillOwesTheGrace) {
    local::SentinelGroup group;
    ASSERT_TRUE(promote_by_hand_behind_new_sentinels(group, 1, 0)) << "the re-created sentinels do not name server 1";
    for (std::size_t i = 0; i < group.sentinels(); ++i)
        EXPECT_NE(group.sentinel(i).cli({"SENTINEL", "MASTER", group.master_name()}).find("config-epoch\n0\n"),
                  std::string::npos)
            << "sentinel " << i << " is not at epoch 0: the setup proves nothing";
    auto c = client_for(group.url());
    auto refused = c.try_acquire(*ResourceName::make("grace:hand-promoted"), {.lease = lease});
    ASSERT_FALSE(refused.has_value()) << "granted at once behind an epoch 0 that people re-created";
    EXPECT_EQ(refused.error(), errc::failover_grace) << refused.error().message();
}

// The hostile review's second run: a process that met the group fresh (its first lease owed no
// grace) sees the master promoted by hand away and back, with the sentinels re-created each
// time: the same address, epoch 0 and no +switch-master, as at first contact. A new client in
// that process (it shares the topology) must still owe the grace: the master's word is asked
// again, never reused, and a start moment later than the one recorded is a new term.
TEST(FailoverGrace, AHandPromotionAwayAndBackIsANewTermForAProcessThatMetTheGroupFresh) {
    local::SentinelGroup group;
    auto x = client_for(group.url());
    auto first = x.try_acquire(*ResourceName::make("grace:met-fresh"), {.lease = lease});
    ASSERT_TRUE(first && first->acquired()) << (first ? "contended" : first.error().message());
    ASSERT_TRUE(promote_by_hand_behind_new_sentinels(group, 1, 0)) << "away: the sentinels do not name server 1";
    ASSERT_TRUE(promote_by_hand_behind_new_sentinels(group, 0, 1)) << "back: the sentinels do not name server 0";
    auto z = client_for(group.url());
    auto refused = z.try_acquire(*ResourceName::make("grace:back-again"), {.lease = lease});
    ASSERT_FALSE(refused.has_value()) << "granted at once on a master promoted by hand moments ago";
    EXPECT_EQ(refused.error(), errc::failover_grace) << refused.error().message();
}

TEST(FailoverGrace, ALeaseLostWithTheOldMasterRunsOutBeforeTheNewMasterGrantsAgain) {
    local::SentinelGroup group;
    const auto r = *ResourceName::make("grace:library");
    auto a_client = client_for(group.url(grace_query));
    const auto a = lease_lost_with_the_master(group, a_client, r);
    ASSERT_TRUE(a);
    const auto a_safe_until = a->safe_until;

    // Control, no grace: the promoted master never saw A's lease and grants it again while A
    // still trusts its own. Two owners at once; only the fence keeps the data safe.
    auto unguarded = client_for(group.url("failover_grace=0"));
    auto overlap = unguarded.try_acquire(r, {.lease = lease});
    const auto overlap_at = steady_clock::now();
    ASSERT_TRUE(overlap && overlap->acquired()) << (overlap ? "contended" : overlap.error().message());
    ASSERT_LT(overlap_at, a_safe_until) << "the promotion took longer than A's lease: the control proves nothing";
    EXPECT_GT(overlap->lease->fence, a->fence) << "fences still move forward (they follow the clock)";
    ASSERT_TRUE(unguarded.release(r, overlap->lease->owner));

    // With the grace: refused, retryable and named, while A's lease may still run...
    auto b_client = client_for(group.url(grace_query));
    auto early = b_client.try_acquire(r, {.lease = lease});
    ASSERT_FALSE(early.has_value()) << "granted inside the grace";
    EXPECT_EQ(early.error(), errc::failover_grace) << early.error().message();
    EXPECT_EQ(classify(early.error()), failure_kind::retryable);
    EXPECT_LT(steady_clock::now(), a_safe_until);
    auto after_refusal = b_client.inspect(r);
    ASSERT_TRUE(after_refusal) << after_refusal.error().message();
    EXPECT_FALSE(after_refusal->holder) << "a grant inside the grace was not given back";

    // ...and granted to a waiter only once it has run out.
    auto b = b_client.acquire(r, {.lease = lease, .wait = 30s});
    ASSERT_TRUE(b && b->acquired()) << (b ? "contended" : b.error().message());
    EXPECT_GE(steady_clock::now(), a_safe_until);

    // A learns that its lease is gone: the new master never had it.
    auto renewed = a_client.renew(r, a->owner, lease);
    ASSERT_TRUE(renewed) << renewed.error().message();
    EXPECT_NE(renewed->status, RenewStatus::renewed);
}

// A sentinel whose wall clock stepped forward reports the master as that much older (Sentinel
// ages records by mstime()). Asked first, it must not shorten the grace: the youngest age of
// a majority counts, and a lease the old master never replicated still runs out first.
TEST(FailoverGrace, ASentinelWhoseClockSteppedForwardCannotShortenTheGrace) {
    ClockOffset fast_clock;
    local::SentinelGroupOptions options;
    options.sentinel_env = {fast_clock.env()};  // sentinel 0, the first the URL names
    local::SentinelGroup group(options);
    const auto r = *ResourceName::make("grace:stepped-sentinel");
    auto a_client = client_for(group.url(grace_query));
    const auto a = lease_lost_with_the_master(group, a_client, r);
    ASSERT_TRUE(a);
    const auto a_safe_until = a->safe_until;

    fast_clock.step(60s);
    const std::string record = group.sentinel(0).cli({"SENTINEL", "MASTER", group.master_name()});
    const auto at = record.find("role-reported-time\n");
    ASSERT_NE(at, std::string::npos) << record;
    ASSERT_GE(std::stoll(record.substr(at + 19)), 60000) << "the step did not reach the sentinel: proves nothing";

    // The URL names the stepped sentinel first, so its answer is the first one read.
    auto b_client = client_for(group.url(grace_query));
    auto early = b_client.try_acquire(r, {.lease = lease});
    ASSERT_FALSE(early.has_value()) << "granted inside the grace on a stepped sentinel's word";
    EXPECT_EQ(early.error(), errc::failover_grace) << early.error().message();
    EXPECT_LT(steady_clock::now(), a_safe_until);

    // A stall, not a lock-out: once A's lease has run out, a waiter is granted.
    auto b = b_client.acquire(r, {.lease = lease, .wait = 30s});
    ASSERT_TRUE(b && b->acquired()) << (b ? "contended" : b.error().message());
    EXPECT_GE(steady_clock::now(), a_safe_until);
}

// fencelock run R --lease L [--wait W] -- flock -n PROBE sh -c SCRIPT, in the background.
pid_t start_run(const std::string& url, const std::string& resource, const std::filesystem::path& dir,
                const std::string& name, const std::string& script, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv{FENCELOCK_CLI, "--redis", url, "run", resource, "--lease", "8s"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    for (const char* part : {"--", "flock", "-n"}) argv.emplace_back(part);
    argv.push_back((dir / "probe.lock").string());
    argv.insert(argv.end(), {"sh", "-c", script});
    return local::start_process(argv, (dir / (name + ".out")).string(), (dir / (name + ".err")).string());
}

// A `fencelock run` still going when a test fails is told to stop (SIGTERM: it stops its
// command too), so no command outlives the test.
struct StopsRuns {
    std::vector<pid_t> pids;
    pid_t add(pid_t pid) {
        pids.push_back(pid);
        return pid;
    }
    int wait(pid_t pid) {
        std::erase(pids, pid);
        return local::wait_process(pid);
    }
    ~StopsRuns() {
        for (pid_t pid : pids)
            if (::kill(pid, SIGTERM) == 0) (void)local::wait_process(pid);
    }
};

std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p);
    return {std::istreambuf_iterator<char>(in), {}};
}

TEST(FailoverGrace, RunWhoseLeaseWasLostIsStoppedBeforeTheNextHoldersCommandStarts) {
    local::SentinelGroup group;
    TempDir dir;
    const std::string url = group.url(grace_query);
    const std::string r = "grace:run-lost";

    StopsRuns runs;
    group.cut_replication(1);
    const pid_t first =
        start_run(url, r, dir.path(), "first", "echo A > " + (dir.path() / "a.started").string() + "; exec sleep 600");
    runs.add(first);
    ASSERT_TRUE(eventually([&] { return std::filesystem::exists(dir.path() / "a.started"); }, 20s))
        << read_file(dir.path() / "first.err");
    ASSERT_TRUE(kill_master_and_promote(group)) << "a sentinel still names the old master";

    // The next holder waits for the lock; its command fails (flock -n) if A's still runs.
    const pid_t second =
        start_run(url, r, dir.path(), "second", "echo B > " + (dir.path() / "b.ran").string(), {"--wait", "60s"});
    runs.add(second);
    EXPECT_EQ(runs.wait(first), 76) << read_file(dir.path() / "first.err");
    EXPECT_EQ(runs.wait(second), 0) << read_file(dir.path() / "second.err");
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "b.ran"));
}

TEST(FailoverGrace, RunWhoseLeaseReplicatedKeepsRunningAndTheNextHolderWaitsForIt) {
    local::SentinelGroup group;
    TempDir dir;
    const std::string url = group.url(grace_query);
    const std::string r = "grace:run-kept";
    const auto go = dir.path() / "go";
    const auto a_done = dir.path() / "a.done";

    StopsRuns runs;
    const pid_t first = start_run(url, r, dir.path(), "first",
                                  "echo A > " + (dir.path() / "a.started").string() + "; while [ ! -e " + go.string() +
                                      " ]; do sleep 0.05; done; echo done > " + a_done.string());
    runs.add(first);
    ASSERT_TRUE(eventually([&] { return std::filesystem::exists(dir.path() / "a.started"); }, 20s))
        << read_file(dir.path() / "first.err");
    ASSERT_EQ(group.server(0).cli({"WAIT", "1", "5000"}), "1") << "the lease did not reach the replica";
    ASSERT_TRUE(kill_master_and_promote(group)) << "a sentinel still names the old master";
    const auto promoted_at = steady_clock::now();

    const pid_t second = start_run(url, r, dir.path(), "second",
                                   "test -e " + a_done.string() + " && echo B > " + (dir.path() / "b.ran").string(),
                                   {"--wait", "60s"});
    runs.add(second);
    // A's lease must outlive the moment a free lock would have been granted again (the grace
    // after the promotion) by a whole lease: renewed on the new master, not just left over.
    std::this_thread::sleep_until(promoted_at + lease * 2);
    std::ofstream(go.string()) << "go\n";
    EXPECT_EQ(runs.wait(first), 0) << read_file(dir.path() / "first.err");
    EXPECT_EQ(runs.wait(second), 0) << read_file(dir.path() / "second.err");
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "b.ran")) << "B ran before A finished";
}

// fencelock worker: a job taken after replication was cut is lost with the master, so the
// promoted one delivers it again, to a second worker, while the first still runs it. The
// second worker's lock waits out the grace; by then the first has lost its lease and stopped
// its command. Both commands take the same flock: an overlap fails the second's.
TEST(FailoverGrace, WorkerWhoseLeaseWasLostStopsBeforeTheRedeliveredJobRunsAgain) {
    local::SentinelGroup group;
    TempDir dir;
    const std::string url = group.url(grace_query);
    const std::string db = "sqlite://" + (dir.path() / "store.db").string();
    const auto cli = [&](std::vector<std::string> args) {
        args.insert(args.begin(), {FENCELOCK_CLI, "--redis", url});
        return local::run_process(args);
    };
    ASSERT_EQ(local::run_process({FENCELOCK_CLI, "store", "init", "--db", db}).exit_code, 0);
    const auto enqueued =
        cli({"queue", "enqueue", "--queue", "gq", "--resource", "grace:job", "--key", "job-1", "--payload", "{}"});
    ASSERT_EQ(enqueued.exit_code, 0) << enqueued.err;
    ASSERT_EQ(group.server(0).cli({"WAIT", "1", "5000"}), "1") << "the job did not reach the replica";

    // Both workers run the same command: the first execution holds on, any later one records
    // that it ran. flock -n makes a later one fail while the first still runs.
    const auto started = dir.path() / "a.started";
    const auto ran = dir.path() / "b.ran";
    const std::string script = "if [ -e " + started.string() + " ]; then echo B > " + ran.string() +
                               "; else echo A > " + started.string() + "; exec sleep 600; fi";
    StopsRuns workers;
    const auto worker = [&](const std::string& name) {
        return workers.add(
            local::start_process({FENCELOCK_CLI, "--redis", url, "worker", "--queue", "gq", "--db", db, "--lease", "8s",
                                  "--", "flock", "-n", (dir.path() / "probe.lock").string(), "sh", "-c", script},
                                 (dir.path() / (name + ".out")).string(), (dir.path() / (name + ".err")).string()));
    };
    group.cut_replication(1);
    const pid_t first = worker("first");
    ASSERT_TRUE(eventually([&] { return std::filesystem::exists(started); }, 20s))
        << read_file(dir.path() / "first.err");
    ASSERT_TRUE(kill_master_and_promote(group)) << "a sentinel still names the old master";

    const pid_t second = worker("second");
    ASSERT_TRUE(eventually([&] { return std::filesystem::exists(ran); }, 60s))
        << "first: " << read_file(dir.path() / "first.err") << "\nsecond: " << read_file(dir.path() / "second.err")
        << "\nqueue: " << cli({"queue", "stats", "--queue", "gq"}).out;
    for (const pid_t pid : {first, second}) ASSERT_EQ(::kill(pid, SIGTERM), 0);
    EXPECT_EQ(workers.wait(first), 0);
    EXPECT_EQ(workers.wait(second), 0);
    const auto a = nlohmann::json::parse(read_file(dir.path() / "first.out"));
    const auto b = nlohmann::json::parse(read_file(dir.path() / "second.out"));
    const auto total = [&](const char* field) { return a[field].get<int>() + b[field].get<int>(); };
    EXPECT_EQ(a["lease_lost"], 1) << a.dump();
    EXPECT_EQ(total("completed"), 1) << a.dump() << b.dump();
    EXPECT_EQ(total("business_retries"), 0) << "a later execution overlapped the first: " << a.dump() << b.dump();
    EXPECT_EQ(total("dead"), 0);
}

}  // namespace
}  // namespace fencelock::test_support

// The throwaway etcd servers (tools/local_servers/etcd_server.hpp, etcd_cluster.hpp) serve for
// real: keys written and read back through etcdctl, a three-member cluster that elects a leader
// and keeps serving when its leader is killed or paused, a restarted member that catches up,
// and nothing left behind, processes or directories. server_fixture's etcd kinds are started
// and stopped here as ctest would.
#include <gtest/gtest.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "local_servers/etcd_cluster.hpp"
#include "local_servers/etcd_server.hpp"
#include "support/eventually.hpp"
#include "support/process_state.hpp"

namespace {

using fencelock::local::EtcdCluster;
using fencelock::local::EtcdServer;
using fencelock::local::ProcessResult;
using fencelock::test_support::eventually;
using fencelock::test_support::process_ended;
using namespace std::chrono_literals;

// etcd's default election timeout is 1 s and a candidate waits up to twice that; 15 s leaves
// room for a loaded machine without letting a broken cluster hang the suite.
constexpr auto election_limit = 15s;

// etcdctl's stdout without the trailing newline.
std::string trimmed(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    return text;
}

// The value `member` holds for `key` in its own copy of the data (a serializable read: no
// round to the leader), so a member that has not caught up answers what it has.
std::string local_value(const EtcdServer& member, const std::string& key) {
    return trimmed(member.etcdctl({"get", key, "--print-value-only", "--consistency=s"}).out);
}

void expect_put(const ProcessResult& put) {
    EXPECT_EQ(put.exit_code, 0) << put.err;
    EXPECT_EQ(trimmed(put.out), "OK");
}

TEST(EtcdServer, ServesPutAndGetThroughEtcdctl) {
    EtcdServer server;
    EXPECT_EQ(server.url(), "etcd://127.0.0.1:" + std::to_string(server.client_port()));
    EXPECT_EQ(server.endpoint(), "127.0.0.1:" + std::to_string(server.client_port()));
    EXPECT_TRUE(server.healthy());

    expect_put(server.etcdctl({"put", "fencelock/greeting", "hello etcd"}));
    const ProcessResult get = server.etcdctl({"get", "fencelock/greeting", "--print-value-only"});
    EXPECT_EQ(get.exit_code, 0) << get.err;
    EXPECT_EQ(trimmed(get.out), "hello etcd");
    const ProcessResult missing = server.etcdctl({"get", "fencelock/absent", "--print-value-only"});
    EXPECT_EQ(missing.exit_code, 0) << missing.err;
    EXPECT_EQ(trimmed(missing.out), "");

    // Alone it is its own leader, and the put moved the revision on.
    const auto status = server.status();
    ASSERT_TRUE(status);
    EXPECT_NE(status->member_id, 0u);
    EXPECT_EQ(status->leader_id, status->member_id);
    EXPECT_GE(status->revision, 2);
}

TEST(EtcdServer, PausedAnswersNothingUntilResumed) {
    EtcdServer server;
    server.pause();
    EXPECT_FALSE(server.serving());
    // SIGSTOP reaches each thread when it next runs: until all have stopped one may answer.
    ASSERT_TRUE(eventually([&] { return fencelock::test_support::process_stopped(server.pid()); }, 10s));
    EXPECT_EQ(fencelock::local::etcd_http(server.client_port(), "GET", "/health", "", 300ms), std::nullopt);
    server.resume();
    EXPECT_TRUE(eventually([&] { return server.healthy(); }, 10s));
    expect_put(server.etcdctl({"put", "after-pause", "1"}));
}

TEST(EtcdServer, RestartKeepsItsPortAndData) {
    EtcdServer server;
    expect_put(server.etcdctl({"put", "kept", "across a restart"}));
    const std::string endpoint = server.endpoint();
    const pid_t before = server.pid();

    server.kill_hard();
    EXPECT_TRUE(process_ended(before));
    EXPECT_EQ(server.pid(), -1);
    EXPECT_FALSE(server.healthy());
    EXPECT_NE(server.etcdctl({"get", "kept", "--command-timeout=500ms"}).exit_code, 0) << "a killed server answered";

    server.restart();
    EXPECT_NE(server.pid(), before);
    EXPECT_EQ(server.endpoint(), endpoint);
    EXPECT_EQ(trimmed(server.etcdctl({"get", "kept", "--print-value-only"}).out), "across a restart");
}

TEST(EtcdServer, DestructionLeavesNoProcessOrDirectory) {
    pid_t pid = -1;
    std::filesystem::path dir;
    std::uint16_t port = 0;
    {
        EtcdServer server;
        pid = server.pid();
        dir = server.dir();
        port = server.client_port();
        ASSERT_GT(pid, 0);
        ASSERT_TRUE(std::filesystem::exists(dir / "data"));
        ASSERT_TRUE(std::filesystem::exists(dir / "etcd.log"));
    }
    EXPECT_TRUE(process_ended(pid));
    EXPECT_FALSE(std::filesystem::exists(dir));
    EXPECT_EQ(fencelock::local::etcd_http(port, "GET", "/health", "", 300ms), std::nullopt);
}

TEST(EtcdServer, RefusesAnElectionTimeoutUnderFiveHeartbeats) {
    EXPECT_THROW(
        EtcdServer(fencelock::local::EtcdServerOptions{.heartbeat_interval = 100ms, .election_timeout = 400ms}),
        std::invalid_argument);
}

TEST(EtcdCluster, ElectsOneLeaderAndReplicatesToEveryMember) {
    EtcdCluster cluster;
    ASSERT_EQ(cluster.members(), 3u);
    std::string expected_url = "etcd://";
    for (std::size_t i = 0; i < 3; ++i)
        expected_url += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(cluster.member(i).client_port());
    EXPECT_EQ(cluster.url(), expected_url);

    const auto leader = cluster.leader_index();
    ASSERT_TRUE(leader);
    // Every member names the same leader, and only it names itself.
    const auto leader_status = cluster.member(*leader).status();
    ASSERT_TRUE(leader_status);
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_TRUE(cluster.member(i).healthy()) << "member " << i;
        const auto status = cluster.member(i).status();
        ASSERT_TRUE(status) << "member " << i;
        EXPECT_EQ(status->leader_id, leader_status->member_id) << "member " << i;
        EXPECT_EQ(status->member_id == leader_status->member_id, i == *leader) << "member " << i;
    }

    expect_put(cluster.etcdctl({"put", "everywhere", "yes"}));
    for (std::size_t i = 0; i < 3; ++i)
        EXPECT_TRUE(eventually([&] { return local_value(cluster.member(i), "everywhere") == "yes"; }, 10s))
            << "member " << i << " never saw the put";
}

TEST(EtcdCluster, ElectsANewLeaderWhenTheLeaderIsKilled) {
    EtcdCluster cluster;
    const std::size_t old_leader = cluster.wait_for_leader(election_limit);
    const pid_t old_pid = cluster.member(old_leader).pid();
    cluster.member(old_leader).kill_hard();
    EXPECT_TRUE(process_ended(old_pid));

    const std::size_t new_leader = cluster.wait_for_new_leader(old_leader, election_limit);
    EXPECT_NE(new_leader, old_leader);
    EXPECT_NE(cluster.serving_endpoints().find(cluster.member(new_leader).endpoint()), std::string::npos);
    EXPECT_EQ(cluster.serving_endpoints().find(cluster.member(old_leader).endpoint()), std::string::npos);

    // The two that are left are a quorum: a write goes through and both hold it.
    expect_put(cluster.etcdctl({"put", "after-kill", "two of three"}));
    for (std::size_t i = 0; i < 3; ++i) {
        if (i == old_leader) continue;
        EXPECT_TRUE(eventually([&] { return local_value(cluster.member(i), "after-kill") == "two of three"; }, 10s))
            << "member " << i;
    }
}

TEST(EtcdCluster, KeepsServingWhileTheLeaderIsPaused) {
    EtcdCluster cluster;
    const std::size_t paused = cluster.wait_for_leader(election_limit);
    cluster.member(paused).pause();

    const std::size_t new_leader = cluster.wait_for_new_leader(paused, election_limit);
    EXPECT_NE(new_leader, paused);
    expect_put(cluster.etcdctl({"put", "while-paused", "written"}));

    // Resumed, the old leader learns of the newer term, steps down and catches up.
    cluster.member(paused).resume();
    EXPECT_TRUE(eventually([&] { return local_value(cluster.member(paused), "while-paused") == "written"; }, 10s));
    EXPECT_TRUE(eventually([&] { return cluster.member(paused).healthy(); }, 10s));
    const std::size_t leader = cluster.wait_for_leader(election_limit);
    const auto leader_status = cluster.member(leader).status();
    const auto status = cluster.member(paused).status();
    ASSERT_TRUE(leader_status && status);
    EXPECT_EQ(status->leader_id, leader_status->member_id);
}

TEST(EtcdCluster, RestartedMemberRejoinsAndCatchesUp) {
    EtcdCluster cluster;
    const std::size_t leader = cluster.wait_for_leader(election_limit);
    const std::size_t follower = (leader + 1) % cluster.members();
    const std::string endpoint = cluster.member(follower).endpoint();
    cluster.member(follower).kill_hard();

    expect_put(cluster.etcdctl({"put", "while-down", "missed"}));
    cluster.member(follower).restart();
    EXPECT_EQ(cluster.member(follower).endpoint(), endpoint);
    EXPECT_TRUE(cluster.member(follower).healthy());
    EXPECT_TRUE(eventually([&] { return local_value(cluster.member(follower), "while-down") == "missed"; }, 10s));
    // A write through the restarted member alone reaches the others through the leader.
    expect_put(cluster.member(follower).etcdctl({"put", "through-restarted", "ok"}));
    EXPECT_TRUE(eventually([&] { return local_value(cluster.member(leader), "through-restarted") == "ok"; }, 10s));
}

TEST(EtcdCluster, DestructionLeavesNoProcessOrDirectory) {
    std::vector<pid_t> pids;
    std::vector<std::filesystem::path> dirs;
    {
        EtcdCluster cluster;
        cluster.member(0).pause();  // a stopped member is killed too
        for (std::size_t i = 0; i < cluster.members(); ++i) {
            pids.push_back(cluster.member(i).pid());
            dirs.push_back(cluster.member(i).dir());
        }
    }
    for (std::size_t i = 0; i < pids.size(); ++i) {
        EXPECT_TRUE(process_ended(pids[i])) << "member " << i;
        EXPECT_FALSE(std::filesystem::exists(dirs[i])) << dirs[i];
    }
}

// server_fixture (tests/server_fixture_main.cpp) with the etcd kinds, as ctest runs it: start
// writes a URL that serves, stop ends the keeper and its servers.
void check_fixture_kind(const std::string& kind, std::size_t members) {
    const std::filesystem::path state =
        std::filesystem::temp_directory_path() / ("fencelock-etcd-fixture-" + std::to_string(::getpid()) + "-" + kind);
    ASSERT_EQ(fencelock::local::run_process({SERVER_FIXTURE, "start", kind, state.string()}).exit_code, 0);
    std::ifstream in(state);
    std::string url;
    pid_t keeper = 0;
    ASSERT_TRUE(std::getline(in, url) && in >> keeper);
    ASSERT_EQ(url.rfind("etcd://", 0), 0u) << url;
    const std::string endpoints = url.substr(7);
    EXPECT_EQ(static_cast<std::size_t>(std::count(endpoints.begin(), endpoints.end(), ',')) + 1, members) << url;

    expect_put(fencelock::local::etcdctl_at(endpoints, {"put", "fixture-" + kind, "served"}));
    EXPECT_EQ(trimmed(fencelock::local::etcdctl_at(endpoints, {"get", "fixture-" + kind, "--print-value-only"}).out),
              "served");

    EXPECT_EQ(fencelock::local::run_process({SERVER_FIXTURE, "stop", state.string()}).exit_code, 0);
    EXPECT_FALSE(std::filesystem::exists(state));
    EXPECT_TRUE(eventually([&] { return process_ended(keeper); }, 10s));
    // Every member is gone: none answers on its client port.
    std::istringstream each(endpoints);
    for (std::string endpoint; std::getline(each, endpoint, ',');) {
        const auto port = static_cast<std::uint16_t>(std::stoi(endpoint.substr(endpoint.find(':') + 1)));
        EXPECT_EQ(fencelock::local::etcd_http(port, "GET", "/health", "", 300ms), std::nullopt) << endpoint;
    }
}

TEST(EtcdServerFixture, StartsAndStopsOneMember) { check_fixture_kind("etcd", 1); }

TEST(EtcdServerFixture, StartsAndStopsAThreeMemberCluster) { check_fixture_kind("etcd_cluster", 3); }

}  // namespace

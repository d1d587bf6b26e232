// The command-line tool on etcd: the same commands and exit codes through etcd://, options etcd
// cannot honour refused as bad input with nothing written, the queue refused, and `demo
// --coordinator etcd` showing the same fenced and unfenced runs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <memory>

#include "local_servers/child_process.hpp"
#include "local_servers/etcd_server.hpp"
#include "support/demo_checks.hpp"

namespace fencelock {
namespace {

using local::run_process;
using nlohmann::json;

class EtcdCli : public ::testing::Test {
protected:
    static void SetUpTestSuite() { etcd = std::make_unique<local::EtcdServer>(); }
    static void TearDownTestSuite() { etcd.reset(); }

    static local::ProcessResult cli(std::vector<std::string> args) {
        args.insert(args.begin(), {FENCELOCK_CLI, "--redis", etcd->url()});
        return run_process(args);
    }
    // The keys fencelock keeps in etcd (etcdctl reads them, not fencelock).
    static std::string keys() { return etcd->etcdctl({"get", "--prefix", "--keys-only", "fencelock/"}).out; }

    static std::unique_ptr<local::EtcdServer> etcd;
};

std::unique_ptr<local::EtcdServer> EtcdCli::etcd;

TEST_F(EtcdCli, AcquireInspectAndReleaseSpeakTheSameJson) {
    auto got = cli({"acquire", "cli-a", "--lease", "5s"});
    ASSERT_EQ(got.exit_code, 0) << got.err;
    const json lease = json::parse(got.out);
    EXPECT_TRUE(lease.at("acquired").get<bool>());
    const auto fence = lease.at("fence").get<std::uint64_t>();
    EXPECT_GT(fence, 0u);

    auto refused = cli({"acquire", "cli-a", "--lease", "5s"});
    EXPECT_EQ(refused.exit_code, 3) << "contended is a negative answer";

    auto inspected = cli({"inspect", "cli-a"});
    ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
    const json info = json::parse(inspected.out);
    EXPECT_EQ(info.at("fence").get<std::uint64_t>(), fence);
    EXPECT_EQ(info.at("owner"), lease.at("owner"));
    EXPECT_FALSE(info.contains("server_clock_offset_ms")) << "etcd has no clock to compare";

    auto released = cli({"release", "cli-a", "--owner", lease.at("owner").get<std::string>()});
    EXPECT_EQ(released.exit_code, 0) << released.err;
    EXPECT_EQ(keys().find("fencelock/lock/cli-a/"), std::string::npos);
}

TEST_F(EtcdCli, LeasesEtcdCannotKeepAreBadInputAndWriteNothing) {
    const std::string before = keys();
    for (const char* lease : {"2500ms", "1s"}) {
        auto r = cli({"acquire", "cli-bad", "--lease", lease});
        EXPECT_EQ(r.exit_code, 2) << lease << ": " << r.out << r.err;
        const json error = json::parse(r.out, nullptr, false);
        EXPECT_EQ(error.value("field", ""), "--lease") << r.out;
        EXPECT_NE(error.value("message", "").find("etcd"), std::string::npos) << r.out;
    }
    auto run = cli({"run", "cli-bad", "--lease", "1500ms", "--", "true"});
    EXPECT_EQ(run.exit_code, 2) << run.out << run.err;
    EXPECT_EQ(keys(), before);
}

TEST_F(EtcdCli, RunHandsTheFenceToTheCommand) {
    auto r = cli({"run", "cli-run", "--lease", "2s", "--", "sh", "-c", "echo $FENCELOCK_FENCE"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_GT(std::stoull(r.out), 0u);
    EXPECT_EQ(keys().find("fencelock/lock/cli-run/"), std::string::npos) << "run released the lock";
}

TEST_F(EtcdCli, TheQueueRefusesEtcd) {
    auto r = cli({"queue", "stats", "--queue", "jobs"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(json::parse(r.out, nullptr, false).value("field", ""), "--redis");
}

TEST_F(EtcdCli, DemoBadInputExitsTwo) {
    for (const auto& args :
         std::vector<std::vector<std::string>>{{"demo", "--coordinator", "zookeeper"},
                                               {"demo", "--coordinator", "etcd", "--lease", "2500ms"},
                                               {"demo", "--coordinator", "etcd", "--lease", "1s"},
                                               {"demo", "--coordinator", "etcd", "--failover"}}) {
        std::vector<std::string> argv{FENCELOCK_CLI};
        argv.insert(argv.end(), args.begin(), args.end());
        auto r = run_process(argv);
        EXPECT_EQ(r.exit_code, 2) << args.back() << "\n" << r.out << r.err;
    }
}

TEST(EtcdDemo, FencingLosesNothingAndTheUnfencedRunShowsTheDamage) {
    auto r =
        run_process({FENCELOCK_CLI, "demo", "--coordinator", "etcd", "--json", "--duration", "20s", "--seed", "7"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json report = json::parse(r.out);
    const json& fenced = report.at("fenced");
    const json& unfenced = report.at("unfenced");
    std::printf("etcd demo fenced:   %s\netcd demo unfenced: %s\n", fenced.dump().c_str(), unfenced.dump().c_str());
    test_support::expect_fencing_prevents_the_damage(fenced, unfenced);
}

}  // namespace
}  // namespace fencelock

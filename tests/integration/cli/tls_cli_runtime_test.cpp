// The long-running commands over rediss://, as a team on managed Redis runs them: `run` as the
// shipped ACL's locks user and `queue` plus `worker` as its queue user, against a TLS-only
// server that requires a client certificate and has the default user off
// (support/managed_redis.hpp). A permission ops/redis/fencelock.acl lacks fails here.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "integration/lock_fixture.hpp"
#include "local_servers/child_process.hpp"
#include "local_servers/redis_server.hpp"
#include "support/eventually.hpp"
#include "support/managed_redis.hpp"
#include "support/temp_dir.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;
using local::ProcessResult;
using local::run_process;
using nlohmann::json;

class TlsCliRuntimeTest : public ::testing::Test {
protected:
    local::RedisServer server{managed_redis_options()};
    TempDir dir;

    ProcessResult fencelock(const std::string& user, std::vector<std::string> args) const {
        args.insert(args.begin(), {FENCELOCK_CLI, "--redis", managed_redis_url(server, user), "--timeout", "2s"});
        return run_process(args);
    }
    json queue_stats(const std::string& queue) const {
        const auto s = fencelock(queue_user, {"queue", "stats", "--queue", queue});
        return s.exit_code == 0 ? json::parse(s.out) : json{};
    }
};

TEST_F(TlsCliRuntimeTest, RunHoldsTheLeaseOverRedissAndReleasesIt) {
    server.cli({"SET", "fence:{nightly}", "41"});
    const auto r =
        fencelock(locks_user, {"run", "nightly", "--lease", "5s", "--", "sh", "-c", "echo $FENCELOCK_FENCE"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    // The fence CMD saw is the one issued, newer than the last (fences are floored by the clock).
    const std::string fence = server.cli({"GET", "fence:{nightly}"});
    EXPECT_EQ(r.out, fence + "\n");
    EXPECT_GT(std::stoll(fence), 41);
    EXPECT_EQ(server.cli({"EXISTS", "lock:{nightly}"}), "0");  // released at the end
}

TEST_F(TlsCliRuntimeTest, RunPassesOnTheCommandsExitCodeOverRediss) {
    const auto r = fencelock(locks_user, {"run", "nightly", "--lease", "5s", "--", "sh", "-c", "exit 7"});
    EXPECT_EQ(r.exit_code, 7) << r.err;
    EXPECT_EQ(server.cli({"EXISTS", "lock:{nightly}"}), "0");
}

#ifdef FENCELOCK_CLI_WITH_QUEUE
TEST_F(TlsCliRuntimeTest, QueueCommandsAndAWorkerCompleteJobsOverRediss) {
    const std::string db = "sqlite://" + dir.path().string() + "/done.db";
    ASSERT_EQ(run_process({FENCELOCK_CLI, "store", "init", "--db", db}).exit_code, 0);
    for (const char* r : {"order:1", "order:2", "order:3"}) {
        const auto e = fencelock(queue_user, {"queue", "enqueue", "--queue", "q", "--resource", r, "--key", r});
        ASSERT_EQ(e.exit_code, 0) << e.out << e.err;
    }
    // One job fails for good, so `dead` and `retry-dead` have something to show over TLS.
    const auto bad = fencelock(queue_user, {"queue", "enqueue", "--queue", "q", "--resource", "order:bad", "--key",
                                            "bad", "--payload", R"({"fail": true})"});
    ASSERT_EQ(bad.exit_code, 0) << bad.err;
    const std::vector<std::string> worker{FENCELOCK_CLI,
                                          "--redis",
                                          managed_redis_url(server, queue_user),
                                          "worker",
                                          "--queue",
                                          "q",
                                          "--db",
                                          db,
                                          "--lease",
                                          "5s",
                                          "--max-attempts",
                                          "1",
                                          "--",
                                          "sh",
                                          "-c",
                                          "! grep -q fail"};
    const pid_t pid =
        local::start_process(worker, dir.path().string() + "/worker.out", dir.path().string() + "/worker.err");
    const bool settled = eventually(
        [&] {
            const json s = queue_stats("q");
            return s.value("completed", 0) == 3 && s.value("dead", 0) == 1;
        },
        30s);
    ::kill(pid, SIGTERM);
    EXPECT_EQ(local::wait_process(pid), 0);
    ASSERT_TRUE(settled) << queue_stats("q").dump();

    const auto dead = fencelock(queue_user, {"queue", "dead", "--queue", "q"});
    ASSERT_EQ(dead.exit_code, 0) << dead.err;
    EXPECT_NE(dead.out.find("order:bad"), std::string::npos) << dead.out;
    const auto retried = fencelock(queue_user, {"queue", "retry-dead", "--queue", "q"});
    EXPECT_EQ(retried.exit_code, 0) << retried.out << retried.err;
    EXPECT_EQ(queue_stats("q").value("dead", -1), 0);
}
#endif

}  // namespace
}  // namespace fencelock::test_support

// `fencelock worker --metrics-addr`: /healthz says the process is alive, /readyz whether its
// Redis answers. A paused redis-server (SIGSTOP: sockets open, no answers) turns /readyz 503
// while /healthz stays 200; once it answers again the worker is ready again.
#include <signal.h>

#include <string>

#include "local_servers/child_process.hpp"
#include "queue_cli_fixture.hpp"
#include "support/scrape.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

using WorkerReadinessCliTest = QueueCliTest;

/// Resumes a paused redis-server however the test ends, so TearDown finds it answering.
struct ResumeIfPaused {
    local::RedisServer& redis;
    bool paused = false;
    void pause() {
        redis.pause();
        paused = true;
    }
    void resume() {
        redis.resume();
        paused = false;
    }
    ~ResumeIfPaused() {
        if (paused) redis.resume();
    }
};

bool is_status(const std::string& response, const std::string& status) {
    return response.starts_with("HTTP/1.1 " + status);
}

TEST_P(WorkerReadinessCliTest, ReadinessFollowsAPausedRedisAndLivenessDoesNot) {
    const std::string d = dir.string();
    const auto port = local::free_port();
    const pid_t worker =
        local::start_process({FENCELOCK_CLI, "--redis", redis->url(), "--timeout", "200ms", "worker", "--queue", "rq",
                              "--db", db->url(), "--metrics-addr", "127.0.0.1:" + std::to_string(port), "--", "true"},
                             d + "/worker.out", d + "/worker.err");
    StopIfLeft running{worker};
    ResumeIfPaused server{*redis};
    const auto get = [&](const char* path) { return http_get(port, path); };

    ASSERT_TRUE(eventually([&] { return is_status(get("/healthz"), "200 OK"); }, 30s)) << slurp(dir / "worker.err");
    EXPECT_TRUE(get("/healthz").ends_with("\r\n\r\nok\n")) << get("/healthz");
    // Past the start-up probe (a failure there ends the worker): a slot waits in XREADGROUP.
    ASSERT_TRUE(eventually(
        [&] {
            return redis->cli({"CLIENT", "LIST"}).find("cmd=xreadgroup") != std::string::npos;
        },
        30s))
        << slurp(dir / "worker.err");
    std::string ready = get("/readyz");
    EXPECT_TRUE(is_status(ready, "200 OK")) << ready;

    server.pause();
    // The worker's own calls (its slot's read, the queue depth sampled for a not-ready answer)
    // time out after --timeout and report the failure.
    ASSERT_TRUE(eventually(
        [&] {
            ready = get("/readyz");
            return is_status(ready, "503");
        },
        30s))
        << ready << slurp(dir / "worker.err");
    EXPECT_NE(ready.find("redis unavailable"), std::string::npos) << ready;
    EXPECT_TRUE(is_status(get("/healthz"), "200 OK")) << "alive, only not ready";

    server.resume();
    ASSERT_TRUE(eventually(
        [&] {
            ready = get("/readyz");
            return is_status(ready, "200 OK");
        },
        30s))
        << ready << slurp(dir / "worker.err");
    EXPECT_TRUE(is_status(get("/healthz"), "200 OK"));
    EXPECT_EQ(running.stop(SIGTERM), 0) << slurp(dir / "worker.err");
}

INSTANTIATE_TEST_SUITE_P(Redis, WorkerReadinessCliTest, ::testing::Values(Backend::sqlite), backend_name);

}  // namespace
}  // namespace fencelock::test_support

// Redis's own words reach people. A std::error_code cannot carry text, so the transport keeps
// the error reply it classified (with the keys of a script) for error_detail(); JSON log lines
// carry it as `detail`, and so does the CLI's error object. The codes callers act on are the
// same as before. Each case also checks that nothing changed in Redis.
#include <nlohmann/json.hpp>

#include <mutex>

#include "fencelock/error.hpp"
#include "fencelock/logging.hpp"
#include "integration/lock_fixture.hpp"
#include "local_servers/child_process.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

class ErrorDetailTest : public LockTest {
protected:
    /// Acquires `name` once with a JSON log attached; returns the error and the log line.
    std::pair<std::error_code, nlohmann::json> failed_acquire(const std::string& name, ClientOptions options = {}) {
        std::mutex m;
        std::vector<std::string> lines;
        options.observer = std::make_shared<JsonLogObserver>(
            LogOptions{.level = LogLevel::warn, .raw_resource_ids = true, .sink = [&](std::string_view l) {
                           std::lock_guard lock(m);
                           lines.emplace_back(l);
                       }});
        auto c = client(options);
        auto r = c.try_acquire(resource(name), {.lease = 5s});
        EXPECT_FALSE(r) << "acquired despite the fault";
        std::lock_guard lock(m);
        EXPECT_EQ(lines.size(), 1u);
        return {r ? std::error_code{} : r.error(), lines.empty() ? nlohmann::json{} : nlohmann::json::parse(lines[0])};
    }

#ifdef FENCELOCK_CLI
    /// `fencelock acquire NAME` against `url`: its exit code and JSON error object.
    std::pair<int, nlohmann::json> cli_acquire(const std::string& url, const std::string& name) {
        auto r = local::run_process({FENCELOCK_CLI, "--redis", url, "acquire", name, "--lease", "5s"});
        return {r.exit_code, nlohmann::json::parse(r.out, nullptr, false)};
    }
#endif

    static bool contains(const nlohmann::json& j, const char* field, std::string_view text) {
        return j.contains(field) && j[field].is_string() && j[field].get<std::string>().find(text) != std::string::npos;
    }
};

TEST_F(ErrorDetailTest, OutOfMemoryShowsTheServersReplyAndTheKeys) {
    redis->cli({"CONFIG", "SET", "maxmemory", "1"});  // every write is refused (noeviction)
    const std::string before = redis->snapshot();
    const auto [code, line] = failed_acquire("order:1");
    EXPECT_EQ(code, errc::server_busy);
    const std::string detail = error_detail(code);
    EXPECT_NE(detail.find("OOM command not allowed"), std::string::npos) << detail;
    EXPECT_NE(detail.find("lock:{order:1}"), std::string::npos) << detail;
    EXPECT_TRUE(contains(line, "detail", "OOM command not allowed")) << line;
    EXPECT_EQ(line["attempts"], 1) << "numbers are JSON numbers";
#ifdef FENCELOCK_CLI
    const auto [exit_code, out] = cli_acquire(redis->url(), "order:1");
    EXPECT_EQ(exit_code, 4);
    EXPECT_EQ(out["message"], make_error_code(errc::server_busy).message());
    EXPECT_TRUE(contains(out, "detail", "OOM command not allowed")) << out;
#endif
    EXPECT_EQ(redis->snapshot(), before);
}

TEST_F(ErrorDetailTest, DatabaseOutOfRangeShowsTheServersReply) {
    const std::string before = redis->snapshot();
    auto endpoint = *parse_redis_url(redis->url() + "/99");
    auto c = LockClient::create(ClientOptions{.endpoint = endpoint});
    auto r = c->try_acquire(resource("order:2"), {.lease = 5s});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), errc::protocol_error);
    EXPECT_NE(error_detail(r.error()).find("DB index is out of range"), std::string::npos) << error_detail(r.error());
#ifdef FENCELOCK_CLI
    const auto [exit_code, out] = cli_acquire(redis->url() + "/99", "order:2");
    EXPECT_EQ(exit_code, 4);
    EXPECT_TRUE(contains(out, "detail", "DB index is out of range")) << out;
#endif
    EXPECT_EQ(redis->snapshot(), before);
}

TEST_F(ErrorDetailTest, CorruptKeyIsNamed) {
    redis->cli({"SET", "fence:{order:3}", "not-a-number"});
    redis->cli({"SET", "lock:{order:4}", "a string, not a hash"});
    const std::string before = redis->snapshot();
    const auto [counter, counter_line] = failed_acquire("order:3");
    EXPECT_EQ(counter, errc::corrupt_key);
    EXPECT_TRUE(contains(counter_line, "detail", "fence:{order:3}")) << counter_line;
    EXPECT_TRUE(contains(counter_line, "detail", "not an integer")) << counter_line;
    const auto [wrong_type, wrong_type_line] = failed_acquire("order:4");
    EXPECT_EQ(wrong_type, errc::corrupt_key);
    EXPECT_TRUE(contains(wrong_type_line, "detail", "WRONGTYPE")) << wrong_type_line;
    EXPECT_TRUE(contains(wrong_type_line, "detail", "lock:{order:4}")) << wrong_type_line;
#ifdef FENCELOCK_CLI
    const auto [exit_code, out] = cli_acquire(redis->url(), "order:3");
    EXPECT_EQ(exit_code, 4);
    EXPECT_TRUE(contains(out, "detail", "fence:{order:3}")) << out;
#endif
    EXPECT_EQ(redis->snapshot(), before);
}

}  // namespace
}  // namespace fencelock::test_support

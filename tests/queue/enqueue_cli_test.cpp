// queue enqueue --stdin (JSON lines, checked first, sent in pipelined chunks) and the default
// idempotency key, as a producer's script uses them.
#include <nlohmann/json.hpp>

#include <fstream>
#include "queue_cli_fixture.hpp"

namespace fencelock::test_support {
namespace {

using nlohmann::json;

class EnqueueCliTest : public QueueCliTest {
protected:
    std::filesystem::path write_input(const std::string& text) {
        const auto path = dir / "jobs.jsonl";
        std::ofstream(path) << text;
        return path;
    }
    local::ProcessResult enqueue_stdin(const std::string& text, const std::string& queue = "jobs") {
        return cli_with_stdin(write_input(text), {"queue", "enqueue", "--queue", queue, "--stdin"});
    }
};

TEST_P(EnqueueCliTest, StdinLinesAreEnqueuedInOrderWithTheirOwnDeduplication) {
    // 1203 jobs: three chunks; line 3 repeats line 1's key; a blank line is skipped.
    std::string input = R"({"resource":"order-1","key":"k-1","payload":{"amount":5}})"
                        "\n"
                        R"({"resource":"order-2","key":"k-2","delay_ms":3600000})"
                        "\n"
                        R"({"resource":"order-1","key":"k-1","payload":{"amount":6}})"
                        "\n"
                        "\n";
    for (int i = 0; i < 1200; ++i) input += R"({"resource":"bulk","key":"bulk-)" + std::to_string(i) + "\"}\n";
    auto r = enqueue_stdin(input);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto lines = json_lines(r.out);
    ASSERT_EQ(lines.size(), 1204u);
    EXPECT_EQ(lines[0]["line"], 1);
    EXPECT_EQ(lines[0]["key"], "k-1");
    EXPECT_EQ(lines[0]["duplicate"], false);
    EXPECT_EQ(lines[2]["line"], 3);
    EXPECT_EQ(lines[2]["duplicate"], true);
    EXPECT_EQ(lines[2]["id"], lines[0]["id"]);
    EXPECT_EQ(lines[3]["line"], 5);  // after the blank line
    EXPECT_EQ(lines[1202]["key"], "bulk-1199");
    EXPECT_EQ(lines.back(), (json{{"enqueued", 1202}, {"duplicates", 1}}));
    const auto s = stats();
    EXPECT_EQ(s.ready, 1201u);
    EXPECT_EQ(s.delayed, 1u);
    // The payload is the line's JSON value, as text.
    auto shown = cli({"queue", "show", "--queue", "jobs", lines[0]["id"]});
    ASSERT_EQ(shown.exit_code, 0) << shown.out;
    EXPECT_EQ(json::parse(shown.out)["payload"], R"({"amount":5})");
}

TEST_P(EnqueueCliTest, ABadLineEnqueuesNothingAndIsNamed) {
    ASSERT_EQ(enqueue_stdin(R"({"resource":"seed","key":"seed"})"
                            "\n")
                  .exit_code,
              0);
    const std::string good = R"({"resource":"r","key":"fine"})"
                             "\n";
    const std::vector<std::pair<std::string, std::string>> bad = {
        {good + "{nope\n", "line 2: line is not a JSON object"},
        {good + good +
             R"(["resource"])"
             "\n",
         "line 3: line is not a JSON object"},
        {good + R"({"key":"k"})"
                "\n",
         "line 2: resource is missing"},
        {good + R"({"resource":"r","key":""})"
                "\n",
         "line 2: key must be 1..256 bytes"},
        {good + R"({"resource":"r","key":7})"
                "\n",
         "line 2: key must be a string"},
        {good + R"({"resource":"r","delay_ms":-1})"
                "\n",
         "line 2: delay_ms must be a non-negative integer"},
        {good + R"({"resource":"r","ky":"typo"})"
                "\n",
         "line 2: ky is not a job field"},
        {good + "{\"resource\":\"r\\u0000\"}\n", "line 2: resource"},
        {"\n \n", "no job on stdin"},
    };
    const std::string before = redis->snapshot();
    for (const auto& [input, message] : bad) {
        auto r = enqueue_stdin(input);
        EXPECT_EQ(r.exit_code, 2) << input << r.out << r.err;
        const auto e = json::parse(r.out);
        EXPECT_EQ(e["error"], "invalid_input");
        EXPECT_EQ(e["field"], "--stdin");
        EXPECT_NE(e["message"].get<std::string>().find(message), std::string::npos) << e["message"] << " for " << input;
    }
    auto mixed =
        cli_with_stdin(write_input(good), {"queue", "enqueue", "--queue", "jobs", "--stdin", "--resource", "r"});
    EXPECT_EQ(mixed.exit_code, 2);
    EXPECT_EQ(json::parse(mixed.out)["field"], "--resource");
    EXPECT_EQ(redis->snapshot(), before);
}

TEST_P(EnqueueCliTest, WithoutKeyEachEnqueueIsANewJobWithARandomKey) {
    auto first = cli({"queue", "enqueue", "--queue", "jobs", "--resource", "report"});
    auto second = cli({"queue", "enqueue", "--queue", "jobs", "--resource", "report"});
    ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
    ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
    const auto a = json::parse(first.out), b = json::parse(second.out);
    EXPECT_EQ(a["duplicate"], false);
    EXPECT_EQ(b["duplicate"], false);
    EXPECT_EQ(a["key"].get<std::string>().size(), 32u);
    EXPECT_NE(a["key"], b["key"]);
    EXPECT_NE(a["id"], b["id"]);
    EXPECT_EQ(stats().ready, 2u);
    // The printed key is the job's key: enqueueing with it again is a duplicate.
    auto again = cli({"queue", "enqueue", "--queue", "jobs", "--resource", "report", "--key", a["key"]});
    EXPECT_EQ(json::parse(again.out)["id"], a["id"]);
    const std::string before = redis->snapshot();
    auto missing = cli({"queue", "enqueue", "--queue", "jobs", "--key", "k"});
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_EQ(json::parse(missing.out)["field"], "--resource");
    EXPECT_EQ(redis->snapshot(), before);
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Redis, EnqueueCliTest, ::testing::Values(Backend::sqlite), backend_name);

}  // namespace fencelock::test_support

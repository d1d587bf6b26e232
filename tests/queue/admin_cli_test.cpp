// queue list / show / retry / discard / purge as an operator runs them: each state listed and
// paged, single dead jobs repaired, purges confirmed; every refusal leaves Redis as it was.
#include <nlohmann/json.hpp>

#include <sstream>

#include "queue_cli_fixture.hpp"

namespace fencelock::test_support {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class QueueAdminCliTest : public QueueCliTest {
protected:
    /// Enqueues through the CLI; returns the job id.
    std::string enqueue_cli(const std::string& resource, const std::string& key,
                            const std::vector<std::string>& extra = {}) {
        std::vector<std::string> args{"queue", "enqueue", "--queue", queue_name, "--resource", resource, "--key", key};
        args.insert(args.end(), extra.begin(), extra.end());
        auto r = cli(args);
        EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
        return json::parse(r.out)["id"];
    }
    /// Runs a real worker whose handler always fails, with one business attempt allowed, until
    /// `count` jobs are dead.
    void let_jobs_die(std::uint64_t count) {
        auto locks = client();
        WorkerOptions options{
            .processing = {.lease = 5000ms, .retry = fast_policies()}, .block = 100ms, .promote_every = 20ms};
        options.processing.retry.max_business_attempts = 1;
        BackgroundWorker w(QueueWorker::create(queue_options(), options, locks, *store).value(),
                           [](const JobContext&, Transaction&) -> std::expected<void, JobFailure> {
                               return std::unexpected(JobFailure::business("always fails"));
                           });
        ASSERT_TRUE(eventually([&] { return stats().dead == count; }, 30s)) << describe(stats());
        w.stop();
    }
    /// Delivers the oldest ready job to consumer "operator-test" as a worker's read does: it is
    /// running from then on (nobody acknowledges it).
    void take_one() {
        redis->cli({"XREADGROUP", "GROUP", "workers", "operator-test", "COUNT", "1", "STREAMS",
                    "queue:{" + queue_name + "}:stream", ">"});
    }
    std::vector<json> list(const std::string& state, const std::vector<std::string>& extra = {}) {
        std::vector<std::string> args{"queue", "list", "--queue", queue_name, "--state", state};
        args.insert(args.end(), extra.begin(), extra.end());
        auto r = cli(args);
        EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
        return json_lines(r.out);
    }
    /// Every refusal exits with `code` and changes nothing in Redis.
    void expect_refused(const std::vector<std::vector<std::string>>& commands, int code, const std::string& result) {
        const std::string before = redis->snapshot();
        for (const auto& args : commands) {
            auto r = cli(args);
            EXPECT_EQ(r.exit_code, code) << args[1] << " " << args.back() << ": " << r.out << r.err;
            const auto out = json::parse(r.out);
            EXPECT_EQ(code == 3 ? out["result"] : out["error"], result) << r.out;
        }
        EXPECT_EQ(redis->snapshot(), before);
    }
};

TEST_P(QueueAdminCliTest, ListsEachStateInPagesAndShowsOneJob) {
    const std::string dead_id = enqueue_cli("fail-1", "k-fail-1", {"--payload", R"({"n":0})"});
    let_jobs_die(1);
    std::vector<std::string> ready;
    for (int i = 1; i <= 5; ++i) ready.push_back(enqueue_cli("r-" + std::to_string(i), "k-r-" + std::to_string(i)));
    const std::string later_1 = enqueue_cli("d-1", "k-d-1", {"--delay", "1h"});
    const std::string later_2 = enqueue_cli("d-2", "k-d-2", {"--delay", "2h"});
    take_one();  // ready[0] is running now

    // ready: 4 jobs in pages of 2; the closing object carries the cursor, null on the last page.
    auto page = list("ready", {"--limit", "2"});
    ASSERT_EQ(page.size(), 3u);
    EXPECT_EQ(page[0]["id"], ready[1]);
    EXPECT_EQ(page[1]["id"], ready[2]);
    EXPECT_EQ(page[0]["state"], "ready");
    EXPECT_EQ(page[0]["resource"], "r-2");
    EXPECT_EQ(page[0]["key"], "k-r-2");
    EXPECT_TRUE(page[0]["due_ms"].is_null());
    EXPECT_TRUE(page[0]["consumer"].is_null());
    EXPECT_EQ(page[2]["listed"], 2);
    ASSERT_TRUE(page[2]["next_cursor"].is_string()) << page[2];
    page = list("ready", {"--limit", "2", "--after", page[2]["next_cursor"]});
    ASSERT_EQ(page.size(), 3u);
    EXPECT_EQ(page[0]["id"], ready[3]);
    EXPECT_EQ(page[1]["id"], ready[4]);
    EXPECT_TRUE(page[2]["next_cursor"].is_null()) << page[2];

    page = list("running");
    ASSERT_EQ(page.size(), 2u);
    EXPECT_EQ(page[0]["id"], ready[0]);
    EXPECT_EQ(page[0]["consumer"], "operator-test");
    EXPECT_EQ(page[0]["delivery_count"], 1);
    EXPECT_TRUE(page[1]["next_cursor"].is_null());

    page = list("delayed", {"--limit", "1"});
    ASSERT_EQ(page.size(), 2u);
    EXPECT_EQ(page[0]["id"], later_1);
    EXPECT_GT(page[0]["due_ms"].get<std::int64_t>(), 0);
    EXPECT_TRUE(page[0]["entry_id"].is_null());
    ASSERT_TRUE(page[1]["next_cursor"].is_string()) << page[1];
    page = list("delayed", {"--limit", "1", "--after", page[1]["next_cursor"]});
    ASSERT_EQ(page.size(), 2u);
    EXPECT_EQ(page[0]["id"], later_2);
    EXPECT_TRUE(page[1]["next_cursor"].is_null());

    page = list("dead");
    ASSERT_EQ(page.size(), 2u);
    EXPECT_EQ(page[0]["id"], dead_id);
    EXPECT_EQ(page[0]["payload"], R"({"n":0})");
    EXPECT_NE(page[0]["reason"].get<std::string>().find("always fails"), std::string::npos) << page[0];
    EXPECT_GT(page[0]["failed_ms"].get<std::int64_t>(), 0);

    for (const auto& [id, state] : std::vector<std::pair<std::string, std::string>>{
             {ready[0], "running"}, {ready[4], "ready"}, {later_2, "delayed"}, {dead_id, "dead"}}) {
        auto shown = cli({"queue", "show", "--queue", "jobs", id});
        ASSERT_EQ(shown.exit_code, 0) << shown.out << shown.err;
        const auto j = json::parse(shown.out);
        EXPECT_EQ(j["result"], "found");
        EXPECT_EQ(j["id"], id);
        EXPECT_EQ(j["state"], state);
    }
    const std::string nobody(32, 'a');
    expect_refused({{"queue", "show", "--queue", "jobs", nobody}}, 3, "not_found");
    expect_refused({{"queue", "list", "--queue", "jobs", "--state", "finished"},
                    {"queue", "list", "--queue", "jobs", "--state", "ready", "--limit", "0"},
                    {"queue", "list", "--queue", "jobs", "--state", "ready", "--limit", "1001"},
                    {"queue", "list", "--queue", "jobs", "--state", "ready", "--after", "12:3"},
                    {"queue", "list", "--queue", "jobs", "--state", "delayed", "--after", "12-3"},
                    {"queue", "list", "--queue", "a{q}", "--state", "ready"},
                    {"queue", "show", "--queue", "jobs", "not-a-job-id"}},
                   2, "invalid_input");
}

TEST_P(QueueAdminCliTest, RetryDiscardAndPurgeChangeOnlyWhatTheyName) {
    const std::string dead_1 = enqueue_cli("fail-1", "k-fail-1");
    const std::string dead_2 = enqueue_cli("fail-2", "k-fail-2");
    let_jobs_die(2);
    const std::string running = enqueue_cli("r-1", "k-r-1");
    const std::string ready = enqueue_cli("r-2", "k-r-2");
    take_one();  // r-1, the oldest ready job, is running now
    enqueue_cli("d-1", "k-d-1", {"--delay", "1h"});

    const std::string nobody(32, 'b');
    expect_refused({{"queue", "retry", "--queue", "jobs", ready},
                    {"queue", "retry", "--queue", "jobs", running},
                    {"queue", "discard", "--queue", "jobs", ready}},
                   3, "not_dead");
    expect_refused({{"queue", "retry", "--queue", "jobs", nobody}, {"queue", "discard", "--queue", "jobs", nobody}}, 3,
                   "not_found");
    expect_refused({{"queue", "purge", "--queue", "jobs"},
                    {"queue", "purge", "--queue", "jobs", "--state", "dead"},
                    {"queue", "purge", "--queue", "jobs", "--state", "running", "--yes"},
                    {"queue", "purge", "--queue", "jobs", "--state", "gone", "--yes"},
                    {"queue", "retry", "--queue", "jobs", "XYZ"},
                    {"queue", "discard", "--queue", "jobs", dead_1 + "0"}},
                   2, "invalid_input");

    auto retried = cli({"queue", "retry", "--queue", "jobs", dead_1});
    ASSERT_EQ(retried.exit_code, 0) << retried.out << retried.err;
    EXPECT_EQ(json::parse(retried.out), (json{{"result", "retried"}, {"id", dead_1}}));
    EXPECT_EQ(json::parse(cli({"queue", "show", "--queue", "jobs", dead_1}).out)["state"], "ready");

    auto discarded = cli({"queue", "discard", "--queue", "jobs", dead_2});
    ASSERT_EQ(discarded.exit_code, 0) << discarded.out << discarded.err;
    EXPECT_EQ(json::parse(discarded.out), (json{{"result", "discarded"}, {"id", dead_2}}));
    expect_refused({{"queue", "discard", "--queue", "jobs", dead_2}}, 3, "not_found");
    auto s = stats();
    EXPECT_EQ(s.dead, 0u);
    EXPECT_EQ(s.ready, 2u);  // r-2 and the retried job
    EXPECT_EQ(s.counter("discarded"), 1u);
    // The discarded job's key is forgotten: the same key makes a new job.
    auto again = cli({"queue", "enqueue", "--queue", "jobs", "--resource", "fail-2", "--key", "k-fail-2"});
    ASSERT_EQ(again.exit_code, 0);
    EXPECT_EQ(json::parse(again.out)["duplicate"], false);
    EXPECT_NE(json::parse(again.out)["id"], dead_2);

    auto delayed = cli({"queue", "purge", "--queue", "jobs", "--state", "delayed", "--yes"});
    ASSERT_EQ(delayed.exit_code, 0) << delayed.out << delayed.err;
    EXPECT_EQ(json::parse(delayed.out), (json{{"result", "purged"}, {"queue", "jobs"}, {"delayed", 1}, {"purged", 1}}));
    s = stats();
    EXPECT_EQ(s.delayed, 0u);
    EXPECT_EQ(s.ready, 3u);

    auto all = cli({"queue", "purge", "--queue", "jobs", "--yes"});
    ASSERT_EQ(all.exit_code, 0) << all.out << all.err;
    EXPECT_EQ(
        json::parse(all.out),
        (json{{"result", "purged"}, {"queue", "jobs"}, {"ready", 3}, {"delayed", 0}, {"dead", 0}, {"purged", 3}}));
    s = stats();
    EXPECT_EQ(s.ready, 0u);
    EXPECT_EQ(s.in_flight, 1u);  // the running job stays with its worker
    EXPECT_EQ(s.counter("purged"), 4u);
    const auto still = list("running");
    ASSERT_EQ(still.size(), 2u);
    EXPECT_EQ(still[0]["resource"], "r-1");
    auto fresh = cli({"queue", "enqueue", "--queue", "jobs", "--resource", "r-2", "--key", "k-r-2"});
    EXPECT_EQ(json::parse(fresh.out)["duplicate"], false);
    auto kept = cli({"queue", "enqueue", "--queue", "jobs", "--resource", "r-1", "--key", "k-r-1"});
    EXPECT_EQ(json::parse(kept.out)["duplicate"], true);  // the running job keeps its key
}

// For people: stats as named fields and list as a table with the state's own columns (JSON
// when piped stays as above: these ask for --table).
TEST_P(QueueAdminCliTest, StatsAndListReadAsTablesForPeople) {
    const std::string id = enqueue_cli("order:1", "k-table");
    const auto stats = cli({"queue", "stats", "--queue", queue_name, "--table"});
    EXPECT_EQ(stats.exit_code, 0) << stats.err;
    // "name  value" lines, the names padded to the longest.
    const auto value_of = [&](const std::string& name) {
        std::istringstream lines(stats.out);
        for (std::string line; std::getline(lines, line);)
            if (line.rfind(name + " ", 0) == 0) return line.substr(line.find_first_not_of(' ', name.size()));
        return std::string("(no line)");
    };
    EXPECT_EQ(value_of("queue"), queue_name) << stats.out;
    EXPECT_EQ(value_of("ready"), "1") << stats.out;
    EXPECT_EQ(value_of("dead"), "0") << stats.out;
    const auto ready = cli({"queue", "list", "--queue", queue_name, "--state", "ready", "--table"});
    EXPECT_EQ(ready.exit_code, 0) << ready.err;
    EXPECT_EQ(ready.out.rfind("ID", 0), 0u) << ready.out;
    for (const std::string part : {std::string("RESOURCE"), std::string("LAST ERROR"), id, std::string("k-table")})
        EXPECT_NE(ready.out.find(part), std::string::npos) << part << " in\n" << ready.out;
    EXPECT_EQ(ready.out.find('{'), std::string::npos) << ready.out;
    EXPECT_EQ(cli({"queue", "list", "--queue", queue_name, "--state", "dead", "--table"}).out,
              "no dead jobs in queue " + queue_name + "\n");
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Redis, QueueAdminCliTest, ::testing::Values(Backend::sqlite), backend_name);

}  // namespace fencelock::test_support

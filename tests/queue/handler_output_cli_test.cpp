// `fencelock worker -- CMD`: what CMD prints reaches the worker's stderr as JSON log objects,
// one per line, tagged with the job and the stream; the worker's stderr holds nothing else, and
// a handler printing a lot never stalls the worker.
#include <signal.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "local_servers/child_process.hpp"
#include "queue_cli_fixture.hpp"
#include "support/process_state.hpp"

namespace fencelock::test_support {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

using HandlerOutputCliTest = QueueCliTest;

struct Printed {
    std::string stream, line;
    bool continues = false;
};

TEST_P(HandlerOutputCliTest, EachHandlerLineIsOneJsonLogObjectTaggedWithItsJobAndStream) {
    const std::string d = dir.string();
    // mixed: both streams, JSON's special characters and a Latin-1 byte, a last line without a
    // newline; long: one 40,000-byte line; lot: 1 MiB in 100-byte lines, far more than a pipe
    // holds, then a 76-byte line unended; escape: leaves a process that escaped its group
    // (env -i clears the tree tag, posix/child.hpp) holding both pipes open for two minutes.
    const std::string script =
        "case \"$FENCELOCK_RESOURCE\" in "
        "mixed) echo \"out $FENCELOCK_JOB_ID\"; printf 'tab\\there \"q\" \\351\\n' >&2; "
        "echo \"err $FENCELOCK_JOB_ID\" >&2; printf 'no newline';; "
        "long) head -c 40000 /dev/zero | tr '\\0' x; echo;; "
        "lot) head -c 1048576 /dev/zero | tr '\\0' y | fold -w 100;; "
        "escape) env -i setsid sh -c 'echo $$ > " +
        d +
        "/escaped.pid; exec sleep 120' & "
        "while [ ! -s " +
        d +
        "/escaped.pid ]; do sleep 0.01; done; echo escaped;; "
        "esac";
    std::map<std::string, std::string> job;  // id -> resource
    for (const std::string r : {"mixed", "long", "lot", "escape"}) {
        auto e = cli({"queue", "enqueue", "--queue", "hq", "--resource", r, "--key", "key-" + r});
        ASSERT_EQ(e.exit_code, 0) << e.err;
        job[json::parse(e.out)["id"]] = r;
    }
    const pid_t worker = local::start_process({FENCELOCK_CLI, "--redis", redis->url(), "worker", "--queue", "hq",
                                               "--db", db->url(), "--concurrency", "2", "--", "sh", "-c", script},
                                              d + "/worker.out", d + "/worker.err");
    queue_name = "hq";
    auto hq = JobQueue::create(queue_options()).value();
    const bool done = eventually(
        [&] {
            auto s = hq.stats();
            return s && s->counter("completed") == 4;
        },
        60s);  // half the escaped process's life: the worker never waits for the pipes' EOF
    ::kill(worker, SIGTERM);
    EXPECT_EQ(local::wait_process(worker), 0);
    const std::string escaped = slurp(dir / "escaped.pid");
    if (!escaped.empty()) ::kill(std::stoi(escaped), SIGKILL);
    ASSERT_TRUE(done) << describe(hq.stats().value()) << slurp(dir / "worker.err").substr(0, 4000);
    EXPECT_EQ(json::parse(slurp(dir / "worker.out"))["completed"], 4);  // stdout: the summary alone

    // Every line of stderr is a JSON object (json_lines throws otherwise).
    std::map<std::string, std::vector<Printed>> printed;  // resource -> lines in order
    std::size_t objects = 0;
    for (const auto& o : json_lines(slurp(dir / "worker.err"))) {
        ++objects;
        ASSERT_TRUE(o.is_object()) << o;
        if (o["event"] != "handler_output") continue;
        EXPECT_EQ(o["level"], "warn");
        ASSERT_TRUE(job.contains(o["job_id"])) << o;
        printed[job[o["job_id"]]].push_back(
            {o["stream"], o["line"], o.contains("continues") && o["continues"].get<bool>()});
    }
    EXPECT_GT(objects, 10000u);

    const auto& mixed = printed["mixed"];
    const std::string id = std::find_if(job.begin(), job.end(), [](auto& j) { return j.second == "mixed"; })->first;
    ASSERT_EQ(mixed.size(), 4u);
    std::map<std::string, std::vector<std::string>> by_stream;
    for (const auto& p : mixed) by_stream[p.stream].push_back(p.line);
    EXPECT_EQ(by_stream["stdout"], (std::vector<std::string>{"out " + id, "no newline"}));
    EXPECT_EQ(by_stream["stderr"], (std::vector<std::string>{"tab\there \"q\" \xEF\xBF\xBD", "err " + id}));
    ASSERT_EQ(printed["escape"].size(), 1u);
    EXPECT_EQ(printed["escape"][0].line, "escaped");

    // 40,000 bytes: two 16 KiB pieces that continue, then the rest.
    const auto& long_line = printed["long"];
    ASSERT_EQ(long_line.size(), 3u);
    std::string joined;
    for (std::size_t i = 0; i < long_line.size(); ++i) {
        EXPECT_EQ(long_line[i].stream, "stdout");
        EXPECT_EQ(long_line[i].continues, i < 2) << i;
        joined += long_line[i].line;
    }
    EXPECT_EQ(long_line[0].line.size(), 16384u);
    EXPECT_EQ(joined, std::string(40000, 'x'));

    const auto& lot = printed["lot"];
    ASSERT_EQ(lot.size(), 10486u);  // 1048576 = 10485 x 100 + 76
    std::size_t bytes = 0;
    for (const auto& p : lot) {
        EXPECT_EQ(p.stream, "stdout");
        EXPECT_FALSE(p.continues);
        EXPECT_EQ(p.line.find_first_not_of('y'), std::string::npos);
        bytes += p.line.size();
    }
    EXPECT_EQ(bytes, 1048576u);
    EXPECT_EQ(lot.back().line.size(), 76u);
}

// A handler that writes without pause (yes) keeps the pipe full: the worker must still look at
// its stop signals between reads, stop the handler at the shutdown deadline and exit.
TEST_P(HandlerOutputCliTest, AHandlerThatNeverPausesWritingIsStillStoppedAtTheShutdownDeadline) {
    const std::string d = dir.string();
    ASSERT_EQ(cli({"queue", "enqueue", "--queue", "yq", "--resource", "chatty", "--key", "k"}).exit_code, 0);
    const pid_t worker = local::start_process({FENCELOCK_CLI, "--redis", redis->url(), "worker", "--queue", "yq",
                                               "--db", db->url(), "--grace", "200ms", "--", "yes", "chatty"},
                                              d + "/worker.out", d + "/worker.err");
    const bool writing =
        eventually([&] { return slurp(dir / "worker.err").find("handler_output") != std::string::npos; }, 30s);
    ::kill(worker, SIGTERM);
    const bool ended = eventually([&] { return process_ended(worker); }, 60s);
    if (!ended) ::kill(worker, SIGKILL);
    const int code = local::wait_process(worker);
    ASSERT_TRUE(writing);
    ASSERT_TRUE(ended) << "the worker never got past the handler's output";
    EXPECT_EQ(code, 0);
    const auto summary = json::parse(slurp(dir / "worker.out"));
    EXPECT_EQ(summary["cancelled"], 1) << summary;
    std::size_t lines = 0;
    for (const auto& o : json_lines(slurp(dir / "worker.err")))
        if (o["event"] == "handler_output") {
            EXPECT_EQ(o["line"], "chatty");
            ++lines;
        }
    EXPECT_GT(lines, 0u);
}

// --handler-output FILE: what CMD prints is appended to FILE, each line tagged with its job and
// stream, and none of it reaches the worker's log. FILE keeps what it held (appended, not truncated).
TEST_P(HandlerOutputCliTest, HandlerOutputFileGetsEveryLineTaggedAndTheLogNone) {
    const std::string d = dir.string();
    const std::string file = d + "/handler.log";
    {
        std::ofstream earlier(file);
        earlier << "earlier line\n";
    }
    std::map<std::string, std::string> job;  // resource -> id
    for (const std::string r : {"fa", "fb"}) {
        auto e = cli({"queue", "enqueue", "--queue", "fq", "--resource", r, "--key", "key-" + r});
        ASSERT_EQ(e.exit_code, 0) << e.err;
        job[r] = json::parse(e.out)["id"];
    }
    const std::string script =
        "echo \"out $FENCELOCK_RESOURCE\"; echo; echo \"err $FENCELOCK_RESOURCE\" >&2; "
        "printf 'last'";
    const pid_t worker = local::start_process({FENCELOCK_CLI, "--redis", redis->url(), "worker", "--queue", "fq",
                                               "--db", db->url(), "--handler-output", file, "--", "sh", "-c", script},
                                              d + "/worker.out", d + "/worker.err");
    StopIfLeft running{worker};
    queue_name = "fq";
    auto fq = JobQueue::create(queue_options()).value();
    const bool done = eventually(
        [&] {
            auto s = fq.stats();
            return s && s->counter("completed") == 2;
        },
        60s);
    EXPECT_EQ(running.stop(SIGTERM), 0);
    ASSERT_TRUE(done) << describe(fq.stats().value()) << slurp(dir / "worker.err");

    std::map<std::string, std::vector<std::string>> lines;  // "<id> <stream>" -> the lines after ": "
    std::istringstream in(slurp(file));
    std::string first;
    ASSERT_TRUE(std::getline(in, first));
    EXPECT_EQ(first, "earlier line");
    for (std::string line; std::getline(in, line);) {
        const auto colon = line.find(": ");
        ASSERT_NE(colon, std::string::npos) << line;
        lines[line.substr(0, colon)].push_back(line.substr(colon + 2));
    }
    std::map<std::string, std::vector<std::string>> expected;
    for (const auto& [r, id] : job) {
        expected[id + " stdout"] = {"out " + r, "", "last"};
        expected[id + " stderr"] = {"err " + r};
    }
    EXPECT_EQ(lines, expected) << slurp(file);
    for (const auto& o : json_lines(slurp(dir / "worker.err"))) EXPECT_NE(o["event"], "handler_output") << o;
    EXPECT_EQ(json::parse(slurp(dir / "worker.out"))["completed"], 2);
}

// A --handler-output the worker cannot open for appending is invalid input: exit 2 before Redis
// or the database is contacted, the queue's keys as they were, no job taken.
TEST_P(HandlerOutputCliTest, AnUnwritableHandlerOutputIsInvalidInputAndChangesNothing) {
    ASSERT_EQ(cli({"queue", "enqueue", "--queue", "bq", "--resource", "r", "--key", "k"}).exit_code, 0);
    const std::string before = redis->snapshot();
    for (const std::string& bad : {(dir / "no-such-dir" / "out.log").string(), dir.string(), std::string()}) {
        auto r = cli({"worker", "--queue", "bq", "--db", db->url(), "--handler-output", bad, "--", "true"});
        EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.out << r.err;
        const auto out = json::parse(r.out);
        EXPECT_EQ(out["error"], "invalid_input") << r.out;
        EXPECT_EQ(out["field"], "--handler-output") << r.out;
        if (!bad.empty()) {
            EXPECT_NE(out["message"].get<std::string>().find(bad), std::string::npos) << r.out;
        }
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "no-such-dir"));
    EXPECT_EQ(redis->snapshot(), before);
}

INSTANTIATE_TEST_SUITE_P(Redis, HandlerOutputCliTest, ::testing::Values(Backend::sqlite), backend_name);

}  // namespace
}  // namespace fencelock::test_support

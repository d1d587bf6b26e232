// Arguments the client never sends, sent anyway by EVAL: every queue script checks its ARGV at
// the top (src/queue/scripts/lib/args.lua) and answers with an error reply naming the argument,
// leaving Redis exactly as it was. Against a real redis-server; Redis snapshots are compared.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "local_servers/redis_server.hpp"
#include "queue/scripts.hpp"

namespace fencelock::test_support {
namespace {

namespace scripts = detail::queue_scripts;

const std::string stream = "queue:{q}:stream", delayed = "queue:{q}:delayed", dead = "queue:{q}:dead",
                  keys = "queue:{q}:keys", stats = "queue:{q}:stats";

class QueueScriptArgsTest : public ::testing::Test {
protected:
    /// EVAL of `script` with `key_names` as KEYS and `args` as ARGV; redis-cli's output.
    std::string eval(const detail::ScriptSource& script, const std::vector<std::string>& key_names,
                     const std::vector<std::string>& args) {
        std::vector<std::string> argv{"EVAL", std::string(script.body), std::to_string(key_names.size())};
        argv.insert(argv.end(), key_names.begin(), key_names.end());
        argv.insert(argv.end(), args.begin(), args.end());
        return redis.cli(argv);
    }

    /// A queue with a ready job, a delayed one and one pending for consumer c1; the entry id of
    /// the pending one.
    std::string fill() {
        const std::vector<std::string> k4{stream, delayed, keys, stats};
        EXPECT_EQ(eval(scripts::enqueue, k4, {"j1", "k1", "0", "id", "j1", "key", "k1"}), "1\nj1");
        EXPECT_EQ(eval(scripts::enqueue, k4, {"j2", "k2", "0", "id", "j2", "key", "k2"}), "1\nj2");
        EXPECT_EQ(eval(scripts::enqueue, k4, {"j3", "k3", "3600000", "id", "j3", "key", "k3"}), "1\nj3");
        const std::string read =
            redis.cli({"--raw", "XREADGROUP", "GROUP", "workers", "c1", "COUNT", "1", "STREAMS", stream, ">"});
        // --raw prints the stream name, then the entry id.
        const auto first = read.find('\n');
        const auto second = read.find('\n', first + 1);
        return read.substr(first + 1, second - first - 1);
    }

    local::RedisServer redis;
};

struct BadCall {
    const detail::ScriptSource* script;
    std::vector<std::string> keys;
    std::vector<std::string> args;
    std::string names;  ///< what the error reply must name, e.g. "argument 3"
};

TEST_F(QueueScriptArgsTest, BadArgumentsAreRefusedByNameWithNothingChanged) {
    const std::string e = fill();
    ASSERT_NE(e.find('-'), std::string::npos) << "no pending entry: " << e;
    const std::vector<std::string> k4{stream, delayed, keys, stats};
    const std::vector<BadCall> bad = {
        {&scripts::enqueue, k4, {"", "k9", "0", "id", "x"}, "argument 1"},
        {&scripts::enqueue, k4, {"j9", "", "0", "id", "x"}, "argument 2"},
        {&scripts::enqueue, k4, {"j9", "k9", "-1", "id", "x"}, "argument 3"},
        {&scripts::enqueue, k4, {"j9", "k9", "1e3", "id", "x"}, "argument 3"},
        {&scripts::enqueue, k4, {"j9", "k9", "4503599627370497", "id", "x"}, "argument 3"},
        {&scripts::enqueue, k4, {"j9", "k9", "0", "id"}, "arguments 4.."},
        {&scripts::enqueue, k4, {"j9", "k9", "0"}, "arguments 4.."},
        {&scripts::requeue, {stream, delayed, stats}, {"", e, "0", "requeued", "id", "x"}, "argument 1"},
        {&scripts::requeue, {stream, delayed, stats}, {"c1", "bad", "0", "requeued", "id", "x"}, "argument 2"},
        {&scripts::requeue, {stream, delayed, stats}, {"c1", e, "soon", "requeued", "id", "x"}, "argument 3"},
        {&scripts::requeue, {stream, delayed, stats}, {"c1", e, "0", "", "id", "x"}, "argument 4"},
        {&scripts::requeue, {stream, delayed, stats}, {"c1", e, "0", "requeued", "id"}, "arguments 5.."},
        {&scripts::complete, {stream, stats}, {"c1", e, ""}, "argument 3"},
        {&scripts::complete, {stream, stats}, {"c1", "", "completed"}, "argument 2"},
        {&scripts::dead, {stream, dead, stats}, {"c1", e}, "argument 3"},
        {&scripts::dead, {stream, dead, stats}, {"c1", e, "why", "id"}, "arguments 4.."},
        {&scripts::heartbeat, {stream}, {"c1"}, "pairs"},
        {&scripts::heartbeat, {stream}, {"c1", e, "c1", "bad"}, "argument 4"},
        {&scripts::heartbeat, {stream}, {"", e}, "argument 1"},
        {&scripts::leave, {stream}, {""}, "argument 1"},
        {&scripts::promote, {stream, delayed}, {"-1"}, "argument 1"},
        {&scripts::promote, {stream, delayed}, {"all"}, "argument 1"},
        {&scripts::reclaim, {stream}, {"", "0", "0-0"}, "argument 1"},
        {&scripts::reclaim, {stream}, {"c2", "-5", "0-0"}, "argument 2"},
        {&scripts::reclaim, {stream}, {"c2", "0", "start"}, "argument 3"},
        {&scripts::list, {stream, delayed, dead}, {"bogus", "", "10"}, "argument 1"},
        {&scripts::list, {stream, delayed, dead}, {"delayed", "12", "10"}, "argument 2"},
        {&scripts::list, {stream, delayed, dead}, {"ready", "12:3", "10"}, "argument 2"},
        {&scripts::list, {stream, delayed, dead}, {"ready", "", "0"}, "argument 3"},
        {&scripts::purge, {stream, delayed, dead, keys, stats}, {"running", "", "10", "", "purged"}, "argument 1"},
        {&scripts::purge, {stream, delayed, dead, keys, stats}, {"delayed", "1-1", "10", "", "purged"}, "argument 2"},
        {&scripts::purge, {stream, delayed, dead, keys, stats}, {"ready", "", "0", "", "purged"}, "argument 3"},
        {&scripts::purge, {stream, delayed, dead, keys, stats}, {"ready", "", "10"}, "argument 4"},
        {&scripts::purge, {stream, delayed, dead, keys, stats}, {"ready", "", "10", "", ""}, "argument 5"},
        {&scripts::retry_dead, {dead, stream, stats}, {"", "many"}, "argument 2"},
        {&scripts::retry_dead, {dead, stream, stats}, {}, "argument 1"},
        {&scripts::find, {stream, delayed, dead}, {}, "argument 1"},
    };
    const std::string before = redis.snapshot();
    for (const auto& call : bad) {
        const std::string out = eval(*call.script, call.keys, call.args);
        EXPECT_NE(out.find("ERR fencelock: "), std::string::npos) << call.script->name << ": " << out;
        EXPECT_NE(out.find(call.names), std::string::npos) << call.script->name << ", " << call.names << ": " << out;
    }
    EXPECT_EQ(redis.snapshot(), before);
}

// The same scripts with good arguments: the checks let through what the client sends.
TEST_F(QueueScriptArgsTest, GoodArgumentsStillWork) {
    const std::string e = fill();
    EXPECT_EQ(eval(scripts::heartbeat, {stream}, {"c1", e}), "");
    EXPECT_EQ(eval(scripts::requeue, {stream, delayed, stats}, {"c1", e, "0", "requeued", "id", "j1", "key", "k1"}),
              "1");
    EXPECT_EQ(redis.cli({"HGET", stats, "requeued"}), "1");
    EXPECT_EQ(redis.cli({"XLEN", stream}), "2");  // j1 again and j2
    EXPECT_EQ(eval(scripts::list, {stream, delayed, dead}, {"delayed", "", "10"}).substr(0, 1), "\n")
        << "one page with an empty next cursor";
    EXPECT_EQ(eval(scripts::purge, {stream, delayed, dead, keys, stats}, {"delayed", "", "10", "", "purged"}),
              "1");  // one deleted, no next cursor (redis-cli's trailing newlines are cut)
    EXPECT_EQ(redis.cli({"ZCARD", delayed}), "0");
    EXPECT_EQ(eval(scripts::promote, {stream, delayed}, {"100"}), "0\n-1");
    EXPECT_EQ(eval(scripts::leave, {stream}, {"c2"}), "1");
}

}  // namespace
}  // namespace fencelock::test_support

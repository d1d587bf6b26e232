// One output schema for every command (README, "JSON output"), checked over each subcommand's
// error, negative and success or empty case:
// - an error (exit 1, 2, 4) is {"error", "code", "message"[, "field"][, "kind"]}, all strings;
//   `field` names the flag or argument at fault;
// - an outcome (exit 0 or 3) of a command that can end negatively carries "result" (a string
//   naming the outcome), never "reason", never "error";
// - list and audit print one object per record (JSON lines) and nothing at all when empty;
// - run prints all of it on stderr (its last line) and leaves stdout to CMD.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>
#include <sstream>

#include "integration/lock_fixture.hpp"
#include "local_servers/child_process.hpp"

namespace fencelock::test_support {
namespace {

using local::ProcessResult;
using nlohmann::json;

enum class Shape { error, outcome, object, records };

struct Case {
    std::vector<std::string> args;
    int exit_code;
    Shape shape;
    std::string field = {};  ///< for errors: the flag at fault ("" = not checked)
    bool on_stderr = false;  ///< run: the JSON is stderr's last line
};

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

/// Checks `r` against the schema for `c`; returns the objects it printed.
std::vector<json> check_shape(const Case& c, const ProcessResult& r, const std::string& shown) {
    EXPECT_EQ(r.exit_code, c.exit_code) << shown << "\n" << r.out << r.err;
    std::vector<json> objects;
    if (c.on_stderr) {
        EXPECT_EQ(r.out, "") << shown << ": stdout is CMD's alone";
        const auto err = lines_of(r.err);
        if (!err.empty()) objects.push_back(json::parse(err.back(), nullptr, false));
    } else {
        for (const auto& line : lines_of(r.out)) objects.push_back(json::parse(line, nullptr, false));
        if (c.shape != Shape::records) {
            EXPECT_EQ(objects.size(), 1u) << shown << ": exactly one object\n" << r.out;
        }
    }
    for (const json& j : objects) {
        EXPECT_TRUE(j.is_object()) << shown << ": " << j;
        if (!j.is_object()) continue;
        switch (c.shape) {
            case Shape::error: {
                static const std::set<std::string> allowed{"error", "code", "message", "field", "kind", "detail"};
                for (const auto& [key, value] : j.items()) {
                    EXPECT_TRUE(allowed.contains(key)) << shown << ": unexpected key " << key;
                    EXPECT_TRUE(value.is_string()) << shown << ": " << key << " is not a string";
                }
                for (const char* key : {"error", "code", "message"})
                    EXPECT_TRUE(j.contains(key)) << shown << ": " << key;
                if (!c.field.empty()) {
                    EXPECT_EQ(j.value("field", ""), c.field) << shown;
                }
                break;
            }
            case Shape::outcome:
                EXPECT_TRUE(j.contains("result") && j["result"].is_string()) << shown << ": " << j;
                [[fallthrough]];
            case Shape::object:
            case Shape::records:
                EXPECT_FALSE(j.contains("error") && c.shape != Shape::outcome) << shown << ": " << j;
                if (c.shape != Shape::records) {
                    EXPECT_FALSE(j.contains("reason")) << shown << ": " << j;
                }
                break;
        }
    }
    return objects;
}

class JsonSchemaTest : public LockTest {
protected:
    void SetUp() override {
        LockTest::SetUp();
        char tmpl[] = "/tmp/fencelock-schema-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir = tmpl;
    }
    void TearDown() override {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
    std::vector<json> check(const Case& c) {
        std::vector<std::string> args = c.args;
        args.insert(args.begin(), {FENCELOCK_CLI, "--redis", redis->url()});
        std::string shown;
        for (const auto& a : c.args) shown += a + " ";
        return check_shape(c, local::run_process(args), shown);
    }
    std::string dir;
};

TEST_F(JsonSchemaTest, LockAndOperationsCommands) {
    // Empty cases first: list and audit print nothing on an empty database.
    EXPECT_TRUE(check({{"list"}, 0, Shape::records}).empty());
    EXPECT_TRUE(check({{"audit"}, 0, Shape::records}).empty());

    const json held = check({{"acquire", "a", "--lease", "30s"}, 0, Shape::outcome}).at(0);
    const std::string owner = held["owner"];
    for (const Case& c : std::vector<Case>{
             {{"acquire", "a", "--lease", "30s"}, 3, Shape::outcome},
             {{"acquire", "a"}, 2, Shape::error, "--lease"},
             {{"acquire", "--lease", "1s"}, 2, Shape::error, "RESOURCE"},
             {{"acquire", "a", "--lease"}, 2, Shape::error, "--lease"},
             {{"acquire", "a", "--lease", "1s", "--bogus"}, 2, Shape::error, "--bogus"},
             {{"renew", "a", "--owner", owner, "--lease", "30s"}, 0, Shape::outcome},
             {{"renew", "a", "--owner", "other", "--lease", "30s"}, 3, Shape::outcome},
             {{"renew", "a", "--lease", "30s"}, 2, Shape::error, "--owner"},
             {{"inspect", "a"}, 0, Shape::object},
             {{"inspect", ""}, 2, Shape::error, "RESOURCE"},
             {{"release", "a", "--owner", "other"}, 3, Shape::outcome},
             {{"release", "a"}, 2, Shape::error, "--owner"},
             {{"list"}, 0, Shape::records},
             {{"list", "--limit", "0"}, 2, Shape::error, "--limit"},
             {{"force-release", "a", "--reason", "test"}, 3, Shape::outcome},
             {{"force-release", "a"}, 2, Shape::error, "--reason"},
             {{"force-release", "a", "--reason", "test", "--even-if-active"}, 0, Shape::outcome},
             {{"audit"}, 0, Shape::records},
             {{"audit", "--limit", "0"}, 2, Shape::error, "--limit"},
             {{"release", "a", "--owner", owner}, 3, Shape::outcome},  // force-released above
             {{"bench", "--clients", "0"}, 2, Shape::error, "--clients"},
             {{"demo", "--workers", "1"}, 2, Shape::error, "--workers"},
             {{"frobnicate"}, 2, Shape::error, "SUBCOMMAND"},
             {{"help"}, 2, Shape::error, "SUBCOMMAND"},
             {{}, 2, Shape::error, "SUBCOMMAND"},
             {{"run", "r", "--json", "--lease", "5s", "--", "true"}, 0, Shape::outcome, "", true},
             {{"run", "r", "--json", "--", "true"}, 0, Shape::outcome, "", true},  // --lease: 30s
             {{"run", "r", "--json", "--lease", "5"}, 2, Shape::error, "--lease", true},
             {{"run", "r", "--json", "-n", "--wait", "1s", "--", "true"}, 2, Shape::error, "--nonblock", true},
         })
        check(c);
    // A Redis failure: its code is a name, not a number.
    const std::string gone = "redis://127.0.0.1:" + std::to_string(local::free_port());
    for (const Case& c :
         {Case{{"--timeout", "200ms", "--redis", gone, "inspect", "a"}, 4, Shape::error},
          Case{{"--timeout", "200ms", "--redis", gone, "run", "a", "--json", "--lease", "5s", "--", "true"},
               4,
               Shape::error,
               "",
               true}}) {
        const auto objects = check(c);
        ASSERT_EQ(objects.size(), 1u);
        EXPECT_EQ(objects[0]["code"], "connection_refused") << "the cause, not only the class";
    }
}

TEST_F(JsonSchemaTest, GlobalOptionsWorkAfterTheSubcommand) {
    // The fixture puts --redis first; here it comes last, after the subcommand's own arguments.
    auto r = local::run_process({FENCELOCK_CLI, "inspect", "x", "--redis", redis->url(), "--timeout", "2s"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(json::parse(r.out, nullptr, false).value("resource", ""), "x");
    r = local::run_process({FENCELOCK_CLI, "run", "y", "--lease", "5s", "--redis", redis->url(), "--", "true"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(JsonSchemaTest, UnknownSubcommandsAreNamedWithTheValidOnes) {
    auto r = local::run_process({FENCELOCK_CLI, "frobnicate"});
    EXPECT_EQ(r.exit_code, 2);
    json j = json::parse(r.out, nullptr, false);
    EXPECT_EQ(j["code"], "unknown_subcommand");
    const std::string message = j.value("message", "");
    for (const char* name : {"'frobnicate'", "acquire", "run", "list", "inspect"})
        EXPECT_NE(message.find(name), std::string::npos) << name << " in " << message;
    EXPECT_EQ(message.find("demo-worker"), std::string::npos) << "hidden subcommands stay hidden";
#ifdef FENCELOCK_WITH_STORE
    r = local::run_process({FENCELOCK_CLI, "store", "frob"});
    j = json::parse(r.out, nullptr, false);
    EXPECT_EQ(j["code"], "unknown_subcommand");
    EXPECT_NE(j.value("message", "").find("'frob' of fencelock store; valid subcommands: init, create, write"),
              std::string::npos)
        << j;
#endif
}

#ifdef FENCELOCK_WITH_STORE
TEST_F(JsonSchemaTest, StoreCommands) {
    const std::string db = "sqlite://" + dir + "/schema.db";
    for (const Case& c : std::vector<Case>{
             {{"store", "init", "--db", db}, 0, Shape::object},
             {{"store", "create", "--db", db, "--resource", "s"}, 0, Shape::outcome},
             {{"store", "create", "--db", db, "--resource", "s"}, 3, Shape::outcome},
             {{"store", "write", "--db", db, "--resource", "s", "--fence", "5", "--value", "v"}, 0, Shape::outcome},
             {{"store", "write", "--db", db, "--resource", "s", "--fence", "4", "--value", "v"}, 3, Shape::outcome},
             {{"store", "write", "--db", db, "--resource", "s", "--fence", "x", "--value", "v"},
              2,
              Shape::error,
              "--fence"},
             {{"store", "write", "--db", db, "--resource", "s", "--value", "v"}, 2, Shape::error, "--fence"},
             {{"store", "read", "--db", db, "--resource", "s"}, 0, Shape::outcome},
             {{"store", "read", "--db", db, "--resource", "nope"}, 3, Shape::outcome},
             {{"store", "claim", "--db", db, "--resource", "s", "--fence", "9", "--owner", "me"}, 0, Shape::outcome},
             {{"store", "claim", "--db", db, "--resource", "s", "--fence", "9"}, 2, Shape::error, "--owner"},
             {{"store", "read", "--resource", "s"}, 2, Shape::error, "--db"},
             {{"store", "read", "--db", "sqlite://" + dir + "/no-such-dir/x.db", "--resource", "s"}, 4, Shape::error},
         })
        check(c);
}
#endif

#ifdef FENCELOCK_CLI_WITH_QUEUE
TEST_F(JsonSchemaTest, QueueCommands) {
    for (const Case& c : std::vector<Case>{
             {{"queue", "enqueue", "--queue", "q", "--resource", "r", "--key", "k"}, 0, Shape::object},
             {{"queue", "enqueue", "--queue", "q", "--resource", "r"}, 0, Shape::object},  // a random --key
             {{"queue", "enqueue", "--queue", "q", "--key", "k"}, 2, Shape::error, "--resource"},
             {{"queue", "stats", "--queue", "q"}, 0, Shape::object},
             {{"queue", "stats"}, 2, Shape::error, "--queue"},
             {{"queue", "dead", "--queue", "q"}, 0, Shape::object},
             {{"queue", "retry-dead", "--queue", "q"}, 0, Shape::outcome},
             {{"queue", "retry-dead", "--queue", "q", "--id", std::string(32, 'a')}, 3, Shape::outcome},
             {{"queue", "retry-dead", "--queue", "q", "--id", "x"}, 2, Shape::error, "--id"},
             {{"queue"}, 2, Shape::error, "SUBCOMMAND"},
             {{"worker", "--db", "sqlite://" + dir + "/w.db", "--", "true"}, 2, Shape::error, "--queue"},
             {{"worker", "--queue", "q", "--", "true"}, 2, Shape::error, "--db"},
         })
        check(c);
}
#endif

}  // namespace
}  // namespace fencelock::test_support

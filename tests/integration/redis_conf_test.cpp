// ops/redis/fencelock.conf, the redis.conf fragment the README and RUNBOOK point to: every
// directive in it (the commented replica lines included) is one redis-server accepts, and a
// server started with it is one fencelock serves. Read from the source tree, so the file
// users copy is the file tested.
#include <fstream>
#include <sstream>

#include "integration/lock_fixture.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

struct Directive {
    std::string name, value;
};

/// The fragment's directives; `commented` also takes "# name value" lines whose name is
/// lowercase with dashes (the replica lines to uncomment), not prose.
std::vector<Directive> directives(bool commented) {
    std::ifstream in(std::string(SOURCE_DIR) + "/ops/redis/fencelock.conf");
    std::vector<Directive> out;
    for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        if (line[0] == '#') {
            if (!commented || line.rfind("# ", 0) != 0) continue;
            line = line.substr(2);
            const auto name_end = line.find(' ');
            if (name_end == std::string::npos || line.find_first_not_of("abcdefghijklmnopqrstuvwxyz-") != name_end)
                continue;
            if (std::count(line.begin(), line.end(), ' ') != 1) continue;  // prose has more words
        }
        std::istringstream words(line);
        Directive d;
        words >> d.name >> d.value;
        out.push_back(d);
    }
    return out;
}

TEST(RedisConf, EveryDirectiveIsOneRedisAcceptsAndAServerWithThemServesLocks) {
    const auto all = directives(true);
    ASSERT_GE(directives(false).size(), 3u);
    ASSERT_GT(all.size(), directives(false).size()) << "the replica lines are there to uncomment";
    std::vector<std::string> args;
    for (const auto& d : directives(false)) args.insert(args.end(), {"--" + d.name, d.value});
    local::RedisServer redis(args);
    for (const auto& d : directives(false)) {
        const std::string got = redis.cli({"CONFIG", "GET", d.name});
        EXPECT_EQ(got, d.name + "\n" + d.value) << d.name;
    }
    auto c = LockClient::create(ClientOptions{.endpoint = *parse_redis_url(redis.url())});
    ASSERT_TRUE(c);
    auto got = c->try_acquire(resource("conf"), {.lease = 5s});
    ASSERT_TRUE(got && got->acquired()) << (got ? "contended" : got.error().message());

    // The lines to uncomment with a replica are directives too.
    std::vector<std::string> replica_args;
    for (const auto& d : all) replica_args.insert(replica_args.end(), {"--" + d.name, d.value});
    local::RedisServer with_replica_lines(replica_args);
    for (const auto& d : all) EXPECT_EQ(with_replica_lines.cli({"CONFIG", "GET", d.name}), d.name + "\n" + d.value);
}

}  // namespace
}  // namespace fencelock::test_support

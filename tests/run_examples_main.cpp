// Runs each program named on the command line against a private redis-server and a fresh
// SQLite file (FENCELOCK_REDIS_URL, FENCELOCK_DB_URL), as the README's examples expect, and
// fails unless every one exits 0. Used for the examples built in the tree and for those built
// against the installed package (tests/consumer/run.sh).
#include <cstdio>
#include <string>

#include "local_servers/child_process.hpp"
#include "local_servers/redis_server.hpp"
#include "support/temp_dir.hpp"

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: run_examples PROGRAM...\n");
        return 2;
    }
    fencelock::local::RedisServer redis;
    int failed = 0;
    for (int i = 1; i < argc; ++i) {
        fencelock::test_support::TempDir dir("fencelock-example");
        const auto ran =
            fencelock::local::run_process({argv[i]}, {"FENCELOCK_REDIS_URL=" + redis.url(),
                                                      "FENCELOCK_DB_URL=sqlite://" + (dir.path() / "db").string()});
        std::printf("%s: exit %d\n%s%s", argv[i], ran.exit_code, ran.out.c_str(), ran.err.c_str());
        if (ran.exit_code != 0) ++failed;
    }
    return failed == 0 ? 0 : 1;
}

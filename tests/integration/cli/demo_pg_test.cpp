// `fencelock demo --db postgresql://...`: the README's demo against a throwaway PostgreSQL
// instead of its private SQLite file. Same workload and seeded faults: with fencing nothing
// acknowledged is lost or duplicated; without it acknowledged appends are lost.
#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "local_servers/child_process.hpp"
#include "local_servers/postgres_server.hpp"

namespace fencelock::test_support {
namespace {

using local::PostgresServer;
using local::run_process;

TEST(DemoPostgresTest, FencingLosesNothingOnPostgresAndTheUnfencedRunLosesAppends) {
    PostgresServer pg;
    const std::string url = pg.create_database("demo");
    auto r = run_process({FENCELOCK_CLI, "demo", "--json", "--db", url, "--duration", "8s", "--seed", "7"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto report = nlohmann::json::parse(r.out);
    const auto& on = report.at("fenced");
    const auto& off = report.at("unfenced");
    std::printf("demo --db postgresql, fenced:   %s\ndemo --db postgresql, unfenced: %s\n", on.dump().c_str(),
                off.dump().c_str());

    EXPECT_GT(on.at("accepted").get<int>(), 0);
    EXPECT_EQ(on.at("lost_updates").get<int>(), 0) << "fencing lost an acknowledged append";
    EXPECT_EQ(on.at("duplicates").get<int>(), 0);
    EXPECT_GT(on.at("stale_rejected").get<int>(), 0) << "the faults produced no stale write for fencing to stop";
    EXPECT_EQ(off.at("stale_rejected").get<int>(), 0) << "the unfenced store must accept everything";
    EXPECT_GT(off.at("lost_updates").get<int>(), 0) << "without fencing the faults must show the damage";

    // The records live in this PostgreSQL database (3 per run), not in a SQLite file.
    const std::string dbname = url.substr(url.rfind('/') + 1);
    EXPECT_EQ(pg.psql(dbname, "SELECT count(*) FROM fencelock_resources WHERE resource LIKE 'demo-%'"), "6");
}

}  // namespace
}  // namespace fencelock::test_support

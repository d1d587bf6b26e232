// `fencelock demo`, the README's main job: with fencing nothing acknowledged is lost or
// duplicated; without it the same seeded faults lose acknowledged appends.
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "local_servers/child_process.hpp"
#include "support/demo_checks.hpp"

#include <gtest/gtest.h>

namespace fencelock::test_support {
namespace {

using local::run_process;
using nlohmann::json;

TEST(DemoTest, FencingLosesNothingAndTheUnfencedRunShowsTheDamage) {
    const std::string timeline = ::testing::TempDir() + "demo-timeline-" + std::to_string(::getpid()) + ".html";
    auto r = run_process({FENCELOCK_CLI, "demo", "--json", "--duration", "8s", "--seed", "7", "--timeline", timeline});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json report = json::parse(r.out);
    const json& fenced = report.at("fenced");
    const json& unfenced = report.at("unfenced");
    std::printf("demo fenced:   %s\ndemo unfenced: %s\n", fenced.dump().c_str(), unfenced.dump().c_str());
    for (const char* key : {"attempted", "accepted", "stale_rejected", "lost_updates", "duplicates", "leases_lost"}) {
        EXPECT_TRUE(fenced.contains(key)) << key;
        EXPECT_TRUE(unfenced.contains(key)) << key;
    }
    expect_fencing_prevents_the_damage(fenced, unfenced);

    std::ifstream in(timeline);
    std::stringstream html;
    html << in.rdbuf();
    EXPECT_NE(html.str().find("<svg"), std::string::npos);
    EXPECT_NE(html.str().find("with fencing"), std::string::npos);
    std::remove(timeline.c_str());
}

TEST(DemoTest, BadInputExitsTwo) {
    for (const auto& args : std::vector<std::vector<std::string>>{{"demo", "--workers", "1"},
                                                                  {"demo", "--duration", "10"},
                                                                  {"demo", "--lease", "5ms"},
                                                                  {"demo", "--db", "mysql://x"},
                                                                  {"demo", "--duration", "1s", "--lease", "400ms"}}) {
        std::vector<std::string> argv{FENCELOCK_CLI};
        argv.insert(argv.end(), args.begin(), args.end());
        auto r = run_process(argv);
        EXPECT_EQ(r.exit_code, 2) << args[1] << " " << args[2] << "\n" << r.err;
        EXPECT_EQ(json::parse(r.out, nullptr, false).value("error", ""), "invalid_input");
    }
}

}  // namespace
}  // namespace fencelock::test_support

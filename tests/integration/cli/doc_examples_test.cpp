// The shell examples of README.md and docs/STORE.md, run as written. The convention: the line
// right above every ```sh block is a comment, invisible when rendered, that says which it is:
//     <!-- doc-test -->          run here, with the other blocks of the file, in the order
//                                written, in one shell (variables carry over), and every
//                                command must succeed
//     <!-- not run: WHY -->      a synopsis, or a machine at made-up addresses; WHY names the
//                                test that covers it instead
// A block with neither fails this test, so no example escapes unnoticed. The shell gets the
// build's fencelock first on PATH, FENCELOCK_REDIS_URL naming a throwaway redis-server, and an
// empty working directory; `sudo apt-get install` lines are the reader's setup and are skipped
// (the build and the server stand in for them).
#include <fstream>
#include <optional>
#include <sstream>

#include "integration/lock_fixture.hpp"
#include "local_servers/child_process.hpp"
#include "support/temp_dir.hpp"

namespace fencelock::test_support {
namespace {

struct ShellBlock {
    int line = 0;          ///< of its opening fence, 1-based
    std::string marker;    ///< the line above the fence
    std::string text;      ///< its lines, each ending in '\n'
};

std::vector<ShellBlock> shell_blocks(const std::string& path) {
    std::ifstream in(path);
    std::vector<ShellBlock> blocks;
    std::string line, previous;
    int number = 0;
    std::optional<ShellBlock> open;
    while (std::getline(in, line)) {
        ++number;
        if (open) {
            if (line.starts_with("```")) {
                blocks.push_back(std::move(*open));
                open.reset();
            } else {
                open->text += line + "\n";
            }
        } else if (line == "```sh") {
            open = ShellBlock{number, previous, {}};
        }
        previous = line;
    }
    return blocks;
}

bool runs_here(const ShellBlock& b) { return b.marker == "<!-- doc-test -->"; }
bool says_why_not(const ShellBlock& b) { return b.marker.starts_with("<!-- not run: ") && b.marker.ends_with(" -->"); }

/// The file's doc-test blocks as one script, without the reader's package installs.
std::string script_of(const std::vector<ShellBlock>& blocks) {
    std::string script = "set -euo pipefail -x\n";
    for (const auto& b : blocks) {
        if (!runs_here(b)) continue;
        std::istringstream lines(b.text);
        for (std::string line; std::getline(lines, line);)
            if (!line.starts_with("sudo apt-get install ")) script += line + "\n";
    }
    return script;
}

class DocExamplesTest : public LockTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(DocExamplesTest, EveryShellBlockRunsAsWrittenOrSaysWhyNot) {
    const std::string path = std::string(SOURCE_DIR) + "/" + GetParam();
    const auto blocks = shell_blocks(path);
    ASSERT_FALSE(blocks.empty()) << path;
    int run = 0;
    for (const auto& b : blocks) {
        EXPECT_TRUE(runs_here(b) || says_why_not(b))
            << GetParam() << ":" << b.line << ": a ```sh block needs <!-- doc-test --> or <!-- not run: WHY --> on "
            << "the line above it, not: " << b.marker;
        run += runs_here(b) ? 1 : 0;
    }
    ASSERT_GT(run, 0) << GetParam() << " has no example under test";

    TempDir dir;
    const std::string cli_dir = std::string(FENCELOCK_CLI).substr(0, std::string(FENCELOCK_CLI).rfind('/'));
    // Exported by the shell itself: a second PATH appended to the environment may not win.
    const auto ran = local::run_process({"bash", "-c",
                                         R"(cd "$0" && export PATH="$1:$PATH" FENCELOCK_REDIS_URL="$2" && eval "$3")",
                                         dir.path().string(), cli_dir, redis->url(), script_of(blocks)});
    EXPECT_EQ(ran.exit_code, 0) << GetParam() << "'s examples failed; the shell's trace:\n" << ran.err << ran.out;
}

#ifdef FENCELOCK_WITH_STORE  // STORE.md's examples use the store commands
INSTANTIATE_TEST_SUITE_P(Docs, DocExamplesTest, ::testing::Values("README.md", "docs/STORE.md"),
                         [](const auto& info) {
                             return std::string(info.param) == "README.md" ? std::string("Readme") : std::string("Store");
                         });
#endif

}  // namespace
}  // namespace fencelock::test_support

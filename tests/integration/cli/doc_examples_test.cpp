// The shell examples of README.md and docs/*.md, run as written. A shell block is a fenced block
// whose language is a shell (```sh, ```bash, ```shell, ```console, ```zsh: all count the same,
// so no example escapes by its spelling). The line right above each one is a comment, invisible
// when rendered, that says which it is:
//     <!-- doc-test -->          run here, with the other blocks of the file, in the order
//                                written, in one shell (variables carry over), and every
//                                command must succeed
//     <!-- not run: WHY -->      a synopsis, or a machine at made-up addresses; WHY names the
//                                test that covers it instead
// A block with neither fails, and so does a block without a language whose lines are commands
// (fencelock, redis-cli, redis-server): that is a shell example missing its ```sh. Blocks without
// a language are listings (program output, aclfile lines, JSON lines) and are not run.
//
// The shell gets the build's fencelock first on PATH, FENCELOCK_REDIS_URL naming a throwaway
// redis-server, and an empty working directory; `sudo apt-get install` lines are the reader's
// setup and are skipped (the build and the server stand in for them). A process an example
// starts in the background (a worker) is killed when the shell exits, and the whole run is
// bounded, so a failed example ends in its trace, never in a hang or a stray process.
#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "integration/lock_fixture.hpp"
#include "local_servers/child_process.hpp"
#include "support/temp_dir.hpp"

namespace fencelock::test_support {
namespace {

struct FencedBlock {
    int line = 0;          ///< of its opening fence, 1-based
    std::string language;  ///< what follows the opening ```, e.g. "sh"; empty for a listing
    std::string marker;    ///< the line above the fence
    std::string text;      ///< its lines, each ending in '\n'
};

std::vector<FencedBlock> fenced_blocks(const std::string& path) {
    std::ifstream in(path);
    std::vector<FencedBlock> blocks;
    std::string line, previous;
    int number = 0;
    std::optional<FencedBlock> open;
    while (std::getline(in, line)) {
        ++number;
        if (open) {
            if (line.starts_with("```")) {
                blocks.push_back(std::move(*open));
                open.reset();
            } else {
                open->text += line + "\n";
            }
        } else if (line.starts_with("```")) {
            open = FencedBlock{number, line.substr(3), previous, {}};
        }
        previous = line;
    }
    return blocks;
}

bool is_shell(const FencedBlock& b) {
    constexpr std::array shells = {"sh", "bash", "shell", "console", "zsh"};
    return std::ranges::find(shells, b.language) != shells.end();
}
bool runs_here(const FencedBlock& b) { return is_shell(b) && b.marker == "<!-- doc-test -->"; }
bool says_why_not(const FencedBlock& b) { return b.marker.starts_with("<!-- not run: ") && b.marker.ends_with(" -->"); }

/// A listing whose lines are this project's commands: a shell example written without its language.
bool is_unmarked_shell(const FencedBlock& b) {
    if (!b.language.empty()) return false;
    std::istringstream lines(b.text);
    for (std::string line; std::getline(lines, line);)
        for (const auto* command : {"fencelock ", "redis-cli ", "redis-server "})
            if (line.starts_with(command)) return true;
    return false;
}

/// README.md and every docs/*.md, relative to the source tree.
std::vector<std::string> documents() {
    std::vector<std::string> docs{"README.md"};
    for (const auto& entry : std::filesystem::directory_iterator(std::string(SOURCE_DIR) + "/docs"))
        if (entry.path().extension() == ".md") docs.push_back("docs/" + entry.path().filename().string());
    std::ranges::sort(docs);
    return docs;
}

TEST(DocExamplesMarkers, EveryShellBlockOfEveryDocumentRunsOrSaysWhyNot) {
    for (const auto& doc : documents()) {
        for (const auto& b : fenced_blocks(std::string(SOURCE_DIR) + "/" + doc)) {
            EXPECT_TRUE(!is_shell(b) || runs_here(b) || says_why_not(b))
                << doc << ":" << b.line << ": a ```" << b.language
                << " block needs <!-- doc-test --> or <!-- not run: WHY --> on the line above it, not: " << b.marker;
            EXPECT_FALSE(is_unmarked_shell(b))
                << doc << ":" << b.line << ": a block of commands without a language: write ```sh and mark it";
            EXPECT_FALSE(!is_shell(b) && b.marker == "<!-- doc-test -->")
                << doc << ":" << b.line << ": only shell blocks run here, not ```" << b.language;
        }
    }
}

/// The file's doc-test blocks as one script, without the reader's package installs.
std::string script_of(const std::vector<FencedBlock>& blocks) {
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

TEST_P(DocExamplesTest, EveryDocTestBlockRunsAsWritten) {
    const auto blocks = fenced_blocks(std::string(SOURCE_DIR) + "/" + GetParam());
    ASSERT_GT(std::ranges::count_if(blocks, runs_here), 0) << GetParam() << " has no example under test";

    TempDir dir;
    const std::string cli_dir = std::string(FENCELOCK_CLI).substr(0, std::string(FENCELOCK_CLI).rfind('/'));
    // PATH is exported by the shell itself: a second PATH appended to the environment may not
    // win. The EXIT trap runs on failure and on timeout's SIGTERM too.
    const auto ran = local::run_process({"timeout", "90", "bash", "-c",
                                         R"(trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
            cd "$0" && export PATH="$1:$PATH" FENCELOCK_REDIS_URL="$2" && eval "$3")",
                                         dir.path().string(), cli_dir, redis->url(), script_of(blocks)});
    EXPECT_EQ(ran.exit_code, 0) << GetParam()
                                << "'s examples failed (124: still running after 90 s); the shell's trace:\n"
                                << ran.err << ran.out;
}

std::string test_name(const ::testing::TestParamInfo<const char*>& info) {
    std::string name = std::filesystem::path(info.param).stem().string();  // README -> Readme, STORE -> Store
    std::transform(name.begin() + 1, name.end(), name.begin() + 1, [](unsigned char c) { return std::tolower(c); });
    return name;
}

INSTANTIATE_TEST_SUITE_P(LockDocs, DocExamplesTest, ::testing::Values("docs/RUNBOOK.md"), test_name);
#ifdef FENCELOCK_WITH_STORE  // these use the store commands
INSTANTIATE_TEST_SUITE_P(Docs, DocExamplesTest, ::testing::Values("README.md", "docs/STORE.md"), test_name);
#ifdef FENCELOCK_CLI_WITH_QUEUE  // and the queue's (the worker records completions in a store)
INSTANTIATE_TEST_SUITE_P(QueueDocs, DocExamplesTest, ::testing::Values("docs/QUEUE.md"), test_name);
#endif
#endif

}  // namespace
}  // namespace fencelock::test_support

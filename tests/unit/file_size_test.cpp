// Small files, clear rooms: no file under src/, include/, tools/ or tests/ is longer than 500
// lines. A file that outgrows the limit is split by concern, not trimmed to fit.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fencelock {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t max_lines = 500;

/// Lines in `in`: a last line without a newline counts too.
std::size_t line_count(std::istream& in) {
    std::size_t lines = 0;
    std::string line;
    while (std::getline(in, line)) ++lines;
    return lines;
}

/// "path: N lines" for every regular file under `root`'s `dirs` longer than `limit` lines.
std::vector<std::string> oversized(const fs::path& root, const std::vector<std::string>& dirs, std::size_t limit) {
    std::vector<std::string> found;
    for (const auto& dir : dirs) {
        if (!fs::exists(root / dir)) continue;
        for (const auto& entry : fs::recursive_directory_iterator(root / dir)) {
            if (!entry.is_regular_file()) continue;
            std::ifstream in(entry.path(), std::ios::binary);
            const std::size_t lines = line_count(in);
            if (lines > limit)
                found.push_back(fs::relative(entry.path(), root).string() + ": " + std::to_string(lines) + " lines");
        }
    }
    return found;
}

TEST(FileSize, NoFileIsLongerThanTheLimit) {
    const fs::path root = SOURCE_DIR;
    ASSERT_TRUE(fs::exists(root / "src")) << root;
    std::string report;
    for (const auto& f : oversized(root, {"src", "include", "tools", "tests"}, max_lines)) report += "  " + f + "\n";
    EXPECT_TRUE(report.empty()) << "files over " << max_lines << " lines (split them by concern):\n" << report;
}

TEST(FileSize, TheCheckFindsALongFile) {
    const fs::path root = fs::path(::testing::TempDir()) / ("file-size-" + std::to_string(::getpid()));
    fs::create_directories(root / "src" / "deep");
    {
        std::ofstream at_limit(root / "src" / "at_limit.cpp");
        for (std::size_t i = 0; i < max_lines; ++i) at_limit << "x\n";
        std::ofstream over(root / "src" / "deep" / "over.cpp");
        for (std::size_t i = 0; i < max_lines; ++i) over << "x\n";
        over << "no newline at the end";
    }
    const auto found = oversized(root, {"src", "missing"}, max_lines);
    fs::remove_all(root);
    EXPECT_EQ(found, std::vector<std::string>{"src/deep/over.cpp: 501 lines"});
}

}  // namespace
}  // namespace fencelock

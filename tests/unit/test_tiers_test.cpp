// No suite compiles another suite's sources: a CMakeLists.txt under tests/ names only .cpp files
// of its own folder. Code two suites share is a small library one of them defines and both link
// (store_test_fixture, fault_history), so a pure test can move to the unit tier without dragging a
// server suite's sources along. tests/CMakeLists.txt owns the unit tier and the shared support/.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace fencelock {
namespace {

namespace fs = std::filesystem;

/// A CMake `line` without its `#` comment; a `#` inside a string literal is kept.
std::string cmake_code(const std::string& line) {
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        if (line[i] == '\\') ++i;
        else if (line[i] == '"') quoted = !quoted;
        else if (line[i] == '#' && !quoted) return line.substr(0, i);
    }
    return line;
}

/// The folder directly under `tests` that `file` lies in ("store" for tests/store/x.cpp; "" for
/// a file right in tests/), or nothing when `file` is not under `tests`.
std::optional<std::string> suite_of(const fs::path& file, const fs::path& tests) {
    const fs::path rel = file.lexically_normal().lexically_relative(tests.lexically_normal());
    if (rel.empty() || *rel.begin() == "..") return std::nullopt;
    return std::next(rel.begin()) == rel.end() ? std::string{} : rel.begin()->string();
}

/// Every .cpp path in one line of `cmake_file`'s code, resolved against `root` (the project) and
/// the CMakeLists' own folder, that lies in a suite folder `cmake_file` does not own.
std::vector<fs::path> foreign_sources(const std::string& code, const fs::path& cmake_file, const fs::path& root) {
    static const std::regex cpp_path(R"([^\s"()]+\.cpp\b)");
    const fs::path tests = root / "tests";
    const fs::path dir = cmake_file.parent_path();
    std::vector<std::string> owned;
    if (dir.lexically_normal() == tests.lexically_normal()) owned = {"unit", "support"};
    else owned = {suite_of(cmake_file, tests).value_or("")};
    std::vector<fs::path> foreign;
    for (std::sregex_iterator it(code.begin(), code.end(), cpp_path), end; it != end; ++it) {
        std::string name = it->str();
        fs::path resolved;
        for (const char* var : {"${PROJECT_SOURCE_DIR}", "${CMAKE_SOURCE_DIR}"})
            if (name.starts_with(var)) resolved = root.string() + name.substr(std::string(var).size());
        for (const char* var : {"${CMAKE_CURRENT_SOURCE_DIR}", "${CMAKE_CURRENT_LIST_DIR}"})
            if (name.starts_with(var)) resolved = dir.string() + name.substr(std::string(var).size());
        if (resolved.empty()) resolved = dir / name;
        const auto suite = suite_of(resolved, tests);
        if (!suite || suite->empty()) continue;  // outside tests/, or right in it: no suite's folder
        if (std::find(owned.begin(), owned.end(), *suite) == owned.end())
            foreign.push_back(resolved.lexically_normal());
    }
    return foreign;
}

TEST(TestTiers, NoSuiteCompilesAnotherSuitesSources) {
    const fs::path root = SOURCE_DIR;
    ASSERT_TRUE(fs::exists(root / "tests" / "CMakeLists.txt")) << root;
    std::string report;
    for (const auto& entry : fs::recursive_directory_iterator(root / "tests")) {
        if (!entry.is_regular_file() || entry.path().filename() != "CMakeLists.txt") continue;
        std::ifstream in(entry.path());
        std::string line;
        for (int number = 1; std::getline(in, line); ++number)
            for (const auto& source : foreign_sources(cmake_code(line), entry.path(), root))
                report += "  " + fs::relative(entry.path(), root).string() + ":" + std::to_string(number) + ": " +
                          fs::relative(source, root).string() + "\n";
    }
    EXPECT_TRUE(report.empty()) << "a suite compiles another suite's sources (make it a library both link):\n"
                                << report;
}

TEST(TestTiers, ResolvesWhatACMakeListsNames) {
    const fs::path root = "/p";
    const fs::path queue = root / "tests/queue/CMakeLists.txt";
    const fs::path top = root / "tests/CMakeLists.txt";
    using Paths = std::vector<fs::path>;
    EXPECT_EQ(foreign_sources("add_executable(q a.cpp cli/b.cpp)", queue, root), Paths{});
    EXPECT_EQ(foreign_sources("  ${PROJECT_SOURCE_DIR}/tests/store/store_fixture.cpp)", queue, root),
              Paths{"/p/tests/store/store_fixture.cpp"});
    EXPECT_EQ(foreign_sources("x(${CMAKE_CURRENT_SOURCE_DIR}/../faults/history.cpp)", queue, root),
              Paths{"/p/tests/faults/history.cpp"});
    EXPECT_EQ(foreign_sources("add_library(s ../store/x.cpp)", queue, root), Paths{"/p/tests/store/x.cpp"});
    EXPECT_EQ(foreign_sources("file(GLOB s ${CMAKE_CURRENT_SOURCE_DIR}/support/*.cpp)", top, root), Paths{});
    EXPECT_EQ(foreign_sources("file(GLOB s ${CMAKE_CURRENT_SOURCE_DIR}/unit/*.cpp)", top, root), Paths{});
    EXPECT_EQ(foreign_sources("add_executable(u store/options_test.cpp)", top, root),
              Paths{"/p/tests/store/options_test.cpp"});
    EXPECT_EQ(foreign_sources("add_library(x ${PROJECT_SOURCE_DIR}/src/a.cpp)", queue, root), Paths{});
    EXPECT_EQ(cmake_code("add_library(x a.cpp) # ../store/b.cpp"), "add_library(x a.cpp) ");
    EXPECT_EQ(cmake_code(R"(set(x "a#b"))"), R"(set(x "a#b"))");
}

}  // namespace
}  // namespace fencelock

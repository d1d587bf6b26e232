// Shipped code never depends on the tests: nothing under src/, tools/ or bench/, and not the root
// CMakeLists.txt, compiles or includes a file under tests/. Throwaway servers that the demo and the
// benches share with the tests live in tools/local_servers/. Comments may name a test; code may not.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace fencelock {
namespace {

namespace fs = std::filesystem;

enum class Language { cpp, cmake };

/// `line` without its comment: `//` and `/* */` for C++ (tracked across lines by
/// `in_block`), `#` for CMake. String literals are kept whole, so "a//b" stays code.
std::string code_of(const std::string& line, Language language, bool& in_block) {
    std::string code;
    char quote = 0;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        const char next = i + 1 < line.size() ? line[i + 1] : '\0';
        if (in_block) {
            if (c == '*' && next == '/') {
                in_block = false;
                ++i;
            }
        } else if (quote != 0) {
            code += c;
            if (c == '\\' && next != '\0') {
                code += next;
                ++i;
            } else if (c == quote) {
                quote = 0;
            }
        } else if (language == Language::cmake && c == '#') {
            break;
        } else if (language == Language::cpp && c == '/' && next == '/') {
            break;
        } else if (language == Language::cpp && c == '/' && next == '*') {
            in_block = true;
            ++i;
        } else {
            if (c == '"' || (language == Language::cpp && c == '\'')) quote = c;
            code += c;
        }
    }
    return code;
}

/// Every "file:line: text" under the shipped roots whose code names the tests/ folder.
std::vector<std::string> references_to_tests(const fs::path& root) {
    // "tests/..." or ".../tests" as a path: "${PROJECT_SOURCE_DIR}/tests" counts, "unit_tests" does not.
    static const std::regex tests_path(R"((^|[^A-Za-z0-9_])tests/|/tests($|[^A-Za-z0-9_]))");
    std::vector<fs::path> files{root / "CMakeLists.txt"};
    for (const char* dir : {"src", "tools", "bench"}) {
        if (!fs::exists(root / dir)) continue;
        for (const auto& entry : fs::recursive_directory_iterator(root / dir)) {
            const fs::path& p = entry.path();
            if (entry.is_regular_file() &&
                (p.filename() == "CMakeLists.txt" || p.extension() == ".cpp" || p.extension() == ".hpp"))
                files.push_back(p);
        }
    }
    std::vector<std::string> hits;
    for (const auto& file : files) {
        const Language language = file.filename() == "CMakeLists.txt" ? Language::cmake : Language::cpp;
        std::ifstream in(file);
        std::string line;
        bool in_block = false;
        for (int number = 1; std::getline(in, line); ++number) {
            if (std::regex_search(code_of(line, language, in_block), tests_path))
                hits.push_back(fs::relative(file, root).string() + ":" + std::to_string(number) + ": " + line);
        }
    }
    return hits;
}

TEST(ShippedCode, NeverReferencesTests) {
    const fs::path root = SOURCE_DIR;
    ASSERT_TRUE(fs::exists(root / "src")) << root;
    std::string report;
    for (const auto& hit : references_to_tests(root)) report += "  " + hit + "\n";
    EXPECT_TRUE(report.empty()) << "shipped code reaches into tests/:\n" << report;
}

TEST(ShippedCode, CommentsAreNotCode) {
    bool in_block = false;
    EXPECT_EQ(code_of(R"(#include "a.hpp"  // see tests/x)", Language::cpp, in_block), R"(#include "a.hpp"  )");
    EXPECT_EQ(code_of(R"(f("tests//b"); /* tests/ */ g();)", Language::cpp, in_block), R"(f("tests//b");  g();)");
    EXPECT_EQ(code_of("a /* tests/", Language::cpp, in_block), "a ");
    EXPECT_TRUE(in_block);
    EXPECT_EQ(code_of("tests/ */ b", Language::cpp, in_block), " b");
    EXPECT_FALSE(in_block);
    EXPECT_EQ(code_of("add_library(x a.cpp) # tests/y", Language::cmake, in_block), "add_library(x a.cpp) ");
    EXPECT_EQ(code_of(R"(set(x "a#tests/b"))", Language::cmake, in_block), R"(set(x "a#tests/b"))");
}

}  // namespace
}  // namespace fencelock

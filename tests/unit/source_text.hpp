#pragma once
// A file of the source tree as text, for unit tests that check shipped files (ops/, docs/).
// SOURCE_DIR is the project root (tests/CMakeLists.txt); a missing file reads as empty.
#include <fstream>
#include <sstream>
#include <string>

namespace fencelock::test_support {

inline std::string source_text(const std::string& relative_path) {
    std::ifstream in(std::string(SOURCE_DIR) + "/" + relative_path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace fencelock::test_support

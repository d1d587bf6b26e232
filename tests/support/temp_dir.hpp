#pragma once
// A fresh directory under /tmp for one test, removed with everything in it when the test ends.
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace fencelock::test_support {

class TempDir {
public:
    explicit TempDir(const std::string& stem = "fencelock-test") {
        std::string tmpl = "/tmp/" + stem + "-XXXXXX";
        if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

}  // namespace fencelock::test_support

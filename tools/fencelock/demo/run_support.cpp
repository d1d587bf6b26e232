#include "demo/run_support.hpp"

#include <sys/wait.h>
#include <time.h>

#include <fstream>
#include <stdexcept>
#include <thread>

namespace fencelock::demo {

std::int64_t monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string self_exe() {
    std::error_code ec;
    auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? "fencelock" : p.string();
}

bool wait_until_stopped(pid_t pid, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        int status = 0;
        if (waitpid(pid, &status, WNOHANG | WUNTRACED) == pid && WIFSTOPPED(status)) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

ScratchDir::ScratchDir() {
    char tmpl[] = "/tmp/fencelock-demo-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
}

ScratchDir::~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

History read_history_files(const std::vector<std::filesystem::path>& files) {
    History history;
    for (const auto& file : files) {
        std::ifstream in(file);
        for (std::string line; std::getline(in, line);) parse_history_line(line, history);
    }
    return history;
}

}  // namespace fencelock::demo

#pragma once
// A wall-clock offset for the servers a test starts: the file the clock shim maps
// (tools/clock_shim/clock_shim.c). A server started with env() runs `initial` off the real
// wall clock; set() and step() move it at once while it runs. Monotonic time is untouched.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

namespace fencelock::test_support {

class ClockOffset {
public:
    explicit ClockOffset(std::chrono::microseconds initial = {}) : file_(dir_.path() / "offset") { set(initial); }

    /// LD_PRELOAD and the offset file, for RedisServer / SentinelGroupOptions' env.
    std::vector<std::string> env() const {
        return {"LD_PRELOAD=" + std::string(FENCELOCK_CLOCK_SHIM), "FENCELOCK_CLOCK_FILE=" + file_.string()};
    }

    /// The wall clock of every process started with env() is `offset` off the real one from now.
    void set(std::chrono::microseconds offset) {
        const std::int64_t us = offset.count();
        const int fd = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0 || ::pwrite(fd, &us, sizeof us, 0) != static_cast<ssize_t>(sizeof us)) {
            if (fd >= 0) ::close(fd);
            throw std::runtime_error("ClockOffset: cannot write " + file_.string());
        }
        ::close(fd);
        offset_ = offset;
    }

    /// A step of `by` (forward when positive), as an operator's `date -s` or chrony's makestep.
    void step(std::chrono::microseconds by) { set(offset_ + by); }

private:
    TempDir dir_;
    std::filesystem::path file_;
    std::chrono::microseconds offset_{0};
};

}  // namespace fencelock::test_support

#pragma once
// A file descriptor owned by one object and closed when it goes.
#include <unistd.h>

#include <utility>

namespace fencelock::cli {

/// Owns a descriptor (-1: none) and closes it on destruction or reset().
class Fd {
public:
    explicit Fd(int fd = -1) noexcept : fd_(fd) {}
    Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Fd& operator=(Fd&& other) noexcept {
        reset(std::exchange(other.fd_, -1));
        return *this;
    }
    ~Fd() { reset(); }
    /// The descriptor, still owned by this object.
    int get() const noexcept { return fd_; }
    /// Closes the current descriptor (if any) and owns `fd` instead.
    void reset(int fd = -1) noexcept {
        if (fd_ >= 0) ::close(fd_);
        fd_ = fd;
    }

private:
    int fd_;
};

}  // namespace fencelock::cli

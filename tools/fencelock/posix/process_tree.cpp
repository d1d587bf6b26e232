#include "posix/process_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace fencelock::cli {
namespace {

/// "/proc/<pid>/environ" into `out` (at least 32 bytes) without snprintf.
void environ_path(pid_t pid, char* out) noexcept {
    char digits[16];
    int n = 0;
    for (unsigned v = static_cast<unsigned>(pid); n == 0 || v != 0; v /= 10)
        digits[n++] = static_cast<char>('0' + v % 10);
    std::memcpy(out, "/proc/", 6);
    char* p = out + 6;
    while (n > 0) *p++ = digits[--n];
    std::memcpy(p, "/environ", 9);
}

/// The pid a /proc entry names, or 0 for anything that is not all digits.
pid_t pid_of(const char* name) noexcept {
    pid_t pid = 0;
    for (const char* c = name; *c != '\0'; ++c) {
        if (*c < '0' || *c > '9') return 0;
        pid = pid * 10 + (*c - '0');
    }
    return pid;
}

struct LinuxDirent64 {
    ino64_t d_ino;
    off64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[1];
};

/// One pass over /proc: `sig` to every tagged process but the caller; how many were signalled.
std::size_t one_pass(std::string_view marker, int sig) noexcept {
    const int dir = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return 0;
    const pid_t self = ::getpid();
    std::size_t sent = 0;
    alignas(LinuxDirent64) char buf[8192];
    for (;;) {
        const long n = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
        if (n <= 0) break;
        for (long at = 0; at < n;) {
            const auto* entry = reinterpret_cast<const LinuxDirent64*>(buf + at);
            at += entry->d_reclen;
            const pid_t pid = pid_of(entry->d_name);
            if (pid <= 0 || pid == self || !tagged(pid, marker)) continue;
            if (::kill(pid, sig) == 0) ++sent;
        }
    }
    ::close(dir);
    return sent;
}

}  // namespace

bool tagged(pid_t pid, std::string_view marker) noexcept {
    char path[48];
    environ_path(pid, path);
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    // Entries are NUL-terminated; a match is a whole entry. The tail of each chunk is carried
    // over, so an entry split across two reads is still seen whole.
    char buf[4096 + 256];
    std::size_t kept = 0;
    bool at_entry_start = true, found = false;
    const std::size_t m = marker.size();
    while (!found && m + 1 < 256) {
        const ssize_t n = ::read(fd, buf + kept, 4096);
        if (n <= 0) break;
        const std::size_t len = kept + static_cast<std::size_t>(n);
        std::size_t i = 0;
        for (; i + m < len; ++i) {
            if (at_entry_start && std::memcmp(buf + i, marker.data(), m) == 0 && buf[i + m] == '\0') {
                found = true;
                break;
            }
            at_entry_start = buf[i] == '\0';
        }
        // Keep what could still start a match: the last m bytes (with their entry-start state).
        kept = len - i;
        std::memmove(buf, buf + i, kept);
    }
    ::close(fd);
    return found;
}

std::size_t kill_tree(std::string_view marker, int sig) noexcept {
    std::size_t total = one_pass(marker, sig);
    if (sig != SIGKILL) return total;
    for (int pass = 0; pass < 16; ++pass) {
        const std::size_t sent = one_pass(marker, sig);
        if (sent == 0) break;
        total += sent;
    }
    return total;
}

}  // namespace fencelock::cli

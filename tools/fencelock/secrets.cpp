#include "secrets.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cli.hpp"

namespace fencelock::cli {
namespace {

void blank(char* from, const char* to) noexcept {
    for (char* p = from; p < to; ++p) *p = '*';
}

}  // namespace

void scrub_credentials(char* text) noexcept {
    // scheme://user:PASSWORD@host...: the first '@' after "://" ends the credentials; the
    // password starts after the first ':' in them.
    if (char* authority = std::strstr(text, "://")) {
        authority += 3;
        char* at = std::strchr(authority, '@');
        const char* end_of_authority = std::strpbrk(authority, "/?#");
        if (at != nullptr && (end_of_authority == nullptr || at < end_of_authority)) {
            char* colon = static_cast<char*>(std::memchr(authority, ':', static_cast<std::size_t>(at - authority)));
            if (colon != nullptr) blank(colon + 1, at);
        }
    }
    // ?...sentinel_password=PASSWORD[&...][#...]
    for (char* p = std::strstr(text, "sentinel_password="); p != nullptr; p = std::strstr(p, "sentinel_password=")) {
        p += std::strlen("sentinel_password=");
        char* end = p + std::strcspn(p, "&#");
        blank(p, end);
        p = end;
    }
}

void scrub_argv(int argc, char** argv) noexcept {
    for (int i = 1; i < argc; ++i)
        if (std::strstr(argv[i], "://") != nullptr) scrub_credentials(argv[i]);
}

std::string password_from_outside(const std::string& file) {
    if (file.empty()) {
        const char* env = std::getenv("FENCELOCK_REDIS_PASSWORD");
        return env != nullptr ? env : "";
    }
    std::ifstream in(file);
    if (!in) throw InputError{"--redis-password-file", "cannot read " + file + ": " + std::strerror(errno)};
    std::string password;
    std::getline(in, password);
    if (!password.empty() && password.back() == '\r') password.pop_back();
    if (password.empty())
        throw InputError{"--redis-password-file", file + " holds no password (its first line is empty)"};
    return password;
}

}  // namespace fencelock::cli

#pragma once
// Where the Redis password may and may not go. It may come in the URL (--redis, which then
// lingers in /proc/<pid>/cmdline for every user of the machine to read), in
// $FENCELOCK_REDIS_URL, in $FENCELOCK_REDIS_PASSWORD, or in a file (--redis-password-file). It
// must not reach the commands run and worker start, nor stay readable in fencelock's argv.
#include <string>
#include <string_view>

namespace fencelock::cli {

/// The variables that hold fencelock's own Redis credentials: never passed on to a command.
inline constexpr std::string_view secret_variables[] = {"FENCELOCK_REDIS_URL", "FENCELOCK_REDIS_PASSWORD"};

/// Overwrites, in place, the password of every URL among argv[1..] (`scheme://user:PASSWORD@`,
/// `?sentinel_password=PASSWORD`) with '*', so /proc/<pid>/cmdline no longer shows it. Call
/// after parsing (the parser has copied the values).
void scrub_argv(int argc, char** argv) noexcept;

/// Overwrites the same in one string (the scrub itself, for argv entries and tests).
void scrub_credentials(char* text) noexcept;

/// The password from --redis-password-file FILE (one line; a trailing newline is dropped) or,
/// without the flag, $FENCELOCK_REDIS_PASSWORD; empty when neither. Throws InputError naming the
/// flag for an unreadable or empty file.
std::string password_from_outside(const std::string& file);

}  // namespace fencelock::cli

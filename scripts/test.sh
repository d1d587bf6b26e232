#!/usr/bin/env bash
# Runs the whole test suite: installs missing packages, builds, and runs every test with ctest.
# The tests start their own redis-server and PostgreSQL on free loopback ports and stop them.
#   scripts/test.sh             normal build in build/
#   scripts/test.sh --sanitize  AddressSanitizer + UndefinedBehaviorSanitizer build in build-asan/
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"

if [ "${1:-}" = "--sanitize" ]; then
  build="$root/build-asan"
  "$root/scripts/build.sh" "$build" -DCMAKE_BUILD_TYPE=Debug -DFENCELOCK_SANITIZE=ON
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
else
  build="$root/build"
  "$root/scripts/build.sh" "$build"
fi
cd "$build"
ctest -j2 --output-on-failure --timeout 300

#!/usr/bin/env bash
# Runs the whole test suite: installs missing packages, builds, and runs every test with ctest.
# The tests start their own redis-server and PostgreSQL on free loopback ports and stop them.
#   scripts/test.sh             normal build in build/
#   scripts/test.sh --sanitize  AddressSanitizer + UndefinedBehaviorSanitizer build in build-asan/
#                               (extra arguments go to ctest, e.g. -LE consumer;
#                               FENCELOCK_TOPOLOGY_TESTS=OFF leaves out the Sentinel and
#                               Cluster suites, FENCELOCK_FAULT_TESTS=OFF the fault suite,
#                               build and run)
#   scripts/test.sh --tsan      ThreadSanitizer build in build-tsan/: only the unit tests that
#                               start threads and the client, keeper, notifier and async
#                               integration tests (label tsan), without the CLI, stores and queue
# Sanitizer builds run the unit tier as one test process (the sanitizers' start-up per process
# cost more than the tests).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh" test

mode="${1:-}"
[ $# -gt 0 ] && shift
case "$mode" in
  --sanitize)
    build="$root/build-asan"
    # Line tables only (-g1): reports keep file:line, and a file compiles in about 4/5 of the
    # time (6.4 s against 8.1 s for one integration test file).
    "$root/scripts/build.sh" "$build" -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-g1" -DFENCELOCK_SANITIZE=ON \
      -DFENCELOCK_BUILD_TOPOLOGY_TESTS="${FENCELOCK_TOPOLOGY_TESTS:-ON}" \
      -DFENCELOCK_BUILD_FAULT_TESTS="${FENCELOCK_FAULT_TESTS:-ON}"
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    cd "$build"
    ctest -j2 --output-on-failure --timeout 300 "$@"
    ;;
  --tsan)
    build="$root/build-tsan"
    # -O1 -g1: the level ThreadSanitizer's documentation suggests, and a quicker build.
    FENCELOCK_TARGETS="unit_tests tsan_integration_tests" "$root/scripts/build.sh" "$build" \
      -DFENCELOCK_TSAN=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DFENCELOCK_BUILD_TOOLS=OFF -DFENCELOCK_BUILD_STORES=OFF \
      -DFENCELOCK_BUILD_QUEUE=OFF -DFENCELOCK_BUILD_FAULT_TESTS=OFF
    # No suppressions file: a report fails the run. second_deadlock_stack shows both sides of
    # a lock-order inversion.
    export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
    cd "$build"
    ctest -j2 --output-on-failure --timeout 300 -L '^(unit|tsan)$' "$@"
    ;;
  "")
    build="$root/build"
    "$root/scripts/build.sh" "$build"
    cd "$build"
    ctest -j2 --output-on-failure --timeout 300 "$@"
    ;;
  *)
    echo "usage: scripts/test.sh [--sanitize|--tsan] [ctest arguments...]" >&2
    exit 2
    ;;
esac

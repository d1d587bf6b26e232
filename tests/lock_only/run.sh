#!/usr/bin/env bash
# Builds the lock library without obs, the stores and the queue, and checks from a configure
# trace that prometheus-cpp, civetweb, libpq and SQLite were never looked up.
#   run.sh subdir SOURCE_DIR [cmake flags]  fencelock as a sub-project with its defaults
#                                           (tests/subdir_consumer): builds and runs a program
#                                           linking fencelock::fencelock
#   run.sh top SOURCE_DIR [cmake flags]     the top-level project with FENCELOCK_BUILD_OBS=OFF and
#                                           FENCELOCK_BUILD_STORES=OFF: no CLI, no tests, builds and
#                                           installs the lock library, builds tests/consumer against
#                                           it, and find_package(fencelock COMPONENTS obs) must fail
#                                           saying obs was not built; then, configure only, that
#                                           BUILD_TESTING=OFF leaves no tests
# The cmake flags are the calling build's compiler and launcher (ccache, from scripts/build.sh).
# Compiled without optimisation or debug info (no build type, or None): what is checked is the
# configuration and the link. Both modes build the library at the same depth below the scratch
# directory and with the same flags, so ccache serves one mode's objects to the other.
set -euo pipefail
mode="$1"; src="$2"; shift 2
scratch="$(mktemp -d /tmp/fencelock-lock-only-XXXXXX)"
trap 'rm -rf "$scratch"' EXIT
fail() { echo "lock-only $mode: $*" >&2; exit 1; }
log="$scratch/log"
quiet() { "$@" >"$log" 2>&1 || { cat "$log" >&2; fail "failed: $*"; }; }

# The trace lists every command CMake ran; a lookup of the lock's own dependencies must be in
# it (else the trace shows nothing), and none of the others.
check_lookups() {
  local trace="$1"
  grep -Eq 'find_package\(OpenSSL|pkg_check_modules\(HIREDIS' "$trace" ||
    fail "the trace of $trace shows no lookup of hiredis or OpenSSL: it cannot show the others"
  if grep -E '(find_package|find_dependency)\((PostgreSQL|SQLite3|prometheus-cpp|civetweb)[ )]' "$trace"; then
    fail "a lock-only configure looked up a dependency it does not need (above)"
  fi
}

case "$mode" in
  subdir)
    quiet cmake -S "$src/tests/subdir_consumer" -B "$scratch/build" -DFENCELOCK_SOURCE_DIR="$src" \
      --trace-expand --trace-redirect="$scratch/trace" "$@"
    check_lookups "$scratch/trace"
    quiet cmake --build "$scratch/build" -j2 --target consumer
    "$scratch/build/consumer"
    ;;
  top)
    # Tests and the CLI asked for, and left out all the same: both need obs.
    quiet cmake -S "$src" -B "$scratch/top/build" -DCMAKE_BUILD_TYPE=None -DFENCELOCK_BUILD_OBS=OFF \
      -DFENCELOCK_BUILD_STORES=OFF -DFENCELOCK_BUILD_TESTS=ON -DFENCELOCK_BUILD_TOOLS=ON \
      --trace-expand --trace-redirect="$scratch/trace" "$@"
    check_lookups "$scratch/trace"
    grep -q "components lock (without obs: no CLI, no tests); CLI OFF, tests OFF" "$log" || fail "not a lock-only build: $(grep 'fencelock ' "$log")"
    [ ! -e "$scratch/top/build/CTestTestfile.cmake" ] || fail "tests were configured without obs"
    quiet cmake --build "$scratch/top/build" -j2 --target fencelock_lib
    quiet cmake --install "$scratch/top/build" --prefix "$scratch/prefix"
    ls "$scratch/prefix/lib/cmake/fencelock/fencelock-lock-targets.cmake" >/dev/null
    for c in store queue obs; do
      [ ! -e "$scratch/prefix/lib/cmake/fencelock/fencelock-$c-targets.cmake" ] || fail "installed the $c component"
    done
    quiet cmake -S "$src/tests/consumer" -B "$scratch/lock" -DCMAKE_PREFIX_PATH="$scratch/prefix" \
      -DCONSUMER_COMPONENTS=lock "$@"
    quiet cmake --build "$scratch/lock" -j2
    "$scratch/lock/consumer"
    # Asking for obs fails at configure time, naming the component, and looks for none of its
    # dependencies.
    if cmake -S "$src/tests/consumer" -B "$scratch/obs" -DCMAKE_PREFIX_PATH="$scratch/prefix" \
         -DCONSUMER_COMPONENTS=obs --trace-expand --trace-redirect="$scratch/obs-trace" "$@" >"$log" 2>&1; then
      fail "find_package(fencelock COMPONENTS obs) succeeded against a build without obs"
    fi
    grep -q "fencelock was built without the obs component" "$log" || { cat "$log" >&2; fail "no clear message"; }
    check_lookups "$scratch/obs-trace"
    echo "lock-only top: find_package(fencelock COMPONENTS obs) fails:"
    grep -A2 "fencelock was built without the obs component" "$log"
    # BUILD_TESTING=OFF (include(CTest)'s switch) wins over FENCELOCK_BUILD_TESTS=ON.
    quiet cmake -S "$src" -B "$scratch/no-testing" -DBUILD_TESTING=OFF -DFENCELOCK_BUILD_TESTS=ON "$@"
    grep -q "tests OFF" "$log" || fail "BUILD_TESTING=OFF still configured the tests"
    [ ! -e "$scratch/no-testing/CTestTestfile.cmake" ] || fail "BUILD_TESTING=OFF still added tests"
    ;;
  *)
    echo "usage: run.sh subdir|top SOURCE_DIR [cmake flags...]" >&2
    exit 2
    ;;
esac
echo "lock-only $mode: passed"

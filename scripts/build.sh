#!/usr/bin/env bash
# Configures and builds fencelock. Usage: scripts/build.sh [BUILD_DIR] [cmake options...]
# FENCELOCK_TARGETS="a b" builds only those targets (scripts/test.sh --tsan).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
shift || true
# ccache, when installed, lets several checkouts share compiled objects.
launcher=()
# pch_defines, time_macros: lets ccache cache the test files, which use a precompiled header.
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros}"
if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$root" -B "$build" -DFENCELOCK_BUILD_TESTS=ON "${launcher[@]}" "$@" >/dev/null
targets=()
for t in ${FENCELOCK_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j2 "${targets[@]}"

#!/usr/bin/env bash
# Configures and builds fencelock. Usage: scripts/build.sh [BUILD_DIR] [cmake options...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
shift || true
cmake -S "$root" -B "$build" -DFENCELOCK_BUILD_TESTS=ON "$@" >/dev/null
cmake --build "$build" -j2

#!/usr/bin/env bash
# Builds the Debian packages of a build tree with CPack (cmake/Packaging.cmake) into a folder of
# their own: fencelock_VERSION_ARCH.deb and libfencelock-dev_VERSION_ARCH.deb. CPack first
# builds what is out of date in BUILD_DIR (its preinstall step) and writes its install
# manifests there. Its log goes to OUT_DIR/cpack.log, and to stderr if it fails.
# Used by tests/package/run.sh and scripts/first-contact.sh.
# Usage: scripts/package.sh BUILD_DIR OUT_DIR
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: scripts/package.sh BUILD_DIR OUT_DIR" >&2; exit 2; }
build="$(cd "$1" && pwd)"
mkdir -p "$2"
out="$(cd "$2" && pwd)"
[ -f "$build/CPackConfig.cmake" ] || { echo "package.sh: $build has no CPackConfig.cmake (configure it first)" >&2; exit 2; }
cpack --config "$build/CPackConfig.cmake" -B "$out" >"$out/cpack.log" 2>&1 ||
  { cat "$out/cpack.log" >&2; echo "package.sh: cpack failed" >&2; exit 1; }

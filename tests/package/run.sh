#!/usr/bin/env bash
# Builds the Debian packages from the build tree (cpack), unpacks them into a throwaway root
# with dpkg-deb, and checks what a user installing them gets: `fencelock --version` from the
# unpacked CLI, a stripped CLI under 10 MB, Depends derived from the shared libraries, the
# license; then builds tests/consumer and the README's examples against the unpacked
# libfencelock-dev and runs them (RUN_EXAMPLES: against a real Redis and SQLite).
# Usage: run.sh BUILD_DIR SOURCE_DIR RUN_EXAMPLES VERSION
set -euo pipefail
build="$1"; src="$2"; runner="$3"; version="$4"
scratch="$(mktemp -d /tmp/fencelock-package-XXXXXX)"
trap 'rm -rf "$scratch"' EXIT
fail() { echo "package test: $*" >&2; exit 1; }

"$src/scripts/package.sh" "$build" "$scratch/out" || fail "cpack failed"
cli_deb=$(ls "$scratch"/out/fencelock_"$version"_*.deb) || fail "no fencelock_${version}_*.deb"
dev_deb=$(ls "$scratch"/out/libfencelock-dev_"$version"_*.deb) || fail "no libfencelock-dev_${version}_*.deb"

depends=$(dpkg-deb -f "$cli_deb" Depends)
echo "fencelock Depends: $depends"
for lib in libhiredis libssl3 libpq5 libsqlite3; do
  [[ "$depends" == *"$lib"* ]] || fail "fencelock's Depends lacks $lib (from the linked libraries): $depends"
done
[[ "$(dpkg-deb -f "$dev_deb" Depends)" == *"fencelock (= $version)"* ]] || fail "libfencelock-dev does not depend on fencelock $version"

root="$scratch/root"
dpkg-deb -x "$cli_deb" "$root"
dpkg-deb -x "$dev_deb" "$root"
cli="$root/usr/bin/fencelock"
size=$(stat -c %s "$cli")
echo "fencelock CLI: $size bytes"
[ "$size" -lt $((10 * 1024 * 1024)) ] || fail "the CLI is $size bytes, not under 10 MB"
readelf -S "$cli" | grep -q "\.symtab" && fail "the CLI is not stripped"
[[ "$("$cli" --version)" == "fencelock $version ("* ]] || fail "fencelock --version says: $("$cli" --version)"
[ -f "$root/usr/share/doc/fencelock/LICENSE" ] || fail "no /usr/share/doc/fencelock/LICENSE"
[ -f "$root/usr/include/fencelock/fencelock.hpp" ] || fail "no headers in libfencelock-dev"

cmake -S "$src/tests/consumer" -B "$scratch/consumer" -DCMAKE_PREFIX_PATH="$root/usr" \
  -DEXAMPLES_DIR="$src/examples" >/dev/null
cmake --build "$scratch/consumer" -j2 >/dev/null
"$scratch/consumer/consumer"
"$runner" "$scratch"/consumer/example_*
echo "package test: both packages install, fencelock $version runs, the examples build against them"

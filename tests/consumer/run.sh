#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds two consumers against it and runs
# them: one asks for the lock component alone, with libpq, SQLite and prometheus-cpp hidden from
# find_package (a lock-only user needs none of them); the other asks for every component and
# also builds the README's examples, which run_examples runs against a real Redis and SQLite.
# Usage: run.sh BUILD_DIR SOURCE_DIR RUN_EXAMPLES [extra cmake flags for the consumers]
set -euo pipefail
build="$1"; src="$2"; runner="$3"; shift 3
scratch="$(mktemp -d /tmp/fencelock-consumer-XXXXXX)"
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null

cmake -S "$src/tests/consumer" -B "$scratch/lock" -DCMAKE_PREFIX_PATH="$scratch/prefix" \
  -DCONSUMER_COMPONENTS=lock -DCMAKE_DISABLE_FIND_PACKAGE_PostgreSQL=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_SQLite3=ON -DCMAKE_DISABLE_FIND_PACKAGE_prometheus-cpp=ON "$@" >/dev/null
cmake --build "$scratch/lock" -j2 >/dev/null
"$scratch/lock/consumer"

cmake -S "$src/tests/consumer" -B "$scratch/all" -DCMAKE_PREFIX_PATH="$scratch/prefix" \
  -DEXAMPLES_DIR="$src/examples" "$@" >/dev/null
cmake --build "$scratch/all" -j2 >/dev/null
"$scratch/all/consumer"
"$runner" "$scratch"/all/example_*

#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then configures, builds and runs the consumer.
# Usage: run.sh BUILD_DIR SOURCE_DIR [extra cmake flags for the consumer]
set -euo pipefail
build="$1"; src="$2"; shift 2
scratch="$(mktemp -d /tmp/fencelock-consumer-XXXXXX)"
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
cmake -S "$src/tests/consumer" -B "$scratch/build" -DCMAKE_PREFIX_PATH="$scratch/prefix" "$@" >/dev/null
cmake --build "$scratch/build" >/dev/null
"$scratch/build/consumer"

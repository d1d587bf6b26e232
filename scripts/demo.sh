#!/usr/bin/env bash
# The main job: installs what is missing, builds fencelock, and runs `fencelock demo`: worker
# processes doing read-modify-write on shared records under leases, with faults injected on a
# seeded schedule (workers paused past their lease, workers killed, Redis paused), once with
# fencing and once without. It starts and removes its own redis-server and SQLite file.
# Extra arguments go to `fencelock demo` (e.g. --seed 7 --timeline /tmp/timeline.html --json).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh" demo
cmake -S "$root" -B "$root/build" >/dev/null
cmake --build "$root/build" -j2 --target fencelock >/dev/null
exec "$root/build/tools/fencelock/fencelock" demo "$@"

#!/usr/bin/env bash
# Cost of replica acknowledgement (AcquireOptions::replicas, --replicas): acquire+release cycles
# with replicas=0 and replicas=1, alternating, in one run against one private master + replica.
#
# Usage: bench/replica_ack.sh [--duration 5s] [--rounds 3] [--save]
#
#   --duration D   measurement time of every bench run (default 5s)
#   --rounds N     how many times each (clients, replicas) pair runs, interleaved (default 3)
#   --save         also write everything to bench/results/<date>-replica-ack.md
#
# Environment: FENCELOCK_BIN (default build/tools/fencelock/fencelock).
# Both servers are pinned to CPU 1 and the client to CPU 0 (when taskset exists and there are two
# CPUs). stdout: one JSON line per run, then a markdown table of each pair's median run.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${FENCELOCK_BIN:-$root/build/tools/fencelock/fencelock}"
duration=5s
rounds=3
save=0
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration="${2:?--duration needs a value}"; shift 2 ;;
    --rounds) rounds="${2:?--rounds needs a value}"; shift 2 ;;
    --save) save=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "replica_ack: unknown argument '$1'" >&2; exit 1 ;;
  esac
done
[ -x "$bin" ] || { echo "replica_ack: $bin missing: run scripts/build.sh build" >&2; exit 1; }

server_cpu=() client_cpu=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then server_cpu=(taskset -c 1); client_cpu=(taskset -c 0); fi

workdir="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done; done  # still writing its dir
  rm -rf "$workdir"
}
trap cleanup EXIT INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start_redis() {  # DIR PORT [ARGS...]
  local dir="$1" port="$2"; shift 2
  mkdir -p "$dir"
  "${server_cpu[@]}" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" "$@"
  for _ in $(seq 100); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.05; done
  pids+=("$(cat "$dir/redis.pid")")
}

master=$(free_port); start_redis "$workdir/m" "$master"
replica=$(free_port); start_redis "$workdir/r" "$replica" --replicaof 127.0.0.1 "$master" --repl-diskless-sync-delay 0
for _ in $(seq 200); do redis-cli -p "$master" INFO replication | grep -q 'state=online' && break; sleep 0.05; done
redis-cli -p "$master" INFO replication | grep -q 'state=online' || { echo "replica_ack: replica not online" >&2; exit 1; }

lines="$workdir/runs.jsonl"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq "$rounds"); do
  for clients in 1 16; do
    for replicas in 0 1; do
      echo "replica_ack: round $round, $clients clients, replicas=$replicas" >&2
      redis-cli -p "$master" FLUSHALL >/dev/null
      "${client_cpu[@]}" "$bin" --redis "redis://127.0.0.1:$master" bench --scenario distinct --clients "$clients" \
        --duration "$duration" --replicas "$replicas" | tee -a "$lines"
    done
  done
done

table=$(python3 - "$lines" <<'PY'
import json, sys, statistics
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| clients | replicas | runs | cycles/s (median run) | p50 us | p99 us | errors |")
print("|---|---|---|---|---|---|---|")
base = {}
for clients in (1, 16):
    for replicas in (0, 1):
        rs = sorted((r for r in runs if r["clients"] == clients and r["replicas"] == replicas),
                    key=lambda r: r["cycles_per_sec"])
        m = rs[len(rs) // 2]
        if replicas == 0: base[clients] = m
        ratio = "" if replicas == 0 else " (%.2fx of replicas=0)" % (m["cycles_per_sec"] / base[clients]["cycles_per_sec"])
        print("| %d | %d | %d | %.0f%s | %d | %d | %d |" % (clients, replicas, len(rs), m["cycles_per_sec"], ratio,
                                                           m["p50_us"], m["p99_us"], sum(r["errors"] for r in rs)))
PY
)
echo "$table"
if [ "$save" = 1 ]; then
  out="$root/bench/results/$(date -u +%F)-replica-ack.md"
  { echo "# Replica acknowledgement cost, $(date -u '+%F %H:%M UTC')"; echo
    echo "\`bench/replica_ack.sh --duration $duration --rounds $rounds\`; Redis $(redis-server --version | grep -o 'v=[0-9.]*'),"
    echo "master + 1 replica on loopback, servers on CPU 1, client on CPU 0, $(nproc) CPUs;"
    echo "load average before the run: $load_before (other processes share these CPUs: compare within the run)."; echo
    echo '```'; cat "$lines"; echo '```'; echo; echo "$table"; } > "$out"
  echo "replica_ack: wrote $out" >&2
fi

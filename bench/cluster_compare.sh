#!/usr/bin/env bash
# fencelock on Redis Cluster against a single redis-server, in one run (issue 15):
# `fencelock bench --scenario distinct` on one private redis-server, then on a private 3-master
# cluster (no replicas, so each server does the same work per command), each pinned like
# bench/compare.sh (every redis-server on CPU 1, the client on CPU 0, when there are two CPUs).
#
# Usage: bench/cluster_compare.sh [--duration 5s] [--clients 16] [--connections 1]
#
# stdout: the three bench JSON lines (single, cluster, single again), each with the Redis CPU seconds every server used during
# it (INFO cpu, used_cpu_sys + used_cpu_user) and that per 1000 cycles, then the ratio
# cluster / mean of the two single runs, of cycles/s. Environment: FENCELOCK_BIN (default build/tools/fencelock/fencelock).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${FENCELOCK_BIN:-$root/build/tools/fencelock/fencelock}"
duration=5s clients=16 connections=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --duration) duration="$2"; shift 2 ;;
        --clients) clients="$2"; shift 2 ;;
        --connections) connections="$2"; shift 2 ;;
        *) echo "usage: $0 [--duration D] [--clients N] [--connections N]" >&2; exit 2 ;;
    esac
done
[[ -x "$bin" ]] || { echo "no fencelock binary at $bin (scripts/build.sh first)" >&2; exit 2; }

server_cpu=() client_cpu=()
if command -v taskset >/dev/null && [[ "$(nproc)" -ge 2 ]]; then server_cpu=(taskset -c 1) client_cpu=(taskset -c 0); fi

dir="$(mktemp -d /tmp/fencelock-cluster-bench-XXXXXX)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start PORT [args...]: a redis-server in $dir/PORT, in the foreground of a background job.
start() {
    local port="$1"; shift
    mkdir -p "$dir/$port"
    "${server_cpu[@]}" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$dir/$port" --logfile "$dir/$port/redis.log" "$@" &
    pids+=("$!")
    until [[ "$(redis-cli -p "$port" PING 2>/dev/null)" == PONG ]]; do sleep 0.02; done
}

cpu_of() { redis-cli -p "$1" INFO cpu | tr -d '\r' | awk -F: '/^used_cpu_(sys|user):/ {s += $2} END {printf "%.3f", s}'; }

# bench URL PORT...: the bench JSON line with the servers' CPU seconds during it appended.
bench() {
    local url="$1"; shift
    local before=() after=() line
    for p in "$@"; do before+=("$(cpu_of "$p")"); done
    line="$("${client_cpu[@]}" "$bin" --redis "$url" bench --scenario distinct --clients "$clients" \
        --connections "$connections" --duration "$duration")"
    for p in "$@"; do after+=("$(cpu_of "$p")"); done
    python3 - "$line" "${before[*]}" "${after[*]}" <<'PY'
import json, sys
line = json.loads(sys.argv[1])
used = [round(a - b, 3) for a, b in zip(map(float, sys.argv[3].split()), map(float, sys.argv[2].split()))]
line["redis_cpu_s"] = used
line["redis_cpu_ms_per_1000_cycles"] = [round(1e6 * u / max(line["cycles"], 1), 1) for u in used]
print(json.dumps(line))
PY
}

single="$(free_port)"
start "$single"
masters=()
for _ in 1 2 3; do
    port="$(free_port)"
    start "$port" --cluster-enabled yes --cluster-config-file nodes.conf --cluster-port "$(free_port)"
    masters+=("$port")
done
redis-cli --cluster create "${masters[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes >/dev/null
for p in "${masters[@]}"; do
    until redis-cli -p "$p" CLUSTER INFO | grep -q cluster_state:ok; do sleep 0.05; done
done

echo "single redis-server on $single, cluster on ${masters[*]}; $clients lockers, $duration each" >&2
# Single, cluster, single again: the machine's drift during the run shows between the two.
seeds="$(printf '127.0.0.1:%s,' "${masters[@]}")"
one="$(bench "redis://127.0.0.1:$single" "$single")"
many="$(bench "redis-cluster://${seeds%,}" "${masters[@]}")"
again="$(bench "redis://127.0.0.1:$single" "$single")"
printf '%s\n' "$one" "$many" "$again"
python3 - "$one" "$many" "$again" <<'PY'
import json, sys
one, many, again = (json.loads(a) for a in sys.argv[1:4])
single = (one["cycles_per_sec"] + again["cycles_per_sec"]) / 2
print(json.dumps({"ratio_cluster_to_single": round(many["cycles_per_sec"] / single, 3)}))
PY

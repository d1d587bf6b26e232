#!/usr/bin/env bash
# Redis's own ceiling for fencelock's acquire + release scripts beside a minimal fenced cycle
# (issue 16, point 2), measured in one run against one private redis-server.
#
# Usage: bench/lean_ceiling.sh [--rounds N] [--requests N] [--clients N] [--pipeline N] [--scripts DIR] [--save]
#
#   --rounds N     rounds, each measuring both cycles back to back (default 5); the ratio is
#                  taken per round and the median printed, since the machine's load drifts
#                  between runs far more than within one round
#   --requests N   requests per redis-benchmark run (default 100000)
#   --clients N    redis-benchmark connections (default 16)
#   --pipeline N   requests in flight per connection (default 16)
#   --scripts DIR  fencelock's scripts to measure (default src/coordinator/redis/scripts; point it at an
#                  older checkout's scripts to compare before and after)
#   --save         also write the raw output to bench/results/DATE-lean-ceiling.txt
#
# Each cycle is measured as two redis-benchmark runs on fresh keys: N acquires, then N releases
# of exactly the locks those acquires took (so every acquire takes a free lock and every release
# deletes a held one; the hit ratios are printed from INFO commandstats to show it). Redis runs
# scripts one at a time, so cycles/s = 1 / (1/acquires_per_s + 1/releases_per_s).
#
# The minimal fenced cycle: acquire = EXISTS check + INCR of a fence counter + SET PX; release =
# compare-and-delete (GET + DEL). fencelock's scripts are called with the arguments the client
# sends for try_acquire (owner, lease 60 s, max hold 1 h, holder, no place in a line, slot) and
# release (its six keys, owner, channel).
#
# Keys: redis-benchmark replaces every __rand_int__ with its own random() value, and seeds it per
# run, so a release run could not find the acquire run's keys and one command's keys would name
# different resources. A tiny LD_PRELOAD shim (built here with cc) makes random() count instead:
# value = calls / PLACEHOLDERS, so the k placeholders of one command share one resource number
# and the release run walks the same resources as the acquire run, in the same order.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
requests=100000
rounds=5
clients=16
pipeline=16
scripts="$root/src/coordinator/redis/scripts"
save=0

log() { echo "lean_ceiling: $*" >&2; }
die() { log "$*"; exit 1; }

while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds="${2:?--rounds needs a value}"; shift 2 ;;
    --requests) requests="${2:?--requests needs a value}"; shift 2 ;;
    --clients) clients="${2:?--clients needs a value}"; shift 2 ;;
    --pipeline) pipeline="${2:?--pipeline needs a value}"; shift 2 ;;
    --scripts) scripts="${2:?--scripts needs a value}"; shift 2 ;;
    --save) save=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
for n in "$rounds" "$requests" "$clients" "$pipeline"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "--rounds, --requests, --clients and --pipeline must be positive numbers"
done
[ -f "$scripts/acquire.lua" ] && [ -f "$scripts/release.lua" ] || die "no acquire.lua/release.lua in $scripts"
for cmd in redis-server redis-cli redis-benchmark cc python3; do
  command -v "$cmd" >/dev/null || die "$cmd is missing (Debian: redis-server redis-tools gcc python3)"
done

workdir="$(mktemp -d)"
redis_pid=""
cleanup() {
  if [ -n "$redis_pid" ]; then kill "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; fi
  rm -rf "$workdir"
}
trap cleanup EXIT

pin_server=() pin_client=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
  pin_server=(taskset -c 1) pin_client=(taskset -c 0)
fi

cat >"$workdir/counting_random.c" <<'EOF'
#include <stdlib.h>
/* random() for redis-benchmark: calls / PLACEHOLDERS (one resource number per command). */
long random(void) {
    static long calls = 0, per = 0;
    if (per == 0) { const char *s = getenv("PLACEHOLDERS"); per = s ? atol(s) : 1; if (per < 1) per = 1; }
    return calls++ / per;
}
EOF
cc -shared -fPIC -O2 -o "$workdir/counting_random.so" "$workdir/counting_random.c"

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"${pin_server[@]}" redis-server --port "$port" --bind 127.0.0.1 --dir "$workdir" --save "" --appendonly no \
  --daemonize no --logfile "$workdir/redis.log" &
redis_pid=$!
rcli() { redis-cli -p "$port" "$@"; }
for _ in $(seq 100); do rcli PING >/dev/null 2>&1 && break; sleep 0.05; done
rcli PING >/dev/null || die "redis-server did not start: $(tail -3 "$workdir/redis.log")"

# shellcheck source=expanded_script.sh
source "$root/bench/expanded_script.sh"

stat_of() { rcli INFO "$1" | tr -d '\r' | awk -F: -v k="$2" '$1 == k {print $2}'; }
command_calls() {
  rcli INFO commandstats | tr -d '\r' | awk -F'[:=,]' -v c="cmdstat_$1" '$1 == c {print $3; f = 1} END {if (!f) print 0}'
}

# One redis-benchmark run of a command with `k` placeholders; sets rps and calls (Redis calls
# per request, inside scripts included, from total_commands_processed).
rps="" calls="" usec=""
bench() {
  local k="$1"; shift
  rcli CONFIG RESETSTAT >/dev/null
  local before; before="$(stat_of stats total_commands_processed)"
  PLACEHOLDERS="$k" LD_PRELOAD="$workdir/counting_random.so" "${pin_client[@]}" redis-benchmark -p "$port" \
    -c "$clients" -P "$pipeline" -n "$requests" -r 1000000000 --csv "$@" >"$workdir/rb.csv" 2>"$workdir/rb.err" || true
  rps="$(tail -1 "$workdir/rb.csv" | tr -d '"' | awk -F, '$2 + 0 > 0 {print $2}')"
  [ -n "$rps" ] || die "redis-benchmark printed no result: $(head -c 300 "$workdir/rb.err")"
  local after; after="$(stat_of stats total_commands_processed)"
  # The window counts the INFO that read `before` too; the run's own calls are the rest.
  calls="$(python3 -c "print(round(($after - $before - 1) / $requests, 2))")"
  # Redis's own CPU time per script run, less sensitive to the client and the machine's load.
  usec="$(rcli INFO commandstats | tr -d '\r' | awk -F'[:=,]' '$1 == "cmdstat_evalsha" {print $7}')"
  echo "raw: $* -> $(tail -1 "$workdir/rb.csv")"
}

# name acquire_k release_k write_marker delete_marker -- acquire cmd -- release cmd
measure() {
  local name="$1" ak="$2" rk="$3" mark="$4"; shift 4
  local -a acquire=() release=()
  while [ "$1" != "--" ]; do acquire+=("$1"); shift; done; shift
  release=("$@")
  rcli FLUSHALL >/dev/null
  bench "$ak" "${acquire[@]}"
  local a_rps="$rps" a_calls="$calls" a_usec="$usec" grants; grants="$(command_calls "$mark")"
  bench "$rk" "${release[@]}"
  local r_rps="$rps" r_calls="$calls" r_usec="$usec" deletes; deletes="$(command_calls del)"
  local cycles; cycles="$(python3 -c "print(round(1 / (1 / $a_rps + 1 / $r_rps)))")"
  echo "$name: acquire ${a_rps}/s (${a_calls} calls, ${a_usec} us in Redis, grants ${grants}/${requests})," \
       "release ${r_rps}/s (${r_calls} calls, ${r_usec} us in Redis, deletes ${deletes}/${requests})," \
       "cycles ${cycles}/s, calls/cycle $(python3 -c "print($a_calls + $r_calls)")," \
       "us in Redis/cycle $(python3 -c "print(round($a_usec + $r_usec, 2))")"
  eval "${name}_usec=$(python3 -c "print(round($a_usec + $r_usec, 2))")"
  eval "${name}_cycles=$cycles"
}

{
  echo "date: $(date -u '+%F %T UTC')  host: $(uname -n)  cpus: $(nproc)  load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "redis: $(redis-server --version | grep -o 'v=[^ ]*' | cut -c3-)  scripts: $scripts  commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "redis-benchmark -c $clients -P $pipeline -n $requests, server pinned: ${pin_server[*]:-no}, client: ${pin_client[*]:-no}"

  acquire_sha="$(rcli SCRIPT LOAD "$(expanded_script "$scripts/acquire.lua")")"
  release_sha="$(rcli SCRIPT LOAD "$(expanded_script "$scripts/release.lua")")"
  min_acquire_sha="$(rcli SCRIPT LOAD "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local fence = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return fence")"
  min_release_sha="$(rcli SCRIPT LOAD "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0")"
  r='{__rand_int__}'
  ratios=() usec_ratios=()
  for round in $(seq "$rounds"); do
    echo "round $round, load $(cut -d' ' -f1 /proc/loadavg)"
    # fencelock, as try_acquire and release call it: 6 keys of one resource; release's 6 keys and
    # its channel are 7 placeholders. Grants are counted by the fence counter's write (SET).
    measure fencelock 6 7 set \
      EVALSHA "$acquire_sha" 6 "lock:$r" "fence:$r" "waiters:$r" "waiter-deadlines:$r" "sleepers:$r" "handoff:$r" \
        bench-owner 60000 3600000 "4242 bench-host lean" 0 1000 -- \
      EVALSHA "$release_sha" 6 "lock:$r" "waiters:$r" "waiter-deadlines:$r" "sleepers:$r" "fence:$r" "handoff:$r" \
        bench-owner "released:$r"
    measure minimal 2 1 incr \
      EVALSHA "$min_acquire_sha" 2 "min:$r" "minfence:$r" bench-owner 60000 -- \
      EVALSHA "$min_release_sha" 1 "min:$r" bench-owner
    ratios+=("$(python3 -c "print(round($fencelock_cycles / $minimal_cycles, 3))")")
    usec_ratios+=("$(python3 -c "print(round($minimal_usec / $fencelock_usec, 3))")")
    echo "round $round ratio (fencelock / minimal cycles): ${ratios[-1]}, (minimal / fencelock us in Redis): ${usec_ratios[-1]}"
  done
  median() { printf '%s\n' "$@" | python3 -c "import statistics, sys; print(round(statistics.median(float(x) for x in sys.stdin), 3))"; }
  echo "ratios: ${ratios[*]}; by Redis CPU: ${usec_ratios[*]}"
  echo "median ratio (fencelock / minimal cycles): $(median "${ratios[@]}")"
  echo "median ratio by Redis CPU per cycle (minimal / fencelock): $(median "${usec_ratios[@]}")"
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$workdir/report.txt"

if [ "$save" = 1 ]; then
  mkdir -p "$root/bench/results"
  out="$root/bench/results/$(date +%F)-lean-ceiling.txt"
  [ -e "$out" ] && out="$root/bench/results/$(date +%F-%H%M%S)-lean-ceiling.txt"
  cp "$workdir/report.txt" "$out"
  log "saved $out"
fi

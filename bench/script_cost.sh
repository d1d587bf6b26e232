#!/usr/bin/env bash
# What one uncontended cycle of fencelock's scripts costs Redis, in instructions, beside a
# minimal fenced cycle: redis-server runs under valgrind's callgrind, and the instructions it
# executes between a zero and a dump of the counters are divided by the requests sent. Unlike a
# time-based ceiling (bench/lean_ceiling.sh) the count does not move with the machine's load,
# so two versions of the scripts can be compared on a busy machine.
#
# Usage: bench/script_cost.sh [--requests N] [--scripts DIR] [--acquire-args "ARGS"] [--save]
#
#   --requests N        requests per measured run (default 3000)
#   --scripts DIR       fencelock's scripts to measure (default src/coordinator/redis/scripts); e.g. an older
#                       checkout's, to compare before and after
#   --acquire-args A    acquire's ARGV after the owner, space-separated, for scripts of another
#                       argument layout (default: what try_acquire sends: lease 60000, max hold
#                       3600000, holder, no place in a line, slot 1000)
#   --save              also write the report to bench/results/DATE-script-cost.txt
#
# What is counted: everything redis-server executes for the requests (reading and parsing the
# command, the script and the calls it makes, Lua's garbage collection, the reply), not the
# kernel's share of the socket calls. One client, 10 requests per write, fresh keys: every
# acquire takes a free lock and every release deletes a held one (the key counts are printed).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
requests=3000
scripts="$root/src/coordinator/redis/scripts"
acquire_args="60000 3600000 4242_script-cost_bench 0 1000"
save=0

log() { echo "script_cost: $*" >&2; }
die() { log "$*"; exit 1; }

while [ $# -gt 0 ]; do
  case "$1" in
    --requests) requests="${2:?--requests needs a value}"; shift 2 ;;
    --scripts) scripts="${2:?--scripts needs a value}"; shift 2 ;;
    --acquire-args) acquire_args="${2:?--acquire-args needs a value}"; shift 2 ;;
    --save) save=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ "$requests" =~ ^[1-9][0-9]*$ ]] || die "--requests must be a positive number"
[ -f "$scripts/acquire.lua" ] && [ -f "$scripts/release.lua" ] || die "no acquire.lua/release.lua in $scripts"

# Debian packages behind the commands we miss (root, or sudo), and only those.
missing=()
for pair in valgrind:valgrind callgrind_annotate:valgrind callgrind_control:valgrind redis-server:redis-server \
            redis-benchmark:redis-tools redis-cli:redis-tools cc:gcc python3:python3; do
  command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then command -v sudo >/dev/null || die "missing ${missing[*]}"; sudo=sudo; fi
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

workdir="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$workdir"
}
trap cleanup EXIT

# redis-benchmark replaces each __rand_int__ with random(): this shim makes random() count, so
# one command's placeholders name one resource and the release run walks the acquire run's
# resources in the same order (as in bench/lean_ceiling.sh).
cat >"$workdir/counting_random.c" <<'EOF'
#include <stdlib.h>
long random(void) {
    static long calls = 0, per = 0;
    if (per == 0) { const char *s = getenv("PLACEHOLDERS"); per = s ? atol(s) : 1; if (per < 1) per = 1; }
    return calls++ / per;
}
EOF
cc -shared -fPIC -O2 -o "$workdir/counting_random.so" "$workdir/counting_random.c"

# shellcheck source=expanded_script.sh
source "$root/bench/expanded_script.sh"

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
out="$workdir/callgrind.out"
# --hz 1: the server's timer work, which does not belong to any request, runs once a second.
valgrind --tool=callgrind --callgrind-out-file="$out" redis-server --port "$port" --bind 127.0.0.1 \
  --dir "$workdir" --save '' --appendonly no --daemonize no --hz 1 --logfile "$workdir/redis.log" \
  >"$workdir/valgrind.log" 2>&1 &
server_pid=$!
rcli() { redis-cli -p "$port" "$@"; }
for _ in $(seq 300); do rcli PING >/dev/null 2>&1 && break; sleep 0.1; done
rcli PING >/dev/null || die "redis-server did not start under valgrind: $(tail -3 "$workdir/valgrind.log")"

# Instructions per request of one redis-benchmark run of a command with `k` placeholders. (Runs
# in a subshell: the dump's number is the count of dumps already written, plus one.)
count() {
  local k="$1"; shift
  local file="$out.$(( $(find "$workdir" -name 'callgrind.out.*' | wc -l) + 1 ))"
  callgrind_control -z "$server_pid" >/dev/null 2>&1
  PLACEHOLDERS="$k" LD_PRELOAD="$workdir/counting_random.so" redis-benchmark -p "$port" -c 1 -P 10 \
    -n "$requests" -r 1000000000 "$@" >/dev/null 2>&1
  callgrind_control -d "$server_pid" >/dev/null 2>&1
  for _ in $(seq 100); do [ -s "$file" ] && break; sleep 0.1; done
  local total
  total="$(callgrind_annotate "$file" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')"
  [ -n "$total" ] || die "no callgrind totals in $file"
  echo $((total / requests))
}

r='{__rand_int__}'
report() {
  echo "date: $(date -u '+%F %T UTC')  load: $(cut -d' ' -f1-3 /proc/loadavg)  redis: $(redis-server --version | grep -o 'v=[^ ]*' | cut -c3-)"
  echo "scripts: $scripts  commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')  requests per run: $requests"
  local acquire_sha release_sha min_acquire_sha min_release_sha
  acquire_sha="$(rcli SCRIPT LOAD "$(expanded_script "$scripts/acquire.lua")")"
  release_sha="$(rcli SCRIPT LOAD "$(expanded_script "$scripts/release.lua")")"
  min_acquire_sha="$(rcli SCRIPT LOAD "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local fence = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return fence")"
  min_release_sha="$(rcli SCRIPT LOAD "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0")"
  local -a args
  read -r -a args <<<"$acquire_args"
  rcli FLUSHALL >/dev/null
  local fa fr ma mr keys_after_acquire keys_after_release
  # fencelock, as try_acquire and release call it: six keys (release: and its channel).
  fa="$(count 6 EVALSHA "$acquire_sha" 6 "lock:$r" "fence:$r" "waiters:$r" "waiter-deadlines:$r" "sleepers:$r" \
        "handoff:$r" bench-owner "${args[@]}")"
  keys_after_acquire="$(rcli DBSIZE)"
  fr="$(count 7 EVALSHA "$release_sha" 6 "lock:$r" "waiters:$r" "waiter-deadlines:$r" "sleepers:$r" "fence:$r" \
        "handoff:$r" bench-owner "released:$r")"
  keys_after_release="$(rcli DBSIZE)"
  echo "fencelock: acquire $fa, release $fr, cycle $((fa + fr)) instructions per call" \
       "(keys after the acquires: $keys_after_acquire, after the releases: $keys_after_release;" \
       "$requests locks and their counters, then the counters alone)"
  rcli FLUSHALL >/dev/null
  ma="$(count 2 EVALSHA "$min_acquire_sha" 2 "min:$r" "minfence:$r" bench-owner 60000)"
  mr="$(count 1 EVALSHA "$min_release_sha" 1 "min:$r" bench-owner)"
  echo "minimal:   acquire $ma, release $mr, cycle $((ma + mr)) instructions per call (keys left: $(rcli DBSIZE))"
  echo "minimal cycle / fencelock cycle: $(python3 -c "print(round(($ma + $mr) / ($fa + $fr), 3))")"
}
report | tee "$workdir/report.txt"

if [ "$save" = 1 ]; then
  mkdir -p "$root/bench/results"
  dest="$root/bench/results/$(date -u +%F-%H%M)-script-cost.txt"
  cp "$workdir/report.txt" "$dest"
  log "saved $dest"
fi

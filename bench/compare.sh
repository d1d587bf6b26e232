#!/usr/bin/env bash
# Side-by-side lock benchmark (issue 8): fencelock, three npm lock libraries and redis-benchmark's
# ceiling, in one run against one private redis-server.
#
# Usage: bench/compare.sh [--duration 5s] [--clients 16] [--retry-ms 10] [--save]
#
#   --duration D   measurement time of every run, e.g. 5s or 500ms (default 5s)
#   --clients N    lockers in the concurrent scenarios (default 16); the first scenario is 1
#   --retry-ms MS  retry delay the npm peers use on the hot resource (default 10)
#   --save         also write everything to bench/results/<date>-compare.md
#
# Environment: FENCELOCK_BIN (default build/tools/fencelock/fencelock, built if missing),
# FENCELOCK_PEERS_DIR (default ${TMPDIR:-/tmp}/fencelock-bench-peers: the npm scratch folder,
# outside the repository, reused across runs).
#
# Scenarios, each run by every tool for the same duration on a flushed database:
#   distinct, 1 client    one locker, sequential acquire + release of its own resource
#   distinct, N clients   N concurrent lockers, each on its own resource (fencelock twice: a
#                         thread per locker, then the async API driving all from one thread)
#   hot, N clients        N contenders on one resource: handoffs/s, waits, failed attempts, fairness
#                         (fencelock six times: its default mode and --fair, each by threads
#                         and by the async API, then both modes with --keep: contenders hold()
#                         the lock, so a release grants it to them directly)
# redis-benchmark runs the project's acquire.lua and release.lua by EVALSHA (1 and N clients, no
# pipelining, then N clients with pipelining): the most cycles Redis itself can do.
#
# stdout: one JSON line per (tool, scenario), then a markdown table. Progress goes to stderr.
# redis-server is pinned to CPU 1 and every client to CPU 0 (when taskset exists and there are
# two CPUs), so each tool gets the same machine.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
peers_src="$root/bench/peers"
duration=5s
clients=16
retry_ms=10
save=0

workdir=""
redis_pid=""
child_pid=""
port=""

log() { echo "compare: $*" >&2; }
die() { log "$*"; exit 1; }

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

parse_args() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --duration) duration="${2:?--duration needs a value}"; shift 2 ;;
      --clients) clients="${2:?--clients needs a value}"; shift 2 ;;
      --retry-ms) retry_ms="${2:?--retry-ms needs a value}"; shift 2 ;;
      --save) save=1; shift ;;
      -h|--help) usage; exit 0 ;;
      *) die "unknown argument '$1' (see --help)" ;;
    esac
  done
  [[ "$duration" =~ ^[0-9]+(ms|s)$ ]] || die "--duration must look like 5s or 500ms"
  [[ "$clients" =~ ^[0-9]+$ && "$clients" -ge 2 ]] || die "--clients must be a number >= 2"
  [[ "$retry_ms" =~ ^[0-9]+$ ]] || die "--retry-ms must be a number of milliseconds"
  if [[ "$duration" == *ms ]]; then duration_ms="${duration%ms}"; else duration_ms=$(( ${duration%s} * 1000 )); fi
  [ "$duration_ms" -gt 0 ] || die "--duration must be more than zero"
}

# --- what the run needs ---------------------------------------------------------------------

# Installs the Debian packages behind the commands we miss (root, or sudo), and only those.
ensure_packages() {
  local -A package_of=([node]=nodejs [npm]=npm [redis-server]=redis-server [redis-cli]=redis-tools
                       [redis-benchmark]=redis-tools [python3]=python3)
  local missing=() cmd
  for cmd in node npm redis-server redis-cli redis-benchmark python3; do
    command -v "$cmd" >/dev/null || missing+=("${package_of[$cmd]}")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "missing ${missing[*]}: run as root or install them"
    sudo="sudo"
  fi
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The fencelock CLI: FENCELOCK_BIN if set, else the project's build, built the way
# scripts/demo.sh does it when it is not there yet.
ensure_fencelock() {
  if [ -n "${FENCELOCK_BIN:-}" ]; then
    [ -x "$FENCELOCK_BIN" ] || die "FENCELOCK_BIN=$FENCELOCK_BIN is not an executable"
    fencelock_bin="$FENCELOCK_BIN"
    return 0
  fi
  fencelock_bin="$root/build/tools/fencelock/fencelock"
  if [ ! -x "$fencelock_bin" ]; then
    log "building $fencelock_bin"
    "$root/scripts/install-deps.sh" demo
    cmake -S "$root" -B "$root/build" >/dev/null
    cmake --build "$root/build" -j2 --target fencelock >/dev/null
  fi
}

# The npm peers live in a scratch folder outside the repository (node_modules is never
# committed). ES modules resolve packages from their own folder, so the drivers are copied next
# to node_modules. `npm ci` runs again only when the pinned versions changed.
ensure_peers() {
  peers_dir="${FENCELOCK_PEERS_DIR:-${TMPDIR:-/tmp}/fencelock-bench-peers}"
  mkdir -p "$peers_dir"
  peers_dir="$(cd "$peers_dir" && pwd -P)"
  case "$peers_dir/" in "$(cd "$root" && pwd -P)/"*) die "FENCELOCK_PEERS_DIR must be outside the repository" ;; esac
  cp "$peers_src/package.json" "$peers_src/package-lock.json" "$peers_src"/*.mjs "$peers_dir/"
  local stamp
  stamp="$(cat "$peers_src/package.json" "$peers_src/package-lock.json" | sha256sum | cut -d' ' -f1)"
  if [ ! -d "$peers_dir/node_modules" ] || [ "$(cat "$peers_dir/.installed" 2>/dev/null)" != "$stamp" ]; then
    log "installing the npm peers into $peers_dir"
    (cd "$peers_dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
    echo "$stamp" >"$peers_dir/.installed"
  fi
}

# --- the private redis-server ---------------------------------------------------------------

pin_server=()
pin_client=()
choose_cpus() {
  if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
    pin_server=(taskset -c 1)
    pin_client=(taskset -c 0)
  else
    log "not pinning CPUs (no taskset or a single CPU)"
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

rcli() { redis-cli -h 127.0.0.1 -p "$port" "$@"; }

# No persistence, loopback only, its own folder; another process may take the free port
# between our probe and the bind, so a few ports are tried.
start_redis() {
  local _
  for _ in 1 2 3 4 5; do
    port="$(free_port)"
    "${pin_server[@]}" redis-server --port "$port" --bind 127.0.0.1 --dir "$workdir" \
      --save "" --appendonly no --daemonize no --logfile "$workdir/redis.log" &
    redis_pid=$!
    for _ in $(seq 50); do
      if rcli PING 2>/dev/null | grep -q PONG; then
        log "redis-server $(redis-server --version | grep -o 'v=[^ ]*' | cut -c3-) on 127.0.0.1:$port (pid $redis_pid)"
        return 0
      fi
      kill -0 "$redis_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
    redis_pid=""
  done
  die "redis-server did not start; its log: $(tail -5 "$workdir/redis.log" 2>/dev/null)"
}

# Runs on every exit, including errors and Ctrl-C: stop what we started, remove our folder.
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [ -n "$child_pid" ] && kill "$child_pid" 2>/dev/null
  if [ -n "$redis_pid" ]; then
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  fi
  [ -n "$workdir" ] && rm -rf "$workdir"
  exit "$rc"
}

# Every run starts from an empty database with no cached scripts and zeroed counters.
reset_db() {
  rcli FLUSHALL >/dev/null
  rcli SCRIPT FLUSH >/dev/null
  rcli CONFIG RESETSTAT >/dev/null
}

# Calls Redis executed since reset_db (inside scripts too), less the CONFIG RESETSTAT itself.
redis_calls() {
  echo $(( $(rcli INFO stats | tr -d '\r' | awk -F: '$1 == "total_commands_processed" {print $2}') - 1 ))
}

# Runs a benchmark client in the background and waits, so Ctrl-C and cleanup reach it at once.
# Usage: run_child OUT ERR command...   Returns the command's exit status.
run_child() {
  local out="$1" err="$2" rc=0
  shift 2
  "$@" >"$out" 2>"$err" &
  child_pid=$!
  wait "$child_pid" || rc=$?
  child_pid=""
  return "$rc"
}

# --- one (tool, scenario) run ---------------------------------------------------------------

results=""
emit() { echo "$1" | tee -a "$results"; }

# Extra key=value fields for the lines measure() emits (e.g. fair=true).
line_extra=()

# Runs one client command and emits its JSON line with the tool's name and Redis's own count of
# the calls it executed per cycle (distinct) or per acquisition (hot), those made inside scripts
# included (INFO total_commands_processed): the server work a tool costs, whatever it reports
# itself. A failed run becomes an "available":false line with the reason; the other runs go on.
measure() {
  local tool="$1" scenario="$2" n="$3"
  shift 3
  log "$tool: $scenario, $n client(s), $duration"
  reset_db
  local out="$workdir/out.json" err="$workdir/err.txt"
  if ! run_child "$out" "$err" "${pin_client[@]}" "$@" || ! grep -q '^{' "$out"; then
    local reason
    reason="$(grep -m1 . "$err" || grep -m1 . "$out" || echo "exited without output")"
    emit "$(python3 "$peers_src/report.py" line tool="$tool" scenario="$scenario" clients="$n" \
      "${line_extra[@]}" available=false reason="${reason:0:200}")"
    return 0
  fi
  local calls per_key ops
  calls="$(redis_calls)"
  if [ "$scenario" = hot ]; then per_key=redis_calls_per_acquisition; ops=acquisitions
  else per_key=redis_calls_per_cycle; ops=cycles; fi
  ops="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get(sys.argv[2]) or 0)' \
    "$(grep '^{' "$out" | tail -1)" "$ops")"
  emit "$(python3 "$peers_src/report.py" line --base "$out" tool="$tool" "${line_extra[@]}" redis_calls="$calls" \
    "$per_key=$(python3 -c "print($calls / $ops if $ops else 'null')")")"
}

# run_fencelock SCENARIO CLIENTS [more bench flags, e.g. --fair]
run_fencelock() {
  measure fencelock "$1" "$2" "$fencelock_bin" --redis "redis://127.0.0.1:$port" \
    bench --scenario "$1" --clients "$2" --duration "$duration" "${@:3}"
}

run_peer() {
  measure "$1" "$2" "$3" node "$peers_dir/run.mjs" --lib "$1" --url "redis://127.0.0.1:$port" \
    --scenario "$2" --clients "$3" --duration-ms "$duration_ms" --retry-ms "$retry_ms"
}

# --- the redis-benchmark ceiling ------------------------------------------------------------

# shellcheck source=expanded_script.sh
source "$root/bench/expanded_script.sh"

# The key arguments of a script, from its header ("-- KEYS[1]  lock key  lock:{R}  ..."), with
# the resource replaced by redis-benchmark's random placeholder so every call hits fresh keys.
script_keys() {
  sed -n 's/^-- KEYS\[[0-9]*\].*[[:space:]]\([a-z-]*:{R}\).*/\1/p' "$1" | sed 's/{R}/{__rand_int__}/'
}

# One redis-benchmark run; sets rb_result to "requests rps p50_us p99_us" (a global, not
# printed: a command substitution would run it in a subshell that cleanup cannot reach). The
# request count is calibrated with a short run first, so the measured run lasts about --duration.
rb_result=""
rb_run() {
  local n_clients="$1" pipeline="$2"
  shift 2
  local common=(-h 127.0.0.1 -p "$port" -c "$n_clients" -P "$pipeline" -r 100000000 --csv)
  local probe=$(( 2000 * n_clients * pipeline )) rps requests
  [ "$probe" -gt 200000 ] && probe=200000
  run_child "$workdir/rb.csv" "$workdir/rb.err" "${pin_client[@]}" redis-benchmark "${common[@]}" -n "$probe" "$@" || true
  rps="$(rb_rate)" || return 1
  requests="$(python3 -c "print(max(1000, round($rps * $duration_ms / 1000)))")"
  rcli FLUSHALL >/dev/null
  rcli CONFIG RESETSTAT >/dev/null
  run_child "$workdir/rb.csv" "$workdir/rb.err" "${pin_client[@]}" redis-benchmark "${common[@]}" -n "$requests" "$@" || true
  rb_rate >/dev/null || return 1
  rb_result="$requests $(tail -1 "$workdir/rb.csv" | tr -d '"' | awk -F, '{printf "%s %d %d", $2, $5 * 1000, $7 * 1000}')"
}

# The requests per second of the last redis-benchmark run. It stops at the first error reply
# (a script error, say) and prints no result line then.
rb_rate() {
  local rps
  rps="$(tail -1 "$workdir/rb.csv" | tr -d '"' | awk -F, '$2 + 0 > 0 {print $2}')"
  if [ -z "$rps" ]; then
    log "redis-benchmark printed no result: $(head -c 300 "$workdir/rb.err")"
    return 1
  fi
  echo "$rps"
}

# Calls of one command since the last CONFIG RESETSTAT.
command_calls() {
  rcli INFO commandstats | tr -d '\r' | awk -F'[:=,]' -v c="cmdstat_$1" '$1 == c {print $3; f = 1} END {if (!f) print 0}'
}

# Ceiling: acquire and release measured apart, each by EVALSHA of the project's own script.
# Redis runs scripts one at a time on its single thread, so a cycle costs one acquire plus one
# release: cycles/s = 1 / (1/acquire_per_sec + 1/release_per_sec).
run_ceiling() {
  local n_clients="$1" pipeline="$2"
  log "redis-benchmark: acquire and release scripts, $n_clients client(s), pipeline $pipeline, ~$duration each"
  local acquire_lua="$root/src/coordinator/redis/scripts/acquire.lua" release_lua="$root/src/coordinator/redis/scripts/release.lua"
  local -a acquire_keys release_keys
  mapfile -t acquire_keys < <(script_keys "$acquire_lua")
  mapfile -t release_keys < <(script_keys "$release_lua")
  reset_db
  local acquire_sha release_sha
  acquire_sha="$(rcli SCRIPT LOAD "$(expanded_script "$acquire_lua")")"
  release_sha="$(rcli SCRIPT LOAD "$(expanded_script "$release_lua")")"
  # ARGV as fencelock's try_acquire sends them: owner, lease ms (60 s: nothing expires mid-run),
  # max hold ms, holder ('<pid> <host> <label>'), no place in a line, line slot ms.
  local acquire_cmd=(EVALSHA "$acquire_sha" "${#acquire_keys[@]}" "${acquire_keys[@]}"
                     bench-owner 60000 3600000 "1 redis-benchmark compare" 0 1000)
  # ARGV: owner, release channel (read by release scripts that notify waiters).
  local release_cmd=(EVALSHA "$release_sha" "${#release_keys[@]}" "${release_keys[@]}"
                     bench-owner "released:{__rand_int__}")
  local acq rel evalsha grants deletes
  if ! rb_run "$n_clients" "$pipeline" "${acquire_cmd[@]}"; then
    emit "$(python3 "$peers_src/report.py" line tool=redis-benchmark scenario=distinct clients="$n_clients" \
      pipeline="$pipeline" available=false reason="acquire script failed under redis-benchmark")"
    return 0
  fi
  acq="$rb_result"
  local acquire_calls release_calls
  acquire_calls="$(redis_calls)"
  evalsha="$(command_calls evalsha)"; grants="$(command_calls set)"  # a grant writes the fence once
  local acquire_grant_ratio
  acquire_grant_ratio="$(python3 -c "print($grants / $evalsha if $evalsha else 'null')")"
  rcli FLUSHALL >/dev/null
  if ! rb_run "$n_clients" "$pipeline" "${release_cmd[@]}"; then
    emit "$(python3 "$peers_src/report.py" line tool=redis-benchmark scenario=distinct clients="$n_clients" \
      pipeline="$pipeline" available=false reason="release script failed under redis-benchmark")"
    return 0
  fi
  rel="$rb_result"
  release_calls="$(redis_calls)"
  evalsha="$(command_calls evalsha)"; deletes="$(command_calls del)"
  local a_n a_rps a_p50 a_p99 r_n r_rps r_p50 r_p99
  read -r a_n a_rps a_p50 a_p99 <<<"$acq"
  read -r r_n r_rps r_p50 r_p99 <<<"$rel"
  emit "$(python3 "$peers_src/report.py" line tool=redis-benchmark scenario=distinct \
    clients="$n_clients" pipeline="$pipeline" \
    duration_s="$(python3 -c "print($a_n / $a_rps + $r_n / $r_rps)")" \
    cycles_per_sec="$(python3 -c "print(1 / (1 / $a_rps + 1 / $r_rps))")" \
    p50_us=$(( a_p50 + r_p50 )) p99_us=$(( a_p99 + r_p99 )) \
    acquire_per_sec="$a_rps" release_per_sec="$r_rps" acquire_requests="$a_n" release_requests="$r_n" \
    acquire_p50_us="$a_p50" acquire_p99_us="$a_p99" release_p50_us="$r_p50" release_p99_us="$r_p99" \
    acquire_grant_ratio="$acquire_grant_ratio" \
    release_hit_ratio="$(python3 -c "print($deletes / $evalsha if $evalsha else 'null')")" \
    redis_calls_per_cycle="$(python3 -c "print($acquire_calls / $a_n + $release_calls / $r_n)")" \
    connections="$n_clients" \
    formula="cycles_per_sec = 1/(1/acquire_per_sec + 1/release_per_sec); p50/p99 = acquire + release")"
}

# --- the whole run --------------------------------------------------------------------------

# The run's record: COMMAND, the machine and versions it ran on, the raw JSON lines, TABLE.
run_record() {
  local command="$1" table="$2"
  echo "Command: \`$command\`"
  echo
  echo "- machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')), $(uname -sr)"
  echo "- load average (1, 5, 15 min) before the run: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- pinning: redis-server \`${pin_server[*]:-none}\`, clients \`${pin_client[*]:-none}\`"
  echo "- redis-server $(redis-server --version | grep -o 'v=[^ ]*' | cut -c3-), node $(node --version)"
  echo "- fencelock: $fencelock_bin, built $(date -u -r "$fencelock_bin" '+%F %H:%M UTC'); repository at $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo ' with uncommitted changes')"
  echo "- npm peers: $(cd "$peers_dir" && npm ls --depth=0 2>/dev/null | tail -n +2 | sed 's/^[^a-z@]*//' | grep . | paste -sd, - | sed 's/,/, /g')"
  echo
  echo '```'
  cat "$results"
  echo '```'
  echo
  echo "$table"
}

save_results() {
  local table="$1" out date
  date="$(date +%F)"
  out="$root/bench/results/$date-compare.md"
  [ -e "$out" ] && out="$root/bench/results/$date-$(date +%H%M%S)-compare.md"
  mkdir -p "$root/bench/results"
  {
    echo "# Side-by-side lock benchmark, $(date -u '+%F %H:%M UTC')"
    echo
    run_record "bench/compare.sh --duration $duration --clients $clients --retry-ms $retry_ms --save" "$table"
  } >"$out"
  log "saved $out"
}

load_before=""
# Everything a run needs before its first measurement; NAME names its scratch folder. Call
# after parsing the arguments (load_before is read first, before anything is installed).
prepare_run() {
  ensure_packages
  ensure_fencelock
  ensure_peers
  choose_cpus
  workdir="$(mktemp -d "${TMPDIR:-/tmp}/fencelock-$1.XXXXXX")"
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  results="$workdir/results.jsonl"
  : >"$results"
  start_redis
}

main() {
  load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
  parse_args "$@"
  prepare_run compare

  local peers=(node-redlock sesame-redlock redis-semaphore) peer n
  for n in 1 "$clients"; do
    run_fencelock distinct "$n"
    # The async API: one thread issues every locker's operations (its own event loop).
    [ "$n" -gt 1 ] && run_fencelock distinct "$n" --async
    for peer in "${peers[@]}"; do run_peer "$peer" distinct "$n"; done
    run_ceiling "$n" 1
  done
  run_ceiling "$clients" 16
  run_fencelock hot "$clients"
  run_fencelock hot "$clients" --async
  line_extra=(fair=true)
  run_fencelock hot "$clients" --fair
  run_fencelock hot "$clients" --fair --async
  line_extra=(keep=true)
  run_fencelock hot "$clients" --keep
  line_extra=(fair=true keep=true)
  run_fencelock hot "$clients" --fair --keep
  line_extra=()
  for peer in "${peers[@]}"; do run_peer "$peer" hot "$clients"; done

  local table
  table="$(python3 "$peers_src/report.py" table "$results")"
  echo
  echo "$table"
  [ "$save" -eq 1 ] && save_results "$table"
  return 0
}

# Sourced (bench/hot_sweep.sh uses its helpers), it defines the functions and runs nothing.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then main "$@"; fi

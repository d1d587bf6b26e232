#!/usr/bin/env bash
# Hot-spot load test (issue 16, point 5): many contenders on ONE resource, swept from 1 to 256,
# fencelock in one process (a thread per contender, then the async API driving all from one
# thread) and spread over several processes, beside node-redlock, all
# against one private redis-server in the same run.
#
# Usage: bench/hot_sweep.sh [--duration 5s] [--contenders "1 4 16 64 256"] [--processes 4]
#                           [--retry-ms 10] [--save]
#
#   --duration D      measurement time of every run (default 5s)
#   --contenders L    the contender counts of the sweep (default "1 4 16 64 256")
#   --processes P     processes the "processes" runs spread each count over (default 4; a count
#                     below P uses one process per contender)
#   --retry-ms MS     node-redlock's retry delay (default 10)
#   --save            also write the table, the raw JSON lines and the plot to bench/results/
#
# Every run reports handoffs/s, wait p50/p99, failed attempts per success, fairness
# (max/min acquisitions per contender), the most Redis connections seen during the run
# (INFO clients, sampled every 200 ms, less the sampler's own) and Redis commands/s
# (total_commands_processed, calls inside scripts included).
# stdout: one JSON line per run, then a markdown table; with --save also an SVG plot.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=compare.sh
source "$here/compare.sh"

contenders="1 4 16 64 256"
processes=4

sweep_usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

parse_sweep_args() {
  local pass=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --contenders) contenders="${2:?--contenders needs a value}"; shift 2 ;;
      --processes) processes="${2:?--processes needs a value}"; shift 2 ;;
      -h|--help) sweep_usage; exit 0 ;;
      *) pass+=("$1"); shift ;;
    esac
  done
  parse_args "${pass[@]}"
  [[ "$processes" =~ ^[0-9]+$ && "$processes" -ge 2 ]] || die "--processes must be a number >= 2"
  local n
  for n in $contenders; do
    [[ "$n" =~ ^[0-9]+$ && "$n" -ge 1 && "$n" -le 1024 ]] || die "--contenders: '$n' is not a number from 1 to 1024"
  done
}

# Most connections the server had while `pid` ran, less the sampler's own; counts its INFO
# calls so the run's command count can leave them out.
peak_connections=0
samples=0
sample_connections() {
  local pid="$1" now
  peak_connections=0
  samples=0
  while kill -0 "$pid" 2>/dev/null; do
    now="$(rcli INFO clients 2>/dev/null | tr -d '\r' | awk -F: '$1 == "connected_clients" {print $2}')"
    samples=$((samples + 1))
    [ -n "$now" ] && [ "$((now - 1))" -gt "$peak_connections" ] && peak_connections=$((now - 1))
    sleep 0.2
  done
}

# sweep_run LABEL N command...: one run on a flushed database; emits its JSON line.
sweep_run() {
  local label="$1" n="$2"
  shift 2
  log "$label: $n contender(s), $duration"
  reset_db
  local out="$workdir/out.json" err="$workdir/err.txt" rc=0 started ended
  started="$(date +%s.%N)"
  "${pin_client[@]}" "$@" >"$out" 2>"$err" &
  child_pid=$!
  sample_connections "$child_pid"
  wait "$child_pid" || rc=$?
  child_pid=""
  ended="$(date +%s.%N)"
  if [ "$rc" -ne 0 ] || ! grep -q '^{' "$out"; then
    emit "$(python3 "$peers_src/report.py" line tool="$label" scenario=hot clients="$n" available=false \
      reason="$(grep -m1 . "$err" | cut -c1-200 || echo "exit $rc")")"
    return 0
  fi
  local calls
  calls="$(( $(redis_calls) - samples ))"
  emit "$(python3 "$peers_src/report.py" line --base "$out" tool="$label" clients="$n" \
    peak_connections="$peak_connections" redis_calls="$calls" \
    redis_commands_per_sec="$(python3 -c "print(round($calls / ($ended - $started)))")")"
}

sweep_main() {
  load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
  parse_sweep_args "$@"
  prepare_run sweep

  local n p url="redis://127.0.0.1:$port"
  for n in $contenders; do
    sweep_run fencelock-threads "$n" "$fencelock_bin" --redis "$url" bench --scenario hot \
      --clients "$n" --duration "$duration"
    # The async API: one thread drives every contender on the client's event loop.
    sweep_run fencelock-async "$n" "$fencelock_bin" --redis "$url" bench --scenario hot \
      --clients "$n" --async --duration "$duration"
    p=$(( n < processes ? n : processes ))
    if [ "$p" -ge 2 ]; then
      sweep_run fencelock-processes "$n" "$fencelock_bin" --redis "$url" bench --scenario hot \
        --clients "$n" --processes "$p" --duration "$duration"
    fi
    sweep_run node-redlock "$n" node "$peers_dir/run.mjs" --lib node-redlock --url "$url" \
      --scenario hot --clients "$n" --duration-ms "$duration_ms" --retry-ms "$retry_ms"
  done

  local table
  table="$(python3 "$here/sweep_report.py" table "$results")"
  echo
  echo "$table"
  if [ "$save" -eq 1 ]; then
    local stem
    stem="$root/bench/results/$(date +%F-%H%M)-hot-sweep"
    mkdir -p "$root/bench/results"
    python3 "$here/sweep_report.py" svg "$results" >"$stem.svg"
    {
      echo "# Hot-spot sweep, $(date -u '+%F %H:%M UTC'); plot: [$(basename "$stem").svg]($(basename "$stem").svg)"
      echo
      run_record "bench/hot_sweep.sh --duration $duration --contenders \"$contenders\" --processes $processes --save" "$table"
    } >"$stem.md"
    log "saved $stem.md and $stem.svg"
  fi
}

sweep_main "$@"

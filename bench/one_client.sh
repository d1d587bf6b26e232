#!/usr/bin/env bash
# One client, the real scripts: wall time, client CPU and Redis CPU per acquire + release cycle,
# fencelock's bench beside redis-benchmark running the same two scripts one request at a time
# (what compare.sh's "1 client" p50 ratio compares). perf stat gives the client's CPU and context
# switches, /proc/PID/stat Redis's (user + system). Three rounds.
#
# Usage: bench/one_client.sh [PORT]   (a free loopback port for the private redis-server; 6483)
# Needs: a built build/tools/fencelock/fencelock, redis-server, redis-benchmark, perf, python3.
set -u
cd "$(dirname "$0")/.."
B=build/tools/fencelock/fencelock
port="${1:-6483}"
taskset -c 1 redis-server --port $port --save '' --appendonly no --daemonize yes >/dev/null
until redis-cli -p $port PING >/dev/null 2>&1; do sleep 0.05; done  # up once it answers
P=$(pgrep -f "redis-server \*:$port")
source bench/expanded_script.sh
ACQ=$(redis-cli -p $port script load "$(expanded_script src/coordinator/redis/scripts/acquire.lua)")
REL=$(redis-cli -p $port script load "$(expanded_script src/coordinator/redis/scripts/release.lua)")
rcpu() { awk '{print $14+$15}' /proc/$P/stat; }
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in 1 2 3; do
  r0=$(rcpu); s0=$(date +%s.%N)
  perf stat -x, -e task-clock,context-switches -o /tmp/ps1 taskset -c 0 $B --redis redis://127.0.0.1:$port bench --scenario distinct --clients 1 --duration 4s > /tmp/fl.json
  s1=$(date +%s.%N); r1=$(rcpu)
  python3 - "$r0" "$r1" <<'PY'
import json,sys
d=json.load(open('/tmp/fl.json')); st={l.split(',')[2]:float(l.split(',')[0]) for l in open('/tmp/ps1') if l.count(',')>3}
n=d['cycles']; rc=(float(sys.argv[2])-float(sys.argv[1]))*10000/n
print(f"fencelock       cycles {n} wall/cycle {d['duration_s']*1e6/n:.1f} us  p50 {d['p50_us']}  client CPU/cycle {st['task-clock']*1000/n:.1f} us  Redis CPU/cycle {rc:.1f} us  ctx/cycle {st['context-switches']/n:.2f}")
PY
  redis-cli -p $port flushall >/dev/null
  for s in acq rel; do
    if [ $s = acq ]; then args=(EVALSHA $ACQ 6 "lock:{__rand_int__}" "fence:{__rand_int__}" "waiters:{__rand_int__}" "waiter-deadlines:{__rand_int__}" "sleepers:{__rand_int__}" "handoff:{__rand_int__}" bench-owner 60000 3600000 "1 redis-benchmark oneclient" 0 1000)
    else args=(EVALSHA $REL 6 "lock:{__rand_int__}" "waiters:{__rand_int__}" "waiter-deadlines:{__rand_int__}" "sleepers:{__rand_int__}" "fence:{__rand_int__}" "handoff:{__rand_int__}" bench-owner "released:{__rand_int__}"); fi
    r0=$(rcpu)
    perf stat -x, -e task-clock,context-switches -o /tmp/ps2 taskset -c 0 redis-benchmark -p $port -c 1 -n 20000 -r 100000000 --csv "${args[@]}" > /tmp/rb.csv
    r1=$(rcpu)
    python3 - "$r0" "$r1" "$s" <<'PY'
import csv,sys
st={l.split(',')[2]:float(l.split(',')[0]) for l in open('/tmp/ps2') if l.count(',')>3}
r=list(csv.reader(open('/tmp/rb.csv')))[-1]; n=20000
print(f"redis-benchmark {sys.argv[3]} rps {float(r[1]):.0f} wall/req {1e6/float(r[1]):.1f} us p50 {float(r[4])*1000:.0f} us  client CPU/req {st['task-clock']*1000/n:.1f} us  Redis CPU/req {(float(sys.argv[2])-float(sys.argv[1]))*10000/n:.1f} us  ctx/req {st['context-switches']/n:.2f}")
PY
  done
  redis-cli -p $port flushall >/dev/null
done
redis-cli -p $port shutdown nosave

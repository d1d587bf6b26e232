#!/usr/bin/env bash
# The quick-start demo: builds fencelock, starts a private redis-server on a free port and walks
# through the failure a plain lock cannot handle: worker A's lease expires while A is paused,
# worker B takes over with a higher fencing token, and A's late renew and release leave B's
# lock intact. Safe to re-run; the server is stopped and removed on exit.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
build="$root/build"
cmake -S "$root" -B "$build" >/dev/null
cmake --build "$build" -j2 --target fencelock >/dev/null
fencelock="$build/tools/fencelock/fencelock"

dir="$(mktemp -d /tmp/fencelock-demo-XXXXXX)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
for _ in $(seq 1 20); do
  port=$((20000 + RANDOM % 20000))
  if redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
       --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" \
     && redis-cli -p "$port" --no-auth-warning -e PING >/dev/null 2>&1; then
    pid="$(cat "$dir/redis.pid")"
    break
  fi
done
[ -n "$pid" ] || { echo "demo: could not start redis-server" >&2; exit 1; }
export FENCELOCK_REDIS_URL="redis://127.0.0.1:$port"

field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p"; }
step() {
  echo
  echo "\$ fencelock $*"
  set +e
  out="$("$fencelock" "$@")"
  code=$?
  set -e
  echo "$out   (exit $code)"
}

echo "redis-server on port $port (private, deleted on exit)"
echo "== 1. Worker A takes the lease on order:42 for 1s"
step acquire order:42 --lease 1s
a_owner="$(echo "$out" | field owner)"; a_fence="$(echo "$out" | field fence)"

echo "== 2. Worker B tries while A holds it: contended (exit 3)"
step acquire order:42 --lease 30s

echo "== 3. A pauses (GC, CPU starvation...) and its lease expires in Redis"
until "$fencelock" inspect order:42 | grep -q '"held":false'; do sleep 0.1; done
step inspect order:42

echo "== 4. B acquires: a new owner token and a HIGHER fencing token"
step acquire order:42 --lease 30s
b_fence="$(echo "$out" | field fence)"

echo "== 5. A wakes up: its renew and its late release answer not_owner and touch nothing"
step renew order:42 --owner "$a_owner" --lease 30s
step release order:42 --owner "$a_owner"

echo "== 6. B still holds the lock; storage that checks fences would reject A's write"
step inspect order:42
echo
echo "A's fence: $a_fence   B's fence: $b_fence   -> a write fenced with $a_fence is stale once $b_fence was used"

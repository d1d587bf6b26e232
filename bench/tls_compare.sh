#!/usr/bin/env bash
# TLS beside plaintext on the same redis-server (one plaintext port, one TLS port), in one run:
# 16 distinct lockers and 16 contenders on one hot resource (fencelock bench), and a connection
# storm: 100 `fencelock acquire` processes started at once, each opening a fresh connection
# (TLS handshake included), with the wall time until all have exited holding their lock.
# Certificates are made with openssl into a temporary directory. Rounds alternate the modes.
#
# Usage: bench/tls_compare.sh [PORT] [ROUNDS]   (PORT and PORT+1 free on loopback; 6490, 2)
# Needs: a built build/tools/fencelock/fencelock, redis-server, redis-cli, openssl.
set -eu
cd "$(dirname "$0")/.."
B=$PWD/build/tools/fencelock/fencelock
port="${1:-6490}"; tls_port=$((port + 1)); rounds="${2:-2}"
dir=$(mktemp -d)
trap 'redis-cli -p $port shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=bench-ca \
  -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=127.0.0.1 \
  -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$dir/server.key" -out "$dir/server.crt" 2>/dev/null
redis-server --port $port --tls-port $tls_port --tls-cert-file "$dir/server.crt" --tls-key-file "$dir/server.key" \
  --tls-ca-cert-file "$dir/ca.crt" --tls-auth-clients no --save '' --appendonly no --daemonize yes \
  --dir "$dir" >/dev/null
until redis-cli -p $port PING >/dev/null 2>&1; do sleep 0.05; done  # up once it answers
plain="redis://127.0.0.1:$port"
tls="rediss://127.0.0.1:$tls_port?tls_ca=$dir/ca.crt"
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$rounds"); do
  for mode in plain tls; do
    url=$plain; [ $mode = tls ] && url=$tls
    for scenario in distinct hot; do
      echo "round $round $mode $scenario $($B --redis "$url" bench --scenario $scenario --clients 16 --duration 5s)"
    done
    start=$(date +%s%N)
    for i in $(seq 1 100); do $B --redis "$url" acquire "storm:$mode:$round:$i" --lease 60s >/dev/null & done
    wait
    end=$(date +%s%N)
    held=$(redis-cli -p $port --scan --pattern "lock:{storm:$mode:$round:*" | wc -l)
    echo "round $round $mode storm: 100 processes, $held locks held, $(((end - start) / 1000000)) ms"
  done
done

#!/usr/bin/env bash
# Installs the Debian packages one task needs, and only those that are missing: safe to re-run,
# and quick when everything is there already.
#
#   scripts/install-deps.sh [TASK...]            default: build
#   scripts/install-deps.sh --packages PKG...    these packages (scripts/check-model.sh: spin gcc)
#
# Tasks, each with what it adds:
#   build  compile the library and the CLI: the compiler, CMake, and the -dev packages the
#          build links (hiredis, OpenSSL, libpq, SQLite, prometheus-cpp, fmt, JSON, CLI11, and
#          gRPC with protobuf's compilers for the etcd coordinator)
#   demo   build, plus redis-server and redis-cli: `fencelock demo` starts its own server (and
#          for --failover its own sentinels, redis-server --sentinel), and etcd with etcdctl
#          (`demo --coordinator etcd`, and the etcd suites)
#   test   demo, plus what the test suite starts or calls: PostgreSQL, GoogleTest, openssl (the
#          TLS tests make their certificates), dpkg-dev (the .deb packages' test), Chromium and
#          libpng (the one test that screenshots the demo's timeline), jq (the README's and
#          STORE.md's examples read fields with it, and run under test)
#   bench  demo, plus Google Benchmark (bench/store, bench/queue) and redis-benchmark (redis-tools);
#          bench/compare.sh installs Node.js and the npm peers it compares with itself
#   lint   build (scripts/lint.sh configures a build directory for its compile commands), plus
#          clang-format (14) and clang-tidy-16 (clang-tidy 14 cannot parse libstdc++'s <expected>)
#
# Needs root (or sudo) only when something is missing; README, "Installing the library", says how
# to do without.
set -euo pipefail

build=(build-essential cmake pkg-config libhiredis-dev libssl-dev libpq-dev libsqlite3-dev
       prometheus-cpp-dev libfmt-dev nlohmann-json3-dev libcli11-dev
       libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc)
servers=(redis-server redis-tools etcd-server etcd-client)
test_only=(postgresql libgtest-dev openssl dpkg-dev chromium libpng-dev jq)
bench_only=(libbenchmark-dev)
lint_only=(clang-format clang-tidy-16)

packages=()
if [ "${1:-}" = "--packages" ]; then
  shift
  packages=("$@")
else
  [ $# -eq 0 ] && set -- build
  for task in "$@"; do
    case "$task" in
      build) packages+=("${build[@]}") ;;
      demo)  packages+=("${build[@]}" "${servers[@]}") ;;
      test)  packages+=("${build[@]}" "${servers[@]}" "${test_only[@]}") ;;
      bench) packages+=("${build[@]}" "${servers[@]}" "${bench_only[@]}") ;;
      lint)  packages+=("${build[@]}" "${lint_only[@]}") ;;
      *) echo "install-deps.sh: unknown task '$task' (build, demo, test, bench, lint; or --packages PKG...)" >&2; exit 2 ;;
    esac
  done
fi

missing=()
for p in "${packages[@]}"; do
  [[ " ${missing[*]} " == *" $p "* ]] && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "fencelock: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "fencelock: run as root or install sudo" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Package installs may start the system services; the tests start their own on free ports.

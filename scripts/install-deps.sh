#!/usr/bin/env bash
# Installs the Debian packages fencelock needs to build, test and run its demo, and only those
# that are missing: safe to re-run, and quick when everything is there already.
# With arguments, installs only those packages (scripts/check-model.sh: spin gcc).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  redis-server redis-tools postgresql
  libhiredis-dev libpq-dev libpqxx-dev libsqlite3-dev
  prometheus-cpp-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev libssl-dev openssl  # openssl: the TLS tests make their certificates
  dpkg-dev  # cpack's .deb packages: dpkg-shlibdeps derives their Depends
  chromium libpng-dev  # the demo timeline's screenshot test
)
[ $# -gt 0 ] && packages=("$@")

missing=()
for p in "${packages[@]}"; do
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

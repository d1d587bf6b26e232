#!/usr/bin/env bash
# The etcd_proto_compat test: fencelock's etcd proto subset against etcd's shipped .proto files.
#   run.sh PROTOC CHECKER SUBSET_DIR CACHE_DIR OUT_DIR
# Fetches etcd's files into CACHE_DIR (scripts/fetch-etcd-protos.sh: downloads once, then reuses),
# compiles every *.proto of SUBSET_DIR and etcd's rpc.proto (with kv.proto and auth.proto, which it
# imports) into descriptor sets in OUT_DIR, and runs CHECKER on the two. Exits with the first
# failing step's code: the fetch script's (1: no package), protoc's, or the checker's (1: mismatch).
set -euo pipefail
if [[ $# -ne 5 ]]; then
    echo "usage: $0 PROTOC CHECKER SUBSET_DIR CACHE_DIR OUT_DIR" >&2
    exit 2
fi
protoc="$1" checker="$2" subset_dir="$3" cache_dir="$4" out_dir="$5"
root="$(cd "$(dirname "$0")/../../.." && pwd)"

"$root/scripts/fetch-etcd-protos.sh" "$cache_dir"
mkdir -p "$out_dir"
subset_files=()
for f in "$subset_dir"/*.proto; do subset_files+=("$(basename "$f")"); done
"$protoc" -I "$subset_dir" --include_imports --descriptor_set_out="$out_dir/subset.pb" "${subset_files[@]}"
"$protoc" -I "$cache_dir/stripped" --include_imports --descriptor_set_out="$out_dir/etcd.pb" \
    "$cache_dir/stripped/etcd/etcdserver/etcdserverpb/rpc.proto"
echo "subset: ${subset_files[*]} ($subset_dir); etcd: golang-etcd-server-dev $(cat "$cache_dir/VERSION")"
"$checker" "$out_dir/subset.pb" "$out_dir/etcd.pb"

#!/usr/bin/env bash
# Fetches etcd 3.4's own .proto files, as Debian ships them, for the wire-compatibility check of
# fencelock's subset (tests/etcd/proto_compat). Usage: scripts/fetch-etcd-protos.sh DIR
#
# The files come from the package golang-etcd-server-dev, which is downloaded (apt-get download)
# and unpacked here, never installed: installing it pulls about 150 Go packages. Only three files
# are taken from it, under their import paths (rpc.proto imports "etcd/mvcc/mvccpb/kv.proto"):
#   DIR/shipped/etcd/{etcdserver/etcdserverpb/rpc.proto, mvcc/mvccpb/kv.proto, auth/authpb/auth.proto}
#                     the files as shipped, byte for byte
#   DIR/stripped/...  the same files ready for protoc (-I DIR/stripped): without the gogoproto and
#                     google/api imports, which are not on this machine, and without the options
#                     they define (Go code generation and the HTTP gateway; neither is on the wire)
#   DIR/VERSION       the package version the files came from
# Idempotent: when DIR/shipped holds the three files, nothing is downloaded; the stripped copies are
# rewritten every time (cheap), so a change to the stripping below takes effect.
# Exit codes: 0 done, 1 the package could not be downloaded or lacks a file, 2 usage.
set -euo pipefail

package=golang-etcd-server-dev
files=(etcd/etcdserver/etcdserverpb/rpc.proto etcd/mvcc/mvccpb/kv.proto etcd/auth/authpb/auth.proto)
# Where the package puts go.etcd.io's sources.
package_root=usr/share/gocode/src/go.etcd.io

if [[ $# -ne 1 || -z "$1" ]]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
dir="$1"

have_all() {
    local f
    for f in "${files[@]}"; do [[ -s "$dir/shipped/$f" ]] || return 1; done
}

download() {
    local deb version f
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    # apt-get download, run as root, drops to the user _apt, which must be able to write here
    # (otherwise it downloads anyway, "unsandboxed", with a warning).
    if [[ "$(id -u)" == 0 ]] && id _apt >/dev/null 2>&1; then chown _apt "$tmp"; fi
    if ! (cd "$tmp" && apt-get download -q "$package" >"$tmp/apt.log" 2>&1); then
        cat "$tmp/apt.log" >&2
        echo "error: 'apt-get download $package' failed: etcd's .proto files come from that Debian" \
             "package (bookworm: 3.4.23-4); run 'apt-get update' or check the apt sources" >&2
        exit 1
    fi
    deb="$(ls "$tmp"/"$package"_*.deb)"
    version="$(dpkg-deb -f "$deb" Version)"
    mkdir -p "$tmp/x"
    local members=()
    for f in "${files[@]}"; do members+=("./$package_root/$f"); done
    if ! dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/x" "${members[@]}"; then
        echo "error: $package $version does not hold ${files[*]} under /$package_root" >&2
        exit 1
    fi
    for f in "${files[@]}"; do
        mkdir -p "$(dirname "$dir/shipped/$f")"
        cp "$tmp/x/$package_root/$f" "$dir/shipped/$f"
    done
    echo "$version" >"$dir/VERSION"
    echo "fetched ${#files[@]} .proto files from $package $version into $dir/shipped"
}

# Removes what protoc cannot resolve here: the imports of gogoproto/gogo.proto and
# google/api/annotations.proto, file options "option (gogoproto.x) = ...;", field options
# "[(gogoproto.x) = ...]" and the rpc options "option (google.api.http) = { ... };".
strip_annotations() {
    perl -0pe '
        s{^[ \t]*import\s+"(?:gogoproto/gogo|google/api/annotations)\.proto";[^\n]*\n}{}mg;
        s{^[ \t]*option\s+\(gogoproto\.[^;]*;[^\n]*\n}{}mg;
        s{^[ \t]*option\s+\(google\.api\.http\)\s*=\s*\{.*?\}\s*;[^\n]*\n}{}msg;
        s{\s*\[\s*\(gogoproto\.[^\]]*\]}{}g;
    ' "$1"
}

mkdir -p "$dir"
if have_all; then
    echo "etcd .proto files already in $dir/shipped ($(cat "$dir/VERSION" 2>/dev/null || echo "version unknown")), not downloading"
else
    download
fi
for f in "${files[@]}"; do
    mkdir -p "$(dirname "$dir/stripped/$f")"
    strip_annotations "$dir/shipped/$f" >"$dir/stripped/$f.tmp"
    mv "$dir/stripped/$f.tmp" "$dir/stripped/$f"
    if grep -n -E 'gogoproto|google\.api' "$dir/stripped/$f" >&2; then
        echo "error: $dir/stripped/$f still names gogoproto or google.api (lines above): the" \
             "stripping in $0 does not know this form" >&2
        exit 1
    fi
done

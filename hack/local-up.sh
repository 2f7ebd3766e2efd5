#!/usr/bin/env bash
# Builds kapi and runs it on this machine: the embedded store under ./kapi-data by default,
# a kubeconfig at ./kapi-data/admin.kubeconfig. Extra arguments go to kapi-apiserver, e.g.
#   hack/local-up.sh --etcd-servers http://127.0.0.1:2379
set -euo pipefail
cd "$(dirname "$0")/.."

# etcd-client's build needs protoc; jemalloc's (the binary's allocator) make and a C compiler.
missing=()
command -v protoc >/dev/null 2>&1 || missing+=(protobuf-compiler)
command -v make >/dev/null 2>&1 || missing+=(make)
command -v cc >/dev/null 2>&1 || missing+=(gcc)
if [ "${#missing[@]}" -gt 0 ]; then
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq && $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi
cargo build --release --locked -p kapi-apiserver
exec "${CARGO_TARGET_DIR:-target}/release/kapi-apiserver" "$@"

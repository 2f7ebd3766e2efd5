#!/usr/bin/env bash
# Installs what kapi's storage tests and the etcd backend need, if missing:
#   etcd   (Debian's etcd-server) — the storage tests start real etcd processes
#   protoc (protobuf-compiler)    — building the etcd client (feature `etcd`)
#   make, cc (make, gcc)          — building jemalloc, the server binary's allocator
# Idempotent and quiet when all are already there.
set -euo pipefail

missing=()
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
command -v protoc >/dev/null 2>&1 || missing+=(protobuf-compiler)
command -v make >/dev/null 2>&1 || missing+=(make)
command -v cc >/dev/null 2>&1 || missing+=(gcc)
if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    sudo=()
elif command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
else
    echo "install-etcd: need root or sudo to install: ${missing[*]}" >&2
    exit 1
fi

echo "install-etcd: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null

# Debian's package starts a system etcd on :2379; the tests use their own on free ports, so
# that one is left alone (and it does not matter whether it runs).
command -v etcd >/dev/null && command -v protoc >/dev/null && command -v make >/dev/null
etcd --version | head -1

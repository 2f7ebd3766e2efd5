#!/usr/bin/env bash
# hack/envtest-assets.sh DIR: lays out a KUBEBUILDER_ASSETS directory for controller-runtime's
# envtest with kapi as `kube-apiserver`, beside `etcd` and `kubectl` (links to the ones on PATH).
# Go test suites then start kapi instead of kube-apiserver with no code change:
#
#   hack/envtest-assets.sh /tmp/kapi-envtest && export KUBEBUILDER_ASSETS=/tmp/kapi-envtest
#
# `kube-apiserver` is a wrapper around the kapi binary beside it (`kapi-apiserver`) that gives
# envtest's semantics: no controllers run (envtest's kube-apiserver has no controller manager,
# and suites are written for that), unless KAPI_ENVTEST_CONTROLLERS names some when the tests
# run (`*` for all of kapi's: namespace deletion that finishes, garbage collection, ...; the
# names of `--controllers`). Everything kapi logs, and why it refused to start, is appended to
# KAPI_LOG, by default DIR/kube-apiserver.log (envtest discards the server's output unless
# KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT=true).
#
# The kapi binary is KAPI_BIN when given, else the debug build (built here; set
# KAPI_RELEASE=1 for the release build). DIR is created if needed; existing entries are replaced.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
DIR=$1

if [ -z "${KAPI_BIN:-}" ]; then
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/kapi-target}"
  if [ -n "${KAPI_RELEASE:-}" ]; then
    (cd "$ROOT" && cargo build -q --release -p kapi-apiserver)
    KAPI_BIN="$CARGO_TARGET_DIR/release/kapi-apiserver"
  else
    (cd "$ROOT" && cargo build -q -p kapi-apiserver)
    KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver"
  fi
fi
[ -x "$KAPI_BIN" ] || { echo "$0: $KAPI_BIN is not an executable" >&2; exit 1; }

# which NAME: the NAME on PATH, or nothing.
which_bin() { command -v "$1" 2>/dev/null || true; }
ETCD=$(which_bin etcd)
KUBECTL=$(which_bin kubectl)
[ -n "$ETCD" ] || { echo "$0: etcd not found on PATH (hack/install-etcd.sh installs it)" >&2; exit 1; }
[ -n "$KUBECTL" ] || { echo "$0: kubectl not found on PATH" >&2; exit 1; }

mkdir -p "$DIR"
# A copy, not a link: the assets keep working while the build directory changes.
install -m 0755 "$KAPI_BIN" "$DIR/kapi-apiserver.tmp" && mv -f "$DIR/kapi-apiserver.tmp" "$DIR/kapi-apiserver"
# exec keeps the process envtest started, so its SIGTERM reaches kapi itself.
cat >"$DIR/kube-apiserver.tmp" <<'WRAPPER'
#!/bin/sh
# kapi as envtest's kube-apiserver (written by kapi's hack/envtest-assets.sh): no controllers
# unless KAPI_ENVTEST_CONTROLLERS names some ('*': all); logs appended to KAPI_LOG (default:
# kube-apiserver.log beside this file).
here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
KAPI_LOG=${KAPI_LOG:-$here/kube-apiserver.log}
export KAPI_LOG
exec "$here/kapi-apiserver" --controllers="${KAPI_ENVTEST_CONTROLLERS:--*}" "$@"
WRAPPER
chmod 0755 "$DIR/kube-apiserver.tmp" && mv -f "$DIR/kube-apiserver.tmp" "$DIR/kube-apiserver"
ln -sfn "$(readlink -f "$ETCD")" "$DIR/etcd"
ln -sfn "$(readlink -f "$KUBECTL")" "$DIR/kubectl"
echo "KUBEBUILDER_ASSETS=$(cd "$DIR" && pwd): kube-apiserver (kapi $("$DIR/kapi-apiserver" --version | awk '{print $2}'); no controllers unless KAPI_ENVTEST_CONTROLLERS is set), etcd, kubectl"

#!/usr/bin/env bash
# End-to-end suite: starts a real etcd and kapi (once on etcd, once on the embedded store) on free
# loopback ports and drives them with real kubectl — the one the installed dispatcher picks for
# the server's minor (asked once per server) and kubectl 1.32. Prints PASS/FAIL per case
# and a final "N passed, M failed"; stops everything it started.
#
#   KAPI_BIN=path/to/kapi-apiserver e2e/run.sh        (default: builds the debug binary)
#   E2E_BACKENDS="embedded" e2e/run.sh                (only one backend)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=e2e/lib.sh
. "$ROOT/e2e/lib.sh"
# shellcheck source=e2e/cases.sh
. "$ROOT/e2e/cases.sh"
# shellcheck source=e2e/patch.sh
. "$ROOT/e2e/patch.sh"
# shellcheck source=e2e/groups.sh
. "$ROOT/e2e/groups.sh"
# shellcheck source=e2e/protobuf.sh
. "$ROOT/e2e/protobuf.sh"
# shellcheck source=e2e/crd.sh
. "$ROOT/e2e/crd.sh"

if [ -z "${KAPI_BIN:-}" ]; then
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/kapi-target}"
  cargo build -q -p kapi-apiserver || { echo "e2e: build failed" >&2; exit 1; }
  KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver"
fi
command -v etcd >/dev/null 2>&1 || { echo "e2e: etcd not found: run hack/install-etcd.sh" >&2; exit 1; }
KUBECTL_132=/usr/lib/google-cloud-sdk/bin/kubectl.1.32
[ -x "$DISPATCHER" ] || { echo "e2e: $DISPATCHER not found: the suite needs a real kubectl" >&2; exit 1; }
[ -x "$KUBECTL_132" ] || { echo "e2e: $KUBECTL_132 not found" >&2; exit 1; }

WORK="$(mktemp -d /tmp/kapi-e2e.XXXXXX)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  if [ "${E2E_KEEP:-}" = "" ]; then rm -rf "$WORK"; else echo "e2e: kept $WORK"; fi
}
trap cleanup EXIT INT TERM

ETCD_PORT=""
start_etcd() {
  ETCD_PORT=$(free_port); local peer; peer=$(free_port)
  etcd --name e2e --data-dir "$WORK/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "e2e=http://127.0.0.1:$peer" >"$WORK/etcd.log" 2>&1 &
  PIDS+=($!)
  wait_until 30 curl -sf "http://127.0.0.1:$ETCD_PORT/health" || { echo "e2e: etcd did not start"; tail -20 "$WORK/etcd.log"; exit 1; }
}

# start_kapi BACKEND: starts kapi and sets KUBECONFIG_FILE and KAPI_PORT.
start_kapi() {
  local backend=$1 dir="$WORK/kapi-$1"
  KAPI_PORT=$(free_port)
  local args=(--secure-port "$KAPI_PORT" --data-dir "$dir")
  if [ "$backend" = etcd ]; then args+=(--etcd-servers "http://127.0.0.1:$ETCD_PORT"); fi
  "$KAPI_BIN" "${args[@]}" >"$WORK/kapi-$backend.log" 2>&1 &
  PIDS+=($!)
  KUBECONFIG_FILE="$dir/admin.kubeconfig"
  wait_until 30 test -s "$KUBECONFIG_FILE" || { echo "e2e: kapi ($backend) wrote no kubeconfig"; tail -20 "$WORK/kapi-$backend.log"; exit 1; }
  wait_until 30 "$KUBECTL_132" --kubeconfig "$KUBECONFIG_FILE" get --raw /readyz >/dev/null 2>&1 \
    || { echo "e2e: kapi ($backend) not ready"; tail -20 "$WORK/kapi-$backend.log"; exit 1; }
}

BACKENDS="${E2E_BACKENDS:-etcd embedded}"
case "$BACKENDS" in *etcd*) start_etcd ;; esac
run=0
for backend in $BACKENDS; do
  start_kapi "$backend"
  # The dispatcher's choice for this server (asked once: e2e/lib.sh), then kubectl 1.32.
  for kc in "$(dispatched_kubectl "$KUBECONFIG_FILE")" "$KUBECTL_132"; do
    run=$((run + 1))
    KUBECTL="$kc"
    CACHE="$WORK/cache-$run"
    NS="e2e-$run"
    LABEL="$backend/$(basename "$kc")"
    echo "--- $LABEL (namespace $NS)"
    run_cases
    run_patch_cases
    run_group_cases
    run_protobuf_cases
    run_crd_cases
  done
done
summary

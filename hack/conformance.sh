#!/usr/bin/env bash
# hack/conformance.sh SERVER OUTDIR [PART...]: upstream's conformance specs (e2e.test v1.28.7,
# protobuf client, ../shared/upstream/conformance.sh) against a cluster of kube-scheduler,
# kube-controller-manager and two hollow kubelets (hack/local-cluster.sh) whose API server is
# SERVER: `kapi` (the debug build, or KAPI_BIN) or `reference` (kube-apiserver from the same
# upstream folder, on an etcd started here). Run it for both and compare OUTDIR/*/passed.txt:
# docs/conformance.md has the lists and how they were read.
#
# Everything runs in a new network namespace holding only loopback (`unshare -n`, so root), so
# nothing can reach an address outside 127.0.0.0/8: hollow kubelets report 192.0.2.2 and
# Service ClusterIPs are not on this machine; a spec that would dial them fails on both servers
# alike. The specs that need a webhook, conversion webhook or aggregated server behind a Service
# are skipped on both (they cannot run without leaving loopback).
#
# PARTs (default: all; all but `serial` run at once, then `serial` alone). Each is small enough
# to finish within the run's timeout on hollow kubelets, where specs that wait for a container
# to exit time out after five minutes on both servers:
#   machinery            [sig-api-machinery] (76 less the skipped ones above)
#   others               [sig-scheduling], [sig-auth], [sig-instrumentation]
#   apps-1, apps-2       [sig-apps], split by the describe's first letter (C-D, the rest)
#   node-1 ... node-6    [sig-node], split by describe
#   serial               every [Serial] spec of those SIGs
# The spec order is fixed (--ginkgo.seed=1), so both servers run the same specs in the same order.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SERVER=${1:?usage: hack/conformance.sh kapi|reference OUTDIR [PART...]}
OUT=${2:?usage: hack/conformance.sh kapi|reference OUTDIR [PART...]}
shift 2
PARTS=("$@")
[ ${#PARTS[@]} -eq 0 ] && PARTS=(machinery others apps-1 apps-2 node-1 node-2 node-3 node-4 node-5 node-6 serial)

# shellcheck source=hack/lib/servers.sh
. "$(dirname "$0")/lib/servers.sh"
UP=$(upstream_bin)
if [ -z "$UP" ] || [ ! -x "$UP/e2e.test" ]; then
  echo "conformance: no upstream binaries (set KAPI_UPSTREAM_BIN or put them in ../shared/upstream)"
  exit 0
fi
export KAPI_UPSTREAM_BIN=$UP
CONFORMANCE=$ROOT/../shared/upstream/conformance.sh
[ -x "$CONFORMANCE" ] || { echo "conformance: no ../shared/upstream/conformance.sh" >&2; exit 2; }

# Re-run inside a loopback-only network namespace (kapi built first, outside it).
if [ -z "${KAPI_CONFORMANCE_NETNS:-}" ]; then
  if [ "$SERVER" = kapi ] && [ -z "${KAPI_BIN:-}" ]; then
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/kapi-target}"
    (cd "$ROOT" && cargo build -q -p kapi-apiserver) || exit 1
    export KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver"
  fi
  [ "$(id -u)" = 0 ] || { echo "conformance: needs root for a loopback-only network namespace (unshare -n)" >&2; exit 2; }
  exec env KAPI_CONFORMANCE_NETNS=1 unshare -n "$0" "$SERVER" "$OUT" "${PARTS[@]}"
fi
ip link set lo up
mkdir -p "$OUT"
OUT=$(realpath "$OUT")

PIDS=()
stop() { for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap stop EXIT INT TERM

if [ "$SERVER" = reference ]; then
  ep=$(free_port); pp=$(free_port)
  etcd --data-dir "$OUT/etcd" --listen-client-urls "http://127.0.0.1:$ep" --advertise-client-urls "http://127.0.0.1:$ep" \
    --listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
    --initial-cluster "default=http://127.0.0.1:$pp" >"$OUT/etcd.log" 2>&1 &
  PIDS+=($!)
  export CLUSTER_APISERVER=reference KAPI_ETCD="http://127.0.0.1:$ep"
fi
CLUSTER_DIR="$OUT/cluster" "$ROOT/hack/local-cluster.sh" 2 >"$OUT/cluster.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 300); do grep -q "running; Ctrl-C" "$OUT/cluster.log" && break; sleep 1; done
grep -q "running; Ctrl-C" "$OUT/cluster.log" || { echo "conformance: the cluster did not start; see $OUT/cluster.log" >&2; exit 1; }
KC="$OUT/cluster/data/admin.kubeconfig"

SIGS='api-machinery|apps|node|scheduling|auth|instrumentation'
NEEDS_SERVICES='AdmissionWebhook|CustomResourceConversionWebhook|Aggregator'
focus_of() {
  local c='.*\[Conformance\]'
  case $1 in
    machinery) echo "\\[sig-api-machinery\\]$c" ;;
    others) echo "\\[sig-(scheduling|auth|instrumentation)\\]$c" ;;
    apps-1) echo "\\[sig-apps\\] [C-D]$c" ;;
    apps-2) echo "\\[sig-apps\\] [^C-D]$c" ;;
    node-1) echo "\\[sig-node\\] (ConfigMap|Containers|Container Lifecycle)$c" ;;
    node-2) echo "\\[sig-node\\] (Container Runtime|Downward API|Ephemeral|InitContainer)$c" ;;
    node-3) echo "\\[sig-node\\] (Kubelet|Lease|PodTemplates|Pods Extended|PreStop)$c" ;;
    node-4) echo "\\[sig-node\\] Pods should$c" ;;
    node-5) echo "\\[sig-node\\] (Probing|RuntimeClass)$c" ;;
    node-6) echo "\\[sig-node\\] (Secrets|Security|Sysctls|Variable)$c" ;;
    serial) echo "\\[sig-($SIGS)\\].*\\[Serial\\]$c" ;;
    *) echo "conformance: unknown part $1" >&2; exit 2 ;;
  esac
}
export E2E_EXTRA="--ginkgo.seed=1 --ginkgo.timeout=150m ${E2E_EXTRA:-}"
run_part() {
  local skip="$NEEDS_SERVICES"
  [ "$1" = serial ] || skip="$skip|\\[Serial\\]"
  "$CONFORMANCE" "$KC" "$OUT/$1" "$(focus_of "$1")" "$skip"
}
parallel=()
for p in "${PARTS[@]}"; do
  [ "$p" = serial ] && continue
  run_part "$p" & parallel+=($!)
done
[ ${#parallel[@]} -gt 0 ] && wait "${parallel[@]}"
for p in "${PARTS[@]}"; do [ "$p" = serial ] && run_part serial; done
for p in "${PARTS[@]}"; do
  [ -f "$OUT/$p/passed.txt" ] && echo "conformance: $SERVER $p: $(wc -l <"$OUT/$p/passed.txt") passed ($OUT/$p/summary.tsv)"
done

#!/usr/bin/env bash
# Admission end-to-end: real etcd, real kapi (restarted with different admission flags), real
# kubectl. Shows AlwaysPullImages, AlwaysDeny, NamespaceLifecycle, LimitRanger and ResourceQuota
# at work, an unknown plugin failing start-up, and the admission histograms at /metrics.
#
#   KAPI_BIN=path/to/kapi-apiserver e2e/admission.sh   (default: builds the debug binary)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=e2e/lib.sh
. "$ROOT/e2e/lib.sh"

if [ -z "${KAPI_BIN:-}" ]; then
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/kapi-target}"
  cargo build -q -p kapi-apiserver || { echo "e2e: build failed" >&2; exit 1; }
  KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver"
fi
KUBECTL=/usr/bin/kubectl
WORK="$(mktemp -d /tmp/kapi-e2e-adm.XXXXXX)"
CACHE="$WORK/cache"
LABEL=admission
PIDS=()
KAPI_PID=""
cleanup() {
  [ -n "$KAPI_PID" ] && kill "$KAPI_PID" 2>/dev/null
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  if [ "${E2E_KEEP:-}" = "" ]; then rm -rf "$WORK"; else echo "e2e: kept $WORK"; fi
}
trap cleanup EXIT INT TERM

ETCD_PORT=$(free_port); PEER=$(free_port)
etcd --name adm --data-dir "$WORK/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$PEER" --initial-advertise-peer-urls "http://127.0.0.1:$PEER" \
  --initial-cluster "adm=http://127.0.0.1:$PEER" >"$WORK/etcd.log" 2>&1 &
PIDS+=($!)
wait_until 30 curl -sf -o /dev/null "http://127.0.0.1:$ETCD_PORT/health" || { echo "e2e: etcd did not start"; exit 1; }

# start_kapi NAME FLAGS...: (re)starts kapi on etcd with FLAGS, each run under its own prefix.
start_kapi() {
  local name=$1; shift
  [ -n "$KAPI_PID" ] && { kill "$KAPI_PID" 2>/dev/null; wait "$KAPI_PID" 2>/dev/null; }
  local port; port=$(free_port)
  local dir="$WORK/kapi-$name"
  "$KAPI_BIN" --secure-port "$port" --data-dir "$dir" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --etcd-prefix "/registry-$name" "$@" >"$WORK/kapi-$name.log" 2>&1 &
  KAPI_PID=$!
  KUBECONFIG_FILE="$dir/admin.kubeconfig"
  wait_until 30 test -s "$KUBECONFIG_FILE" || { echo "e2e: kapi ($name) wrote no kubeconfig"; tail -20 "$WORK/kapi-$name.log"; exit 1; }
  wait_until 30 k get --raw /readyz >/dev/null 2>&1 || { echo "e2e: kapi ($name) not ready"; exit 1; }
}

pod() { printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{"initContainers":[{"name":"init","image":"busybox","imagePullPolicy":"IfNotPresent"}],"containers":[{"name":"a","image":"nginx","imagePullPolicy":"Never"},{"name":"b","image":"redis"}]}}' "$1"; }

# 1. AlwaysPullImages.
start_kapi pull --enable-admission-plugins=AlwaysPullImages
expect_out "startup log lists AlwaysPullImages among mutating plugins" "mutating admission controller.*AlwaysPullImages" cat "$WORK/kapi-pull.log"
expect_ok "create a pod with AlwaysPullImages" k create -f - <<<"$(pod p1)"
expect_eq "every container pulls Always" "Always Always Always" \
  k get pod p1 -o 'jsonpath={.spec.initContainers[*].imagePullPolicy} {.spec.containers[*].imagePullPolicy}'

# 2. NamespaceLifecycle (default on).
expect_fail "create in a missing namespace" 'namespaces "x" not found' k create configmap c -n x
expect_fail "default namespace cannot be deleted" 'namespaces "default" is forbidden: this namespace may not be deleted' k delete namespace default

# 3. LimitRanger (default on).
expect_ok "create a LimitRange" k apply -f - <<'YAML'
apiVersion: v1
kind: LimitRange
metadata: {name: lr}
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 128Mi}
    defaultRequest: {cpu: 250m}
YAML
expect_ok "create a pod without resources" k run lr-pod --image=nginx
expect_eq "LimitRange defaults land on the pod" "500m 128Mi 250m" \
  k get pod lr-pod -o 'jsonpath={.spec.containers[0].resources.limits.cpu} {.spec.containers[0].resources.limits.memory} {.spec.containers[0].resources.requests.cpu}'

# 4. ResourceQuota (default on).
expect_ok "create a count/configmaps quota" k create namespace q
expect_ok "quota of two configmaps" k create quota cmq -n q --hard=count/configmaps=2
expect_ok "first configmap" k create configmap c1 -n q
expect_ok "second configmap" k create configmap c2 -n q
expect_fail "third configmap exceeds quota" \
  'configmaps "c3" is forbidden: exceeded quota: cmq, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2' \
  k create configmap c3 -n q
expect_eq "quota status shows the usage" "2" k get quota cmq -n q -o 'jsonpath={.status.used.count/configmaps}'

# 5. Metrics.
expect_out "per-plugin histogram at /metrics" 'apiserver_admission_controller_admission_duration_seconds_count\{name="ResourceQuota",operation="CREATE",rejected="true",type="validate"\}' k get --raw /metrics
expect_out "per-step histogram at /metrics" 'apiserver_admission_step_admission_duration_seconds_count\{operation="CREATE",rejected="false",type="admit"\}' k get --raw /metrics
expect_out "AlwaysPullImages timed at /metrics" 'apiserver_admission_controller_admission_duration_seconds_count\{name="AlwaysPullImages"' k get --raw /metrics

# 6. AlwaysDeny: refused with 403 and nothing stored.
start_kapi deny --enable-admission-plugins=AlwaysDeny
expect_fail "AlwaysDeny refuses a create" 'configmaps "d" is forbidden: admission control is denying all modifications' k create configmap d
expect_fail "the refusal is a 403 Forbidden" '403 Forbidden' k create configmap d -v=6
expect_fail "nothing was stored" 'configmaps "d" not found' k get configmap d

# 7. Start-up failures name the plugin.
expect_fail "an unknown plugin fails start-up" 'NoSuchPlugin' \
  timeout 20 "$KAPI_BIN" --secure-port "$(free_port)" --data-dir "$WORK/bad" --enable-admission-plugins=NoSuchPlugin
expect_fail "a plugin in both flags fails start-up" 'LimitRanger' \
  timeout 20 "$KAPI_BIN" --secure-port "$(free_port)" --data-dir "$WORK/bad2" --enable-admission-plugins=LimitRanger --disable-admission-plugins=LimitRanger

summary

#!/usr/bin/env bash
# hack/local-cluster.sh [N]: a cluster on one machine, kind-style: kapi as its API server,
# upstream's kube-scheduler and kube-controller-manager, and N hollow kubelets (`kubemark
# --morph=kubelet`: a real kubelet with a fake container runtime; default N=2). Each component
# has its own identity: client certificates signed by kapi's CA for system:kube-scheduler,
# system:kube-controller-manager (with --use-service-account-credentials=true, as kubeadm runs
# it) and system:node:<name> in system:nodes for each kubelet, under
# --authorization-mode=Node,RBAC and NodeRestriction. kapi's own controllers are off
# (--controllers=-*): the controller manager runs them all.
#
# Prints the admin kubeconfig's path and waits; Ctrl-C (or SIGTERM) stops everything it
# started. Upstream binaries come from KAPI_UPSTREAM_BIN (a folder holding kube-scheduler,
# kube-controller-manager and kubemark), else from ../shared/upstream (unpacked once).
#
#   KAPI_BIN        the kapi binary (default: the debug build, built here)
#   KAPI_ETCD       an etcd URL to store in (default: kapi's embedded store)
#   CLUSTER_DIR     where state, certificates and logs go (default: a new temporary directory)
#   CLUSTER_PORT    kapi's secure port (default: a free one)
#   CLUSTER_KCM_ARGS more kube-controller-manager flags (e.g. a shorter --node-monitor-grace-period)
#
# Each process's pid is written to CLUSTER_DIR/pids/<name> (kapi, kube-scheduler,
# kube-controller-manager, hollow-<i>), so a test can stop one of them.
#
# Everything listens on and dials 127.0.0.1 only: hollow kubelets report the address
# 192.0.2.2, which nothing here connects to.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
N=${1:-2}

upstream_bin() {
  if [ -n "${KAPI_UPSTREAM_BIN:-}" ]; then
    echo "$KAPI_UPSTREAM_BIN"
  elif [ -x "$ROOT/../shared/upstream/unpack.sh" ]; then
    "$ROOT/../shared/upstream/unpack.sh"
  fi
}
UP=$(upstream_bin)
for b in kube-scheduler kube-controller-manager kubemark; do
  if [ -z "$UP" ] || [ ! -x "$UP/$b" ]; then
    echo "local-cluster: no upstream $b (set KAPI_UPSTREAM_BIN to a folder with kube-scheduler, kube-controller-manager and kubemark)" >&2
    exit 2
  fi
done

if [ -z "${KAPI_BIN:-}" ]; then
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/kapi-target}"
  (cd "$ROOT" && cargo build -q -p kapi-apiserver)
  KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver"
fi

D=${CLUSTER_DIR:-$(mktemp -d /tmp/kapi-cluster.XXXXXX)}
mkdir -p "$D/pki" "$D/logs" "$D/pids"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=${CLUSTER_PORT:-$(free_port)}
SERVER="https://127.0.0.1:$PORT"

PIDS=()
stop() {
  trap - EXIT INT TERM
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  echo "local-cluster: stopped (state kept in $D)"
}
trap stop EXIT INT TERM

KAPI_ARGS=(--data-dir "$D/data" --secure-port "$PORT" --controllers=-*
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction)
[ -n "${KAPI_ETCD:-}" ] && KAPI_ARGS+=(--etcd-servers "$KAPI_ETCD")
"$KAPI_BIN" "${KAPI_ARGS[@]}" >"$D/logs/kapi.log" 2>&1 &
PIDS+=($!); echo $! >"$D/pids/kapi"
for _ in $(seq 1 300); do
  [ "$(curl -sk -o /dev/null -w '%{http_code}' "$SERVER/readyz")" = 200 ] && break
  sleep 0.1
done
[ "$(curl -sk -o /dev/null -w '%{http_code}' "$SERVER/readyz")" = 200 ] \
  || { echo "local-cluster: kapi did not become ready; see $D/logs/kapi.log" >&2; exit 1; }

# client FILE CN [O]: a client certificate signed by kapi's CA and a kubeconfig using it.
PKI="$D/data/pki"
client() {
  local f="$D/pki/$1" subj="/CN=$2"
  [ -n "${3:-}" ] && subj="/O=$3/CN=$2"
  openssl req -newkey rsa:2048 -nodes -keyout "$f.key" -out "$f.csr" -subj "$subj" 2>/dev/null
  openssl x509 -req -in "$f.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -out "$f.crt" -days 30 \
    -extfile <(printf 'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n') 2>/dev/null
  kubectl config set-cluster local --server="$SERVER" --certificate-authority="$PKI/ca.crt" \
    --embed-certs --kubeconfig="$f.kubeconfig" >/dev/null
  kubectl config set-credentials "$2" --client-certificate="$f.crt" --client-key="$f.key" \
    --embed-certs --kubeconfig="$f.kubeconfig" >/dev/null
  kubectl config set-context local --cluster=local --user="$2" --kubeconfig="$f.kubeconfig" >/dev/null
  kubectl config use-context local --kubeconfig="$f.kubeconfig" >/dev/null
}
client scheduler system:kube-scheduler
client controller-manager system:kube-controller-manager

K="$D/pki/scheduler.kubeconfig"
"$UP/kube-scheduler" --kubeconfig="$K" --authentication-kubeconfig="$K" --authorization-kubeconfig="$K" \
  --leader-elect=false --secure-port=0 >"$D/logs/kube-scheduler.log" 2>&1 &
PIDS+=($!); echo $! >"$D/pids/kube-scheduler"
K="$D/pki/controller-manager.kubeconfig"
"$UP/kube-controller-manager" --kubeconfig="$K" --authentication-kubeconfig="$K" --authorization-kubeconfig="$K" \
  --controllers='*' --leader-elect=false --secure-port=0 --use-service-account-credentials=true \
  --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
  --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
  ${CLUSTER_KCM_ARGS:-} >"$D/logs/kube-controller-manager.log" 2>&1 &
PIDS+=($!); echo $! >"$D/pids/kube-controller-manager"

for i in $(seq 0 $((N - 1))); do
  name="hollow-$i"
  client "$name" "system:node:$name" system:nodes
  "$UP/kubemark" --morph=kubelet --name="$name" --kubeconfig="$D/pki/$name.kubeconfig" \
    --kubelet-port="$(free_port)" --kubelet-read-only-port=0 --use-host-image-service=false \
    >"$D/logs/$name.log" 2>&1 &
  PIDS+=($!); echo $! >"$D/pids/$name"
done

ADMIN="$D/data/admin.kubeconfig"
ready_nodes() { kubectl --kubeconfig "$ADMIN" get nodes --no-headers 2>/dev/null | grep -c ' Ready ' || true; }
for _ in $(seq 1 120); do
  [ "$(ready_nodes)" -ge "$N" ] && break
  sleep 1
done
echo "local-cluster: kapi on $SERVER, kube-scheduler, kube-controller-manager, $(ready_nodes)/$N hollow nodes Ready"
echo "local-cluster: logs in $D/logs"
echo "export KUBECONFIG=$ADMIN"
echo "local-cluster: running; Ctrl-C stops it"
wait

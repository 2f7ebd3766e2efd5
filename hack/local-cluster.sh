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
#   CLUSTER_SCHEDULER_ARGS more kube-scheduler flags (e.g. --kube-api-qps=100: its default of 50
#                   requests/s caps its binds at 50 pods/s)
#   CLUSTER_SCHEDULER=none  start no kube-scheduler (something else binds the pods, e.g. the
#                   cluster-load generator's --simulate-scheduler)
#   CLUSTER_SCHEDULER_METRICS_PORT  the scheduler serves /metrics on 127.0.0.1 at this port to
#                   anyone (--authorization-always-allow-paths; default: no serving port)
#   CLUSTER_TLS_BOOTSTRAP=1  kubelets join as real nodes do (kubeadm join): each starts with only
#                   a bootstrap kubeconfig holding a bootstrap token and gets its client
#                   certificate through a CSR, auto-approved and signed by the controller
#                   manager (kapi's CA). The token is in CLUSTER_DIR/pki/bootstrap-token.
#   CLUSTER_APISERVER=reference  run upstream's kube-apiserver (from the same folder, on
#                   KAPI_ETCD, which is then required) instead of kapi, with the same flags,
#                   files and layout, to compare kapi with it; its pid file is still pids/kapi.
#
# Each process's pid is written to CLUSTER_DIR/pids/<name> (kapi, kube-scheduler,
# kube-controller-manager, hollow-<i>), so a test can stop one of them.
#
# Everything listens on and dials 127.0.0.1 only: hollow kubelets report the address
# 192.0.2.2, which nothing here connects to.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
N=${1:-2}

# shellcheck source=hack/lib/servers.sh
. "$(dirname "$0")/lib/servers.sh"
UP=$(upstream_bin)
for b in kube-scheduler kube-controller-manager kubemark; do
  if [ -z "$UP" ] || [ ! -x "$UP/$b" ]; then
    echo "local-cluster: no upstream $b (set KAPI_UPSTREAM_BIN to a folder with kube-scheduler, kube-controller-manager and kubemark)" >&2
    exit 2
  fi
done

REFERENCE=0
if [ "${CLUSTER_APISERVER:-kapi}" = reference ]; then
  REFERENCE=1
  [ -x "$UP/kube-apiserver" ] || { echo "local-cluster: no upstream kube-apiserver in $UP" >&2; exit 2; }
  [ -n "${KAPI_ETCD:-}" ] || { echo "local-cluster: CLUSTER_APISERVER=reference needs KAPI_ETCD" >&2; exit 2; }
elif [ -z "${KAPI_BIN:-}" ]; then
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/kapi-target}"
  (cd "$ROOT" && cargo build -q -p kapi-apiserver)
  KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver"
fi

D=${CLUSTER_DIR:-$(mktemp -d /tmp/kapi-cluster.XXXXXX)}
mkdir -p "$D/pki" "$D/logs" "$D/pids"
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

AUTH_ARGS=(--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction
  --enable-bootstrap-token-auth=true)
if [ "$REFERENCE" = 1 ]; then
  # What kapi makes for itself on first start, in the same places.
  # shellcheck source=hack/reference-pki.sh
  . "$ROOT/hack/reference-pki.sh"
  P="$D/data/pki"
  A="$D/data/admin.kubeconfig"
  reference_pki "$P" "$SERVER" "$A"
  reference_apiserver "$P" "$KAPI_ETCD" "$PORT" "${AUTH_ARGS[@]}" >"$D/logs/kapi.log" 2>&1 &
else
  KAPI_ARGS=(--data-dir "$D/data" --secure-port "$PORT" --controllers=-* "${AUTH_ARGS[@]}")
  [ -n "${KAPI_ETCD:-}" ] && KAPI_ARGS+=(--etcd-servers "$KAPI_ETCD")
  "$KAPI_BIN" "${KAPI_ARGS[@]}" >"$D/logs/kapi.log" 2>&1 &
fi
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
ADMIN="$D/data/admin.kubeconfig"
ka() { kubectl --kubeconfig "$ADMIN" "$@"; }

# What kubeadm's bootstrap-token phase sets up, the same objects under the same names: a token
# (24 h, for authentication and signing, in kubeadm's group), the bindings that let that
# group ask for node client certificates and have them approved, the one that lets nodes renew
# theirs, and the cluster-info ConfigMap the bootstrapsigner controller signs with the token.
if [ "${CLUSTER_TLS_BOOTSTRAP:-0}" = 1 ]; then
  rand() { python3 -c "import secrets as s; print(''.join(s.choice('0123456789abcdefghijklmnopqrstuvwxyz') for _ in range($1)))"; }
  TOKEN_ID=$(rand 6); TOKEN_SECRET=$(rand 16)
  echo "$TOKEN_ID.$TOKEN_SECRET" >"$D/pki/bootstrap-token"
  TOKEN_GROUP=system:bootstrappers:kubeadm:default-node-token
  ka create -f - >/dev/null <<Y
apiVersion: v1
kind: Secret
metadata: {name: bootstrap-token-$TOKEN_ID, namespace: kube-system}
type: bootstrap.kubernetes.io/token
stringData:
  description: "The default bootstrap token generated by 'kubeadm init'."
  token-id: "$TOKEN_ID"
  token-secret: "$TOKEN_SECRET"
  expiration: "$(date -u -d '+24 hours' +%Y-%m-%dT%H:%M:%SZ)"
  usage-bootstrap-authentication: "true"
  usage-bootstrap-signing: "true"
  auth-extra-groups: "$TOKEN_GROUP"
Y
  ka create clusterrolebinding kubeadm:kubelet-bootstrap \
    --clusterrole=system:node-bootstrapper --group="$TOKEN_GROUP" >/dev/null
  ka create clusterrolebinding kubeadm:node-autoapprove-bootstrap \
    --clusterrole=system:certificates.k8s.io:certificatesigningrequests:nodeclient --group="$TOKEN_GROUP" >/dev/null
  ka create clusterrolebinding kubeadm:node-autoapprove-certificate-rotation \
    --clusterrole=system:certificates.k8s.io:certificatesigningrequests:selfnodeclient --group=system:nodes >/dev/null
  cat >"$D/pki/cluster-info.kubeconfig" <<Y
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
    server: $SERVER
  name: ""
contexts: null
current-context: ""
kind: Config
preferences: {}
users: null
Y
  ka -n kube-public create configmap cluster-info --from-file=kubeconfig="$D/pki/cluster-info.kubeconfig" >/dev/null
  ka -n kube-public create role kubeadm:bootstrap-signer-clusterinfo \
    --verb=get --resource=configmaps --resource-name=cluster-info >/dev/null
  ka -n kube-public create rolebinding kubeadm:bootstrap-signer-clusterinfo \
    --role=kubeadm:bootstrap-signer-clusterinfo --user=system:anonymous >/dev/null
  B="$D/pki/bootstrap.kubeconfig"
  kubectl config set-cluster local --server="$SERVER" --certificate-authority="$PKI/ca.crt" \
    --embed-certs --kubeconfig="$B" >/dev/null
  kubectl config set-credentials tls-bootstrap-token-user --token="$TOKEN_ID.$TOKEN_SECRET" --kubeconfig="$B" >/dev/null
  kubectl config set-context local --cluster=local --user=tls-bootstrap-token-user --kubeconfig="$B" >/dev/null
  kubectl config use-context local --kubeconfig="$B" >/dev/null
fi

SCHEDULER_NAME=kube-scheduler
if [ "${CLUSTER_SCHEDULER:-}" = none ]; then
  SCHEDULER_NAME="no scheduler"
else
  K="$D/pki/scheduler.kubeconfig"
  SCHEDULER_SERVING=(--secure-port=0)
  if [ -n "${CLUSTER_SCHEDULER_METRICS_PORT:-}" ]; then
    SCHEDULER_SERVING=(--secure-port="$CLUSTER_SCHEDULER_METRICS_PORT" --bind-address=127.0.0.1
      --authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics)
  fi
  "$UP/kube-scheduler" --kubeconfig="$K" --authentication-kubeconfig="$K" --authorization-kubeconfig="$K" \
    --leader-elect=false "${SCHEDULER_SERVING[@]}" ${CLUSTER_SCHEDULER_ARGS:-} >"$D/logs/kube-scheduler.log" 2>&1 &
  PIDS+=($!); echo $! >"$D/pids/kube-scheduler"
fi
K="$D/pki/controller-manager.kubeconfig"
"$UP/kube-controller-manager" --kubeconfig="$K" --authentication-kubeconfig="$K" --authorization-kubeconfig="$K" \
  --controllers='*,bootstrapsigner,tokencleaner' --leader-elect=false --secure-port=0 --use-service-account-credentials=true \
  --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
  --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
  ${CLUSTER_KCM_ARGS:-} >"$D/logs/kube-controller-manager.log" 2>&1 &
PIDS+=($!); echo $! >"$D/pids/kube-controller-manager"

for i in $(seq 0 $((N - 1))); do
  name="hollow-$i"
  if [ "${CLUSTER_TLS_BOOTSTRAP:-0}" = 1 ]; then
    # The kubelet writes its kubeconfig once its CSR is issued, key and certificate in --cert-dir.
    creds=(--bootstrap-kubeconfig="$D/pki/bootstrap.kubeconfig" --cert-dir="$D/pki/$name")
  else
    client "$name" "system:node:$name" system:nodes
    creds=()
  fi
  "$UP/kubemark" --morph=kubelet --name="$name" --kubeconfig="$D/pki/$name.kubeconfig" "${creds[@]}" \
    --kubelet-port="$(free_port)" --kubelet-read-only-port=0 --use-host-image-service=false \
    >"$D/logs/$name.log" 2>&1 &
  PIDS+=($!); echo $! >"$D/pids/$name"
done

ready_nodes() { kubectl --kubeconfig "$ADMIN" get nodes --no-headers 2>/dev/null | grep -c ' Ready ' || true; }
for _ in $(seq 1 120); do
  [ "$(ready_nodes)" -ge "$N" ] && break
  sleep 1
done
echo "local-cluster: $([ "$REFERENCE" = 1 ] && echo kube-apiserver || echo kapi) on $SERVER, $SCHEDULER_NAME, kube-controller-manager, $(ready_nodes)/$N hollow nodes Ready"
echo "local-cluster: logs in $D/logs"
echo "export KUBECONFIG=$ADMIN"
echo "local-cluster: running; Ctrl-C stops it"
wait

#!/usr/bin/env bash
# kapi as a cluster's API server: hack/local-cluster.sh (kapi with Node,RBAC and
# NodeRestriction, upstream's kube-scheduler and kube-controller-manager under their own
# identities, two hollow kubelets as system:node:<name>), on the embedded store and on etcd,
# then what a user does with a cluster, through kubectl:
#
#  - a Deployment rolls out, scales, rolls an update and rolls back;
#  - a DaemonSet lands on every node; a StatefulSet comes up in order;
#  - a NoSchedule taint keeps pods off a node unless they tolerate it;
#  - cordon, then `kubectl drain`: refused while a PodDisruptionBudget is at its limit, done
#    once it allows, the pods rescheduled elsewhere;
#  - a kubelet killed: its Node goes NotReady (Unknown) and its pods are marked not ready, as
#    kube-controller-manager's node lifecycle controller does; the Node deleted: its pods are
#    garbage-collected.
#
# The kubelets join by TLS bootstrap (CLUSTER_TLS_BOOTSTRAP=1, as `kubeadm join`): a bootstrap
# token, a CSR auto-approved and signed by kube-controller-manager, then the node registers as
# system:node:<name>; the token's user is held to system:node-bootstrapper, an expired or
# deleted token is a 401, the bootstrapsigner signs cluster-info with the token, the
# tokencleaner removes an expired token.
#
# Needs upstream's kube-scheduler, kube-controller-manager and kubemark: KAPI_UPSTREAM_BIN, or
# ../shared/upstream; without them it says so in one line and passes.
#
#   KAPI_BIN=path/to/kapi-apiserver e2e/cluster.sh
#   E2E_CLUSTER_REFERENCE=1 e2e/cluster.sh     (the same against kube-apiserver, on etcd)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=e2e/lib.sh
. "$ROOT/e2e/lib.sh"

KAPI_UPSTREAM_BIN=$(upstream_bin)
if [ -z "$KAPI_UPSTREAM_BIN" ]; then
  echo "e2e cluster: skipped: no upstream kube-scheduler/kube-controller-manager/kubemark (set KAPI_UPSTREAM_BIN or provide ../shared/upstream)"
  exit 0
fi
export KAPI_UPSTREAM_BIN
e2e_init cluster

# A short grace period so that a stopped kubelet's Node turns NotReady in seconds, not 40.
export CLUSTER_KCM_ARGS="--node-monitor-grace-period=16s --node-monitor-period=2s"

# pods_on NODE: how many pods of the default namespace run on NODE.
pods_on() { k get pods -o jsonpath="{range .items[?(@.spec.nodeName==\"$1\")]}{.metadata.name}{\"\\n\"}{end}" | grep -c . ; }
running() { [ "$(k get pods -l "$1" --field-selector=status.phase=Running -o name | grep -c .)" = "$2" ]; }

# tls_bootstrap DIR: the nodes joined with the bootstrap token in DIR/pki; what that token may do.
tls_bootstrap() {
  local dir=$1 token id secret
  token=$(cat "$dir/pki/bootstrap-token"); id=${token%%.*}; secret=${token#*.}
  kb() { "$KUBECTL" --kubeconfig "$dir/pki/bootstrap.kubeconfig" --cache-dir "$CACHE" "$@"; }
  csrs() { k get csr -o jsonpath="{range .items[*]}$1{\"\\n\"}{end}" | sort; }
  expect_eq "a CSR per node, by the token's user, for the kubelet client signer" \
    "$(printf 'kubernetes.io/kube-apiserver-client-kubelet system:bootstrap:%s\n' "$id" "$id")" \
    csrs "{.spec.signerName} {.spec.username}"
  expect_eq "with the bootstrap groups" \
    "$(printf '["system:bootstrappers","system:bootstrappers:kubeadm:default-node-token","system:authenticated"]\n%.0s' 1 2)" \
    csrs "{.spec.groups}"
  expect_eq "auto-approved by the csrapproving controller" \
    "$(printf 'Approved True AutoApproved Auto approving kubelet client certificate after SubjectAccessReview.\n%.0s' 1 2)" \
    csrs '{.status.conditions[*].type} {.status.conditions[*].status} {.status.conditions[*].reason} {.status.conditions[*].message}'
  subjects() {
    local c
    for c in $(k get csr -o jsonpath='{.items[*].status.certificate}'); do
      base64 -d <<<"$c" | openssl x509 -noout -subject -issuer -nameopt compat
    done | sort
  }
  local issuer; issuer=$(openssl x509 -noout -issuer -nameopt compat -in "$dir/data/pki/ca.crt" | sed 's/^issuer=//')
  expect_eq "issued by csrsigning with the cluster CA, one per node" \
    "$(printf 'issuer=%s\nissuer=%s\nsubject=/O=system:nodes/CN=system:node:hollow-0\nsubject=/O=system:nodes/CN=system:node:hollow-1' "$issuer" "$issuer")" subjects
  expect_eq "hollow-0's kubelet talks as system:node:hollow-0 in system:nodes" "system:node:hollow-0 system:nodes system:authenticated" \
    "$KUBECTL" --kubeconfig "$dir/pki/hollow-0.kubeconfig" auth whoami -o jsonpath='{.status.userInfo.username} {.status.userInfo.groups[*]}'

  expect_eq "the token is system:bootstrap:<id> in its groups" \
    "system:bootstrap:$id system:bootstrappers system:bootstrappers:kubeadm:default-node-token system:authenticated" \
    kb auth whoami -o jsonpath='{.status.userInfo.username} {.status.userInfo.groups[*]}'
  can() { kb auth can-i "$@" 2>/dev/null; }
  expect_eq "it may create CSRs" yes can create certificatesigningrequests
  cannot() { { can list secrets -n kube-system; can create nodes; can get nodes; true; } | xargs; }
  expect_eq "and nothing beyond system:node-bootstrapper" "no no no" cannot
  expect_fail "listing secrets is upstream's 403" \
    "Error from server (Forbidden): secrets is forbidden: User \"system:bootstrap:$id\" cannot list resource \"secrets\" in API group \"\" in the namespace \"kube-system\"" \
    kb get secrets -n kube-system

  # Another token, expired an hour ago: refused, then removed by the tokencleaner.
  k create -f - >/dev/null <<Y
apiVersion: v1
kind: Secret
metadata: {name: bootstrap-token-expird, namespace: kube-system}
type: bootstrap.kubernetes.io/token
stringData: {token-id: expird, token-secret: 0123456789abcdef, usage-bootstrap-authentication: "true", expiration: "$(date -u -d '-1 hour' +%Y-%m-%dT%H:%M:%SZ)"}
Y
  expect_fail "an expired token is a 401" "error: You must be logged in to the server (Unauthorized)" \
    kb --token expird.0123456789abcdef get --raw /api
  gone() { ! k -n kube-system get secret bootstrap-token-expird >/dev/null 2>&1; }
  if wait_until 30 gone; then pass "the tokencleaner deletes it"; else fail "the tokencleaner deletes it"; fi
  # A token that worked, then deleted.
  k -n kube-system create secret generic bootstrap-token-delete --type=bootstrap.kubernetes.io/token \
    --from-literal=token-id=delete --from-literal=token-secret=0123456789abcdef \
    --from-literal=usage-bootstrap-authentication=true >/dev/null
  expect_eq "a token works" "system:bootstrap:delete" \
    kb --token delete.0123456789abcdef auth whoami -o jsonpath='{.status.userInfo.username}'
  expect_ok "delete its Secret" k -n kube-system delete secret bootstrap-token-delete
  refused() { ! kb --token delete.0123456789abcdef get --raw /api >/dev/null 2>&1; }
  # kube-apiserver caches a token's success for 10 s; kapi checks the Secret on every request.
  if wait_until 15 refused; then pass "once deleted it is refused"; else fail "once deleted it is refused"; fi
  expect_fail "with a 401" "error: You must be logged in to the server (Unauthorized)" \
    kb --token delete.0123456789abcdef get --raw /api

  # The bootstrapsigner signs kube-public/cluster-info with the token (detached HS256 JWS).
  signed() { k -n kube-public get configmap cluster-info -o jsonpath="{.data.jws-kubeconfig-$id}" | grep -q .; }
  if wait_until 30 signed; then pass "cluster-info gets jws-kubeconfig-$id"; else fail "cluster-info gets jws-kubeconfig-$id"; fi
  verify_jws() {
    k -n kube-public get configmap cluster-info -o json | python3 -c '
import base64, hashlib, hmac, json, sys
d = json.load(sys.stdin)["data"]; tid, secret = sys.argv[1], sys.argv[2]
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=")
head, empty, sig = d["jws-kubeconfig-" + tid].split(".")
assert empty == "" and json.loads(base64.urlsafe_b64decode(head + "==")) == {"alg": "HS256", "kid": tid}
mac = hmac.new(secret.encode(), head.encode() + b"." + b64(d["kubeconfig"].encode()), hashlib.sha256).digest()
print("valid" if b64(mac).decode() == sig else "invalid")' "$id" "$secret"
  }
  expect_eq "and the signature verifies with the token" valid verify_jws
  expect_eq "anonymous may read cluster-info (kubeadm's role)" "true" \
    bash -c "curl -sk '$(k config view -o jsonpath='{.clusters[0].cluster.server}')/api/v1/namespaces/kube-public/configmaps/cluster-info' | python3 -c 'import json,sys; print(\"true\" if \"kubeconfig\" in json.load(sys.stdin)[\"data\"] else \"false\")'"
}

run_cluster() {
  local backend=$1
  local dir="$WORK/$backend"
  if [ "$backend" = etcd ]; then
    e2e_start_etcd
    export KAPI_ETCD="http://127.0.0.1:$ETCD_PORT"
  else
    unset KAPI_ETCD
  fi
  CLUSTER_TLS_BOOTSTRAP=1 CLUSTER_DIR="$dir" KAPI_BIN="$KAPI_BIN" hack/local-cluster.sh 2 >"$WORK/cluster-$backend.out" 2>&1 &
  local cluster_pid=$!
  PIDS+=("$cluster_pid")
  LABEL="cluster-$backend"
  if ! wait_until 180 grep -q "^export KUBECONFIG=" "$WORK/cluster-$backend.out"; then
    fail "the cluster comes up"; cat "$WORK/cluster-$backend.out"; return
  fi
  KUBECONFIG_FILE="$dir/data/admin.kubeconfig"
  use_dispatched_kubectl
  expect_out "both hollow nodes Ready" "2/2 hollow nodes Ready" cat "$WORK/cluster-$backend.out"
  tls_bootstrap "$dir"

  # --- Deployment: roll out, scale, update, roll back ----------------------------------------
  expect_ok "create deployment web (3 replicas)" k create deployment web --image=nginx:1.25 --replicas=3
  expect_out "rolled out" "successfully rolled out" k rollout status deployment/web --timeout=90s
  if wait_until 60 running app=web 3; then pass "3 web pods Running"; else fail "3 web pods Running"; fi
  expect_ok "scale to 5" k scale deployment/web --replicas=5
  expect_out "5 available" "successfully rolled out" k rollout status deployment/web --timeout=90s
  expect_eq "5 ready replicas" 5 k get deployment web -o jsonpath='{.status.readyReplicas}'
  expect_ok "update the image" k set image deployment/web nginx=nginx:1.26
  expect_out "the update rolls out" "successfully rolled out" k rollout status deployment/web --timeout=90s
  # Old pods may still be terminating when the rollout is complete; they go soon after.
  images() { k get pods -l app=web -o jsonpath='{range .items[*]}{.spec.containers[0].image}{"\n"}{end}' | sort -u; }
  new_image_only() { [ "$(images)" = "nginx:1.26" ]; }
  if wait_until 60 new_image_only; then pass "every pod runs the new image"; else fail "every pod runs the new image ($(images | xargs))"; fi
  expect_ok "roll back" k rollout undo deployment/web
  expect_out "the rollback rolls out" "successfully rolled out" k rollout status deployment/web --timeout=90s
  expect_eq "the old image is back" "nginx:1.25" k get deployment web -o jsonpath='{.spec.template.spec.containers[0].image}'
  expect_eq "two ReplicaSets, the first one active again" "3" \
    k get deployment web -o jsonpath='{.metadata.annotations.deployment\.kubernetes\.io/revision}'

  # --- DaemonSet and StatefulSet --------------------------------------------------------------
  k apply -f - >/dev/null <<'Y'
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: busybox}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: busybox}]}
Y
  expect_out "the DaemonSet rolls out" "successfully rolled out" k rollout status daemonset/agent --timeout=90s
  expect_eq "one agent on each node" "hollow-0 hollow-1" \
    bash -c "'$KUBECTL' --kubeconfig '$KUBECONFIG_FILE' get pods -l app=agent -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | sort | xargs"
  expect_out "the StatefulSet rolls out" "complete" \
    k rollout status statefulset/db --timeout=120s
  # OrderedReady: db-N is created only once db-(N-1) is Running and Ready.
  expect_eq "its pods were created in order" "db-0 db-1 db-2" \
    bash -c "'$KUBECTL' --kubeconfig '$KUBECONFIG_FILE' get pods -l app=db --sort-by=.metadata.creationTimestamp -o jsonpath='{range .items[*]}{.metadata.name}{\" \"}{end}' | xargs"

  # --- Taints and tolerations -----------------------------------------------------------------
  expect_ok "taint hollow-1 NoSchedule" k taint node hollow-1 dedicated=infra:NoSchedule
  expect_ok "a deployment that does not tolerate it" k create deployment plain --image=busybox --replicas=2
  expect_out "rolled out" "successfully rolled out" k rollout status deployment/plain --timeout=90s
  expect_eq "its pods all on hollow-0" "hollow-0" \
    bash -c "'$KUBECTL' --kubeconfig '$KUBECONFIG_FILE' get pods -l app=plain -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | sort -u"
  k apply -f - >/dev/null <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: tolerant}
spec:
  nodeSelector: {kubernetes.io/hostname: hollow-1}
  tolerations: [{key: dedicated, operator: Equal, value: infra, effect: NoSchedule}]
  containers: [{name: c, image: busybox}]
Y
  tolerant_runs() { [ "$(k get pod tolerant -o jsonpath='{.status.phase}')" = Running ]; }
  if wait_until 60 tolerant_runs; then pass "a pod that tolerates it runs on hollow-1"; else fail "a pod that tolerates it runs on hollow-1"; fi
  expect_ok "untaint" k taint node hollow-1 dedicated=infra:NoSchedule-
  expect_ok "clean up" k delete deployment plain --wait=false

  # --- cordon and drain through a PodDisruptionBudget -----------------------------------------
  expect_ok "a PodDisruptionBudget at its limit for web" k create pdb web --selector=app=web --max-unavailable=0
  expect_out "cordon hollow-0" "cordoned" k cordon hollow-0
  expect_eq "hollow-0 is unschedulable" "true" k get node hollow-0 -o jsonpath='{.spec.unschedulable}'
  expect_fail "drain is refused by the budget" "Cannot evict pod as it would violate the pod's disruption budget" \
    k drain hollow-0 --ignore-daemonsets --delete-emptydir-data --force --timeout=8s
  expect_ok "the budget relaxed" k patch pdb web --type=merge -p '{"spec":{"maxUnavailable":1}}'
  expect_out "drain completes" "drained" k drain hollow-0 --ignore-daemonsets --delete-emptydir-data --force --timeout=120s
  expect_out "web rolled out again" "successfully rolled out" k rollout status deployment/web --timeout=120s
  expect_eq "no web pod left on hollow-0" "hollow-1" \
    bash -c "'$KUBECTL' --kubeconfig '$KUBECONFIG_FILE' get pods -l app=web -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | sort -u"
  expect_out "uncordon" "uncordoned" k uncordon hollow-0

  # --- a kubelet stops: NotReady, its pods marked; its Node deleted: pods collected -------------
  kill -TERM "$(cat "$dir/pids/hollow-1")" 2>/dev/null
  not_ready() { [ "$(k get node hollow-1 -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = Unknown ]; }
  if wait_until 90 not_ready; then pass "hollow-1's Ready condition turns Unknown"; else fail "hollow-1's Ready condition turns Unknown"; fi
  expect_eq "with the node lifecycle controller's reason" "NodeStatusUnknown" \
    k get node hollow-1 -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}'
  pods_marked() {
    [ "$(k get pods --field-selector=spec.nodeName=hollow-1 -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | sort -u)" = False ]
  }
  if wait_until 60 pods_marked; then pass "its pods are marked not Ready"; else fail "its pods are marked not Ready"; fi
  expect_out "delete the Node" "deleted" k delete node hollow-1
  pods_collected() { [ "$(pods_on hollow-1)" = 0 ]; }
  if wait_until 120 pods_collected; then pass "its pods are garbage-collected"; else fail "its pods are garbage-collected"; fi

  kill -TERM "$cluster_pid" 2>/dev/null
  wait "$cluster_pid" 2>/dev/null
  expect_out "local-cluster.sh stops everything it started" "local-cluster: stopped" cat "$WORK/cluster-$backend.out"
  local left=0 f
  for f in "$dir"/pids/*; do kill -0 "$(cat "$f")" 2>/dev/null && left=$((left + 1)); done
  expect_eq "no process of it left" 0 echo "$left"
}

# E2E_CLUSTER_REFERENCE=1: the same checks with upstream's kube-apiserver as the API server
# (on etcd), to compare with.
if [ "${E2E_CLUSTER_REFERENCE:-0}" = 1 ]; then
  export CLUSTER_APISERVER=reference
  run_cluster etcd
else
  run_cluster embedded
  run_cluster etcd
fi
summary

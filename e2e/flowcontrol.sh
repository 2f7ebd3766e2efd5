#!/usr/bin/env bash
# API Priority and Fairness end-to-end: real kapi (on etcd, then on the embedded store), real
# kubectl and the official Python client. The bootstrap FlowSchemas and
# PriorityLevelConfigurations as `kubectl get` prints them (compared with kube-apiserver
# 1.28.7's output, AGE left out: e2e/expected/flowcontrol-get.txt); the response headers naming
# the FlowSchema and priority level; a user's level without seats answering 429 with
# Retry-After; a Dangling FlowSchema; upstream's validation messages; the debug dumps; the
# typed Python API (FlowcontrolApiserverV1Api); and `--enable-priority-and-fairness=false`.
#
#   KAPI_BIN=path/to/kapi-apiserver e2e/flowcontrol.sh   (default: builds the debug binary)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=e2e/lib.sh
. "$ROOT/e2e/lib.sh"

e2e_init flowcontrol
e2e_start_etcd

# no_age: kubectl's table without its AGE column, fields joined by one space.
no_age() {
  awk '/^NAME/ { age = 0; for (i = 1; i <= NF; i++) if ($i == "AGE") age = i }
    { line = ""; for (i = 1; i <= NF; i++) if (i != age) line = line (line == "" ? "" : " ") $i; print line }'
}

# headers PATH: the response headers of GET PATH as the admin.
headers() {
  local pki; pki="$(dirname "$CA")"
  curl -sS -o /dev/null -D - --cacert "$CA" --cert "$pki/admin.crt" --key "$pki/admin.key" \
    "https://127.0.0.1:$PORT$1" | tr -d '\r'
}

# as_bob PATH: GET PATH as bob, its headers kept in $WORK/bob.headers and its body in
# $WORK/bob.body. A request of bob's waits out its queue (upstream's queue wait) before its 429,
# so one request serves every check of the answer.
as_bob() {
  local pki; pki="$(dirname "$CA")"
  curl -sS --cacert "$CA" --cert "$pki/admin.crt" --key "$pki/admin.key" -H "Impersonate-User: bob" \
    -D "$WORK/bob.headers" -o "$WORK/bob.body" "https://127.0.0.1:$PORT$1"
}

# bob_header NAME: that header's value in bob's last answer.
bob_header() { tr -d '\r' <"$WORK/bob.headers" | header "$1"; }

# header NAME: that header's value in the headers on stdin.
header() { grep -i "^$1:" | head -1 | cut -d' ' -f2- || true; }

# tables: what `kubectl get flowschemas,prioritylevelconfigurations` prints, without AGE.
tables() { k get flowschemas,prioritylevelconfigurations | no_age; }

# pf_header PATH NAME: the header NAME of GET PATH as the admin.
pf_header() { headers "$1" | header "$2"; }

# dangling NAME: the FlowSchema's Dangling condition says its level is missing.
dangling() { [ "$(k get flowschema "$1" -o jsonpath='{.status.conditions[?(@.type=="Dangling")].reason}')" = NotFound ]; }

# bad_level: creates a PriorityLevelConfiguration that fails three of upstream's checks.
bad_level() {
  k create -f - <<'Y'
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: bad}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: -1
    lendablePercent: 101
    limitResponse: {type: Queue, queuing: {queues: 4, handSize: 9}}
Y
}

all_found() { [ "$(k get flowschemas -o jsonpath='{.items[*].status.conditions[0].status}' | tr ' ' '\n' | grep -c False)" = 13 ]; }

run_cases() {
  expect_ok "bootstrap objects written, every FlowSchema Found" wait_until 30 all_found
  expect_eq "kubectl get flowschemas,prioritylevelconfigurations (upstream's rows and columns)" \
    "$(cat "$ROOT/e2e/expected/flowcontrol-get.txt")" \
    tables
  expect_eq "both versions served, v1 preferred" "flowcontrol.apiserver.k8s.io/v1 flowcontrol.apiserver.k8s.io/v1beta3 flowcontrol.apiserver.k8s.io/v1" \
    sh -c "$KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE get --raw /apis/flowcontrol.apiserver.k8s.io | python3 -c 'import json,sys; g=json.load(sys.stdin); print(\" \".join([v[\"groupVersion\"] for v in g[\"versions\"]] + [g[\"preferredVersion\"][\"groupVersion\"]]))'"

  # a v1beta3 manifest, as kubectl 1.28 users write them: created, answered as v1beta3, and
  # served at v1 too
  expect_eq "kubectl apply of a v1beta3 FlowSchema (validation on)" "flowschema.flowcontrol.apiserver.k8s.io/beta-made created" \
    k apply -f - <<'Y'
apiVersion: flowcontrol.apiserver.k8s.io/v1beta3
kind: FlowSchema
metadata: {name: beta-made}
spec:
  priorityLevelConfiguration: {name: workload-low}
  matchingPrecedence: 7000
  rules: [{subjects: [{kind: User, user: {name: nobody}}], nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]}]
Y
  expect_eq "read back at v1beta3 and at v1" "flowcontrol.apiserver.k8s.io/v1beta3 7000 flowcontrol.apiserver.k8s.io/v1 7000" \
    sh -c "echo \$($KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE get flowschemas.v1beta3.flowcontrol.apiserver.k8s.io beta-made -o jsonpath='{.apiVersion} {.spec.matchingPrecedence}') \$($KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE get flowschemas.v1.flowcontrol.apiserver.k8s.io beta-made -o jsonpath='{.apiVersion} {.spec.matchingPrecedence}')"
  k delete flowschema beta-made >/dev/null

  # the admin (system:masters) is exempt
  expect_eq "system:masters: the exempt FlowSchema's UID" "$(k get flowschema exempt -o jsonpath='{.metadata.uid}')" \
    pf_header /api/v1/namespaces X-Kubernetes-PF-FlowSchema-UID
  expect_eq "system:masters: the exempt level's UID" "$(k get prioritylevelconfiguration exempt -o jsonpath='{.metadata.uid}')" \
    pf_header /api/v1/namespaces X-Kubernetes-PF-PriorityLevel-UID

  # a level without seats (and no borrowing), one queue of one: 429 for its users
  k apply -f - >/dev/null <<'Y'
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: tiny}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 0
    borrowingLimitPercent: 0
    # queued, never dispatched (upstream admits a Reject level's request when none executes)
    limitResponse: {type: Queue, queuing: {queues: 1, handSize: 1, queueLengthLimit: 1}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: bob}
spec:
  priorityLevelConfiguration: {name: tiny}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: bob}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: lost}
spec:
  priorityLevelConfiguration: {name: nope}
Y
  local bob; bob=$(k get flowschema bob -o jsonpath='{.metadata.uid}')
  bob_rejected() { as_bob /api/v1/namespaces && grep -q "^HTTP/[0-9.]* 429" "$WORK/bob.headers"; }
  expect_ok "a user's level without seats answers 429 (no restart)" wait_until 20 bob_rejected
  expect_eq "the 429 names the user's FlowSchema" "$bob" bob_header X-Kubernetes-PF-FlowSchema-UID
  expect_out "the 429 carries Retry-After" "^[1-9][0-9]*$" bob_header Retry-After
  expect_eq "the 429's body is upstream's" "Too many requests, please try again later." cat "$WORK/bob.body"
  expect_ok "a FlowSchema naming a missing level is Dangling" \
    wait_until 20 dangling lost
  expect_out "kubectl get shows MISSINGPL True" "^lost +nope +1000 +<none> +[0-9a-z]+ +True$" \
    k get flowschema lost --no-headers

  # upstream's validation, word for word
  local cause
  for cause in 'spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer' \
    'spec.limited.limitResponse.queuing.handSize: Invalid value: 9: should not be greater than queues (4)' \
    'spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive'; do
    expect_fail "an invalid PriorityLevelConfiguration: ${cause%%:*}" "$cause" bad_level
  done
  expect_fail "the catch-all level's spec is fixed" "spec of 'catch-all' must equal the fixed value" \
    k patch prioritylevelconfiguration catch-all --type=merge -p '{"spec":{"limited":{"nominalConcurrencyShares":6}}}'
  expect_out "the debug dump lists the levels" "^PriorityLevelName" \
    k get --raw /debug/api_priority_and_fairness/dump_priority_levels

  if PY="$(py_env)"; then
    expect_out "python client: FlowcontrolApiserverV1Api" "^python ok$" env KUBECONFIG="$KUBECONFIG_FILE" "$PY/bin/python" - <<'PY'
from kubernetes import client, config
config.load_kube_config()
fc = client.FlowcontrolApiserverV1Api()
names = [f.metadata.name for f in fc.list_flow_schema().items]
assert "exempt" in names and "catch-all" in names and "bob" in names, names
pl = fc.read_priority_level_configuration("global-default")
assert pl.spec.type == "Limited" and pl.spec.limited.nominal_concurrency_shares == 20, pl.spec
assert pl.spec.limited.limit_response.queuing.queues == 128
made = fc.create_priority_level_configuration(client.V1PriorityLevelConfiguration(
    metadata=client.V1ObjectMeta(name="py-level"),
    spec=client.V1PriorityLevelConfigurationSpec(type="Limited", limited=client.V1LimitedPriorityLevelConfiguration(
        limit_response=client.V1LimitResponse(type="Queue", queuing=client.V1QueuingConfiguration())))))
q = made.spec.limited
assert (q.nominal_concurrency_shares, q.lendable_percent) == (30, 0), q
assert (q.limit_response.queuing.queues, q.limit_response.queuing.hand_size, q.limit_response.queuing.queue_length_limit) == (64, 8, 50)
status = fc.read_flow_schema_status("lost").status
assert [(c.type, c.status, c.reason) for c in status.conditions] == [("Dangling", "True", "NotFound")], status
fc.delete_priority_level_configuration("py-level")
print("python ok")
PY
  else
    fail "python client environment"
  fi
}

for backend in etcd embedded; do
  LABEL="flowcontrol-$backend"
  CACHE="$WORK/cache-$backend"
  if [ "$backend" = etcd ]; then start_kapi_on_etcd flowcontrol; else start_kapi_embedded flowcontrol; fi
  run_cases
done

LABEL="flowcontrol-off"
CACHE="$WORK/cache-off"
start_kapi_embedded off --enable-priority-and-fairness=false
expect_eq "--enable-priority-and-fairness=false: no APF headers" "" \
  pf_header /api/v1/namespaces X-Kubernetes-PF-FlowSchema-UID

summary

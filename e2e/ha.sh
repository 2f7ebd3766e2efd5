#!/usr/bin/env bash
# Several kapi replicas on a 3-member etcd cluster, on loopback: etcd members on free ports
# (one cluster, --initial-cluster), three kapi replicas bound to 127.0.0.1, .2 and .3 on one
# free port (the kubernetes endpoints list replicas by IP, as upstream's), sharing one
# certificate directory. 16 writers (e2e/python/ha_load.py) create ConfigMaps and NodePort
# Services through all replicas for ~20 s while a watcher on each replica records the ConfigMap
# events; meanwhile the controllers' leader replica and one etcd member are killed with -9.
# Then: every acknowledged object is there once, ClusterIPs and NodePorts are unique, the
# watchers saw one sequence, the controllers' Lease moved to a live replica, a write through
# one replica is read at once through another (kubectl), a CRD created through one is served
# by another, the kubernetes endpoints list the live replicas; with two etcd members stopped
# writes fail with a 5xx Status and /readyz fails, and both recover when the members return.
#
#   KAPI_BIN=path/to/kapi-apiserver e2e/ha.sh   (default: builds the debug binary)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=e2e/lib.sh
. "$ROOT/e2e/lib.sh"

e2e_init ha
declare -A ETCD_PID KAPI
TOKEN="ha-$$-$RANDOM"
LOAD_SECONDS="${HA_LOAD_SECONDS:-20}"

# --- etcd: three members -----------------------------------------------------------------
CLUSTER=""
for i in 1 2 3; do
  eval "EC$i=$(free_port) EP$i=$(free_port)"
  CLUSTER+="${CLUSTER:+,}e$i=http://127.0.0.1:$(eval echo \$EP$i)"
done
ETCD_SERVERS="http://127.0.0.1:$EC1,http://127.0.0.1:$EC2,http://127.0.0.1:$EC3"

# start_member I: starts (or restarts, on its data) etcd member I.
start_member() {
  local i=$1 c p
  c=$(eval echo "\$EC$i"); p=$(eval echo "\$EP$i")
  etcd --name "e$i" --data-dir "$WORK/etcd-$i" \
    --listen-client-urls "http://127.0.0.1:$c" --advertise-client-urls "http://127.0.0.1:$c" \
    --listen-peer-urls "http://127.0.0.1:$p" --initial-advertise-peer-urls "http://127.0.0.1:$p" \
    --initial-cluster "$CLUSTER" --initial-cluster-state new --initial-cluster-token "$TOKEN" \
    >>"$WORK/etcd-$i.log" 2>&1 &
  ETCD_PID[$i]=$!
  PIDS+=($!)
}
member_healthy() { curl -sf --max-time 2 "http://127.0.0.1:$(eval echo "\$EC$1")/health" | grep -q '"health":"true"'; }
for i in 1 2 3; do start_member "$i"; done
for i in 1 2 3; do
  wait_until 60 member_healthy "$i" || { echo "e2e: etcd member $i not healthy"; tail -20 "$WORK/etcd-$i.log"; exit 1; }
done

# --- kapi: three replicas ------------------------------------------------------------------
PORT=$(free_port)
PKI="$WORK/pki"
URLS=()
# start_replica I: kapi replica I on 127.0.0.I:$PORT.
start_replica() {
  local i=$1
  "$KAPI_BIN" --secure-port "$PORT" --bind-address "127.0.0.$i" --data-dir "$WORK/kapi-$i" \
    --cert-dir "$PKI" --tls-sans 127.0.0.1,127.0.0.2,127.0.0.3 \
    --etcd-servers "$ETCD_SERVERS" --service-cluster-ip-range 10.96.0.0/16 \
    >>"$WORK/kapi-$i.out" 2>>"$WORK/kapi-$i.log" &
  KAPI[$i]=$!
  PIDS+=($!)
  wait_until 60 curl -sf -o /dev/null --cacert "$PKI/ca.crt" "https://127.0.0.$i:$PORT/readyz" \
    || { echo "e2e: kapi replica $i not ready"; tail -20 "$WORK/kapi-$i.log"; exit 1; }
}
for i in 1 2 3; do start_replica "$i"; URLS+=("https://127.0.0.$i:$PORT"); done
# kr I ARGS...: kubectl against replica I.
kr() { local i=$1; shift; "$KUBECTL" --kubeconfig "$WORK/kapi-$i/admin.kubeconfig" --cache-dir "$CACHE-$i" "$@"; }
KUBECONFIG_FILE="$WORK/kapi-1/admin.kubeconfig"
use_dispatched_kubectl

# The replica whose log says it holds the controllers' Lease now.
leader_replica() {
  local i
  for i in 1 2 3; do
    kill -0 "${KAPI[$i]}" 2>/dev/null || continue
    [ "$(grep -c 'successfully acquired lease' "$WORK/kapi-$i.log")" -gt \
      "$(grep -c 'leader election lost' "$WORK/kapi-$i.log")" ] && { echo "$i"; return 0; }
  done
  return 1
}
lease_holder() { kr "$1" get lease -n kube-system kube-controller-manager -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }

wait_until 30 leader_replica >/dev/null
LEADER=$(leader_replica)
HOLDER=$(lease_holder 1)
expect_out "one replica holds kube-system/kube-controller-manager (<hostname>_<uuid>)" \
  '^[^_]+_[0-9a-f-]{36}$' echo "$HOLDER"
expect_eq "the Lease carries kube-controller-manager's durations" "15" \
  kr 2 get lease -n kube-system kube-controller-manager -o jsonpath='{.spec.leaseDurationSeconds}'
expect_eq "three apiserver identity leases" "3" \
  bash -c "'$KUBECTL' --kubeconfig '$WORK/kapi-3/admin.kubeconfig' get lease -n kube-system -l apiserver.kubernetes.io/identity=kube-apiserver -o name | grep -c '^lease.coordination.k8s.io/apiserver-'"
wait_until 30 bash -c "[ \"\$('$KUBECTL' --kubeconfig '$KUBECONFIG_FILE' get endpoints kubernetes -o jsonpath='{.subsets[0].addresses[*].ip}')\" = '127.0.0.1 127.0.0.2 127.0.0.3' ]"
expect_eq "the kubernetes endpoints list the three replicas" "127.0.0.1 127.0.0.2 127.0.0.3 $PORT" \
  bash -c "'$KUBECTL' --kubeconfig '$KUBECONFIG_FILE' get endpoints kubernetes -o jsonpath='{.subsets[0].addresses[*].ip} {.subsets[0].ports[0].port}'"
expect_eq "the kubernetes Service targets the replicas' secure port" "443 $PORT" \
  bash -c "'$KUBECTL' --kubeconfig '$KUBECONFIG_FILE' get service kubernetes -o jsonpath='{.spec.ports[0].port} {.spec.ports[0].targetPort}'"
expect_eq "and the kubernetes EndpointSlice too" "127.0.0.1 127.0.0.2 127.0.0.3" \
  kr 2 get endpointslice kubernetes -o jsonpath='{.endpoints[*].addresses[0]}'

# --- load, with a kapi replica and an etcd member killed ----------------------------------
kr 1 create ns ha >/dev/null
START_RV=$(kr 2 get --raw /api/v1/namespaces/ha/configmaps | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')
mkdir -p "$WORK/load"
SERVERS=$(IFS=,; echo "${URLS[*]}")
python3 e2e/python/ha_load.py --servers "$SERVERS" --ca "$PKI/ca.crt" --cert "$PKI/admin.crt" \
  --key "$PKI/admin.key" --ns ha --writers 16 --seconds "$LOAD_SECONDS" --watch-rv "$START_RV" \
  --out "$WORK/load" >"$WORK/load.out" 2>&1 &
LOAD=$!
PIDS+=($LOAD)
sleep "$((LOAD_SECONDS * 2 / 5))"
VICTIM=$LEADER
KILLED_MEMBER=3
kill -9 "${KAPI[$VICTIM]}"
KILLED_AT=$SECONDS
kill -9 "${ETCD_PID[$KILLED_MEMBER]}"
echo "killed kapi replica $VICTIM (the controllers' leader) and etcd member $KILLED_MEMBER"
LIVE=()
for i in 1 2 3; do [ "$i" != "$VICTIM" ] && LIVE+=("$i"); done
A=${LIVE[0]} B=${LIVE[1]}

# The Lease moves to a live replica: a new holder, written within a lease duration (15 s) and
# a few retry periods of the kill (polled, bounded).
moved() { local h; h=$(lease_holder "$A"); [ -n "$h" ] && [ "$h" != "$HOLDER" ]; }
if wait_until 25 moved; then
  pass "the controllers' Lease moved to a live replica ($((SECONDS - KILLED_AT)) s after the kill)"
else
  OUT="holder still $(lease_holder "$A")"; fail "the controllers' Lease moved to a live replica"
fi
NEW_LEADER=$(leader_replica)
expect_ok "the new holder is a live replica's elector" test -n "$NEW_LEADER" -a "$NEW_LEADER" != "$VICTIM"

wait "$LOAD"
cat "$WORK/load.out"
sort -u "$WORK"/load/acked-*.txt >"$WORK/acked.txt"
grep '^configmaps ' "$WORK/acked.txt" | cut -d' ' -f2 | sort >"$WORK/acked-cm.txt"
grep '^services ' "$WORK/acked.txt" | cut -d' ' -f2 | sort >"$WORK/acked-svc.txt"
kr "$A" get cm -n ha -o name | sed 's|^configmap/||' | grep '^w' | sort >"$WORK/have-cm.txt"
kr "$B" get svc -n ha -o json >"$WORK/svc.json"
python3 -c 'import json,sys; [print(s["metadata"]["name"]) for s in json.load(open(sys.argv[1]))["items"]]' "$WORK/svc.json" | sort >"$WORK/have-svc.txt"
echo "acknowledged: $(wc -l <"$WORK/acked-cm.txt") ConfigMaps, $(wc -l <"$WORK/acked-svc.txt") Services"
OUT="$(comm -23 "$WORK/acked-cm.txt" "$WORK/have-cm.txt" | head)"
expect_ok "no acknowledged ConfigMap is lost" test -z "$OUT" -a -s "$WORK/acked-cm.txt"
OUT="$(comm -23 "$WORK/acked-svc.txt" "$WORK/have-svc.txt" | head)"
expect_ok "no acknowledged Service is lost" test -z "$OUT" -a -s "$WORK/acked-svc.txt"
OUT="$(uniq -d "$WORK/have-cm.txt"; uniq -d "$WORK/have-svc.txt")"
expect_ok "every object is listed once" test -z "$OUT"
unique() {
  python3 - "$WORK/svc.json" <<'P'
import collections, json, sys
items = json.load(open(sys.argv[1]))["items"]
ips = collections.Counter(s["spec"].get("clusterIP") for s in items)
ports = collections.Counter(p.get("nodePort") for s in items for p in s["spec"]["ports"])
dups = [k for k, n in ips.items() if n > 1] + [k for k, n in ports.items() if n > 1]
print("duplicated: %s" % dups if dups else "%d services, all ClusterIPs and NodePorts unique" % len(items))
sys.exit(1 if dups else 0)
P
}
expect_out "ClusterIPs and NodePorts are unique across replicas" "all ClusterIPs and NodePorts unique" unique

# The watchers: the live replicas' sequences are one; the killed replica's is a prefix of it.
events() { grep -v '^#' "$WORK/load/watch-$(($1 - 1)).txt"; }
OUT="$(diff <(events "$A") <(events "$B") | head)"
expect_ok "the watchers on both live replicas saw the same event sequence" test -z "$OUT" -a -s "$WORK/load/watch-$((A - 1)).txt"
N=$(events "$VICTIM" | wc -l)
OUT="$(diff <(events "$VICTIM") <(events "$A" | head -n "$N") | head)"
expect_ok "the killed replica's watcher saw a prefix of it ($N events)" test -z "$OUT"
OUT="$(events "$A" | awk '{print $3}' | sort -n -c 2>&1)"
expect_ok "in resourceVersion order" test -z "$OUT"

# --- consistency across replicas ----------------------------------------------------------
kill -9 "${KAPI[$VICTIM]}" 2>/dev/null
start_member "$KILLED_MEMBER"
wait_until 60 member_healthy "$KILLED_MEMBER" || fail "etcd member $KILLED_MEMBER rejoined"
for n in 1 2 3 4 5; do
  kr "$A" create cm "x$n" -n ha --from-literal=n="$n" >/dev/null
  expect_eq "ConfigMap x$n written through replica $A is read at once through $B" "$n" \
    kr "$B" get cm "x$n" -n ha -o jsonpath='{.data.n}'
done
kr "$B" delete cm x1 -n ha >/dev/null
expect_out "a delete through $B is seen by a LIST on $A" '^x2$' \
  bash -c "'$KUBECTL' --kubeconfig '$WORK/kapi-$A/admin.kubeconfig' get cm -n ha -o name | sed 's|configmap/||' | grep '^x' | head -1"
CONT=$(kr "$A" get --raw "/api/v1/namespaces/ha/configmaps?limit=2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["continue"])')
expect_out "a continue token from $A works on $B" '"kind":"ConfigMapList"' \
  kr "$B" get --raw "/api/v1/namespaces/ha/configmaps?limit=2&continue=$CONT"
kr "$A" apply -f - >/dev/null <<'Y'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.ha.example.com}
spec:
  group: ha.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
Y
widget_on_b() {
  kr "$B" apply -f - >/dev/null 2>&1 <<'Y'
apiVersion: ha.example.com/v1
kind: Widget
metadata: {name: w1, namespace: ha}
spec: {size: 3}
Y
}
if wait_until 20 widget_on_b; then pass "a CRD created through $A is served by $B"; else fail "a CRD created through $A is served by $B"; fi
expect_eq "and its object is read through $A" "3" kr "$A" get widget w1 -n ha -o jsonpath='{.spec.size}'
kr "$A" apply -f - >/dev/null <<'Y'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: ha-no-forbidden}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  validations:
  - expression: "!has(object.data) || !('forbidden' in object.data)"
    message: no forbidden key
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: ha-no-forbidden}
spec:
  policyName: ha-no-forbidden
  validationActions: [Deny]
Y
denied_on_b() { ! kr "$B" create cm denied -n ha --from-literal=forbidden=1 >/dev/null 2>&1; }
if wait_until 20 denied_on_b; then pass "a ValidatingAdmissionPolicy created through $A takes effect on $B"; else fail "a ValidatingAdmissionPolicy created through $A takes effect on $B"; fi
kr "$A" delete validatingadmissionpolicybinding ha-no-forbidden >/dev/null
wait_until 30 bash -c "[ \"\$('$KUBECTL' --kubeconfig '$WORK/kapi-$A/admin.kubeconfig' get endpoints kubernetes -o jsonpath='{.subsets[0].addresses[*].ip}')\" = '$(printf '127.0.0.%s\n' "$A" "$B" | sort | xargs)' ]"
expect_eq "the kubernetes endpoints dropped the killed replica" "$(printf '127.0.0.%s\n' "$A" "$B" | sort | xargs)" \
  kr "$B" get endpoints kubernetes -o jsonpath='{.subsets[0].addresses[*].ip}'

# --- quorum loss and recovery -------------------------------------------------------------
kill "${ETCD_PID[1]}" "${ETCD_PID[2]}"
wait "${ETCD_PID[1]}" "${ETCD_PID[2]}" 2>/dev/null
write_status() {
  curl -s --max-time 70 -o "$WORK/q.json" -w '%{http_code}' --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" \
    --key "$PKI/admin.key" -H 'Content-Type: application/json' -X POST \
    "https://127.0.0.$1:$PORT/api/v1/namespaces/ha/configmaps" \
    -d "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"$2\"}}"
}
CODE=$(write_status "$A" quorum-lost)
OUT="$CODE $(tr -d '\n ' <"$WORK/q.json")"
expect_out "a write without quorum fails with a 5xx Status" '^5[0-9][0-9] .*"kind":"Status"' echo "$OUT"
readyz() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 --cacert "$PKI/ca.crt" "https://127.0.0.$1:$PORT/readyz"; }
expect_eq "/readyz fails without quorum" "500" readyz "$B"
expect_out "its etcd check says so" '\[-\]etcd failed' \
  curl -s --max-time 10 --cacert "$PKI/ca.crt" "https://127.0.0.$B:$PORT/readyz?verbose"
start_member 1
start_member 2
ready_again() { [ "$(readyz "$1")" = 200 ]; }
if wait_until 60 ready_again "$A" && wait_until 30 ready_again "$B"; then
  pass "/readyz recovers by itself when quorum returns"
else
  fail "/readyz recovers by itself when quorum returns"
fi
expect_eq "writes succeed again" "201" write_status "$B" quorum-back

summary

#!/usr/bin/env bash
# Built-in controllers end-to-end: real kapi (on etcd, then on the embedded store), real kubectl.
# `kubectl delete ns --wait` of a namespace holding ConfigMaps, Secrets, a Deployment and a
# custom object returns once the namespace is gone; `kubectl delete --cascade=background|
# foreground|orphan` of an owner ConfigMap collects or keeps its dependents; a dependent of an
# owner that never existed is collected, also when its kind is served only later; a finalizer on a dependent holds a foreground owner
# until it is removed; a ResourceQuota's status follows its spec and gives back what deletes
# and finished pods free; a finished Job with ttlSecondsAfterFinished is deleted; with `--controllers=-*` a deleted namespace stays Terminating.
#
#   KAPI_BIN=path/to/kapi-apiserver e2e/controllers.sh   (default: builds the debug binary)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=e2e/lib.sh
. "$ROOT/e2e/lib.sh"

e2e_init controllers
e2e_start_etcd

# gone KIND NAME [NS]: true when kubectl finds no such object.
gone() {
  local ns=()
  [ $# -ge 3 ] && ns=(-n "$3")
  [ -z "$(k get "$1" "$2" "${ns[@]}" --ignore-not-found -o name 2>/dev/null)" ]
}

# uid KIND NAME NS: the object's uid.
uid() { k get "$1" "$2" -n "$3" -o jsonpath='{.metadata.uid}'; }

# dependent NAME NS OWNER-NAME OWNER-UID [BLOCK]: a ConfigMap owned by the ConfigMap OWNER.
dependent() {
  k apply -f - >/dev/null <<Y
apiVersion: v1
kind: ConfigMap
metadata:
  name: $1
  namespace: $2
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: $3, uid: "$4", blockOwnerDeletion: ${5:-false}}
Y
}

run_cases() {
  local N="ctl-$1"
  expect_out "namespace created" "^namespace/$N created$" k create ns "$N"
  k create configmap a -n "$N" --from-literal=k=v >/dev/null
  k create configmap b -n "$N" --from-literal=k=v >/dev/null
  k create secret generic s -n "$N" --from-literal=k=v >/dev/null
  k create deployment d -n "$N" --image=nginx >/dev/null
  if [ "$(k get crd crontabs.ctl.example.com -o name 2>/dev/null)" = "" ]; then
    k apply -f - >/dev/null <<Y
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.ctl.example.com}
spec:
  group: ctl.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
Y
    wait_until 30 k get crontabs -A >/dev/null 2>&1
  fi
  k apply -f - >/dev/null <<Y
apiVersion: ctl.example.com/v1
kind: CronTab
metadata: {name: c, namespace: $N}
spec: {x: 1}
Y
  expect_out "namespace content is there" "crontab.ctl.example.com/c" k get crontabs -n "$N" -o name
  expect_out "kubectl delete ns --wait returns" "^namespace \"$N\" deleted$" \
    timeout 20 "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$CACHE" delete ns "$N" --wait
  expect_ok "the namespace is gone" gone ns "$N"

  local G="gc-$1"
  k create ns "$G" >/dev/null
  # Background: dependents go after the owner.
  k create configmap owner-bg -n "$G" >/dev/null
  dependent dep-bg-1 "$G" owner-bg "$(uid cm owner-bg "$G")"
  dependent dep-bg-2 "$G" owner-bg "$(uid cm owner-bg "$G")"
  expect_ok "background: owner deleted" k delete cm owner-bg -n "$G" --cascade=background
  expect_ok "background: dependents collected" \
    wait_until 20 eval "gone cm dep-bg-1 $G && gone cm dep-bg-2 $G"

  # Foreground: the owner goes after its blocking dependents.
  k create configmap owner-fg -n "$G" >/dev/null
  dependent dep-fg "$G" owner-fg "$(uid cm owner-fg "$G")" true
  expect_ok "foreground: delete --wait returns" \
    timeout 20 "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$CACHE" delete cm owner-fg -n "$G" --cascade=foreground --wait
  expect_ok "foreground: owner and dependent gone" eval "gone cm owner-fg $G && gone cm dep-fg $G"

  # Orphan: dependents stay, without the reference.
  k create configmap owner-or -n "$G" >/dev/null
  dependent dep-or "$G" owner-or "$(uid cm owner-or "$G")"
  expect_ok "orphan: owner deleted" k delete cm owner-or -n "$G" --cascade=orphan
  expect_ok "orphan: owner gone" wait_until 20 gone cm owner-or "$G"
  expect_eq "orphan: dependent kept without its reference" "" \
    k get cm dep-or -n "$G" -o jsonpath='{.metadata.ownerReferences}'

  # A dependent of an owner that never existed.
  dependent dep-ghost "$G" ghost 00000000-0000-0000-0000-000000000000
  expect_ok "dangling: dependent of a never-existing owner collected" \
    wait_until 20 gone cm dep-ghost "$G"

  # A dependent whose owner's kind is served only later (its CRD created after it): checked
  # again once the kind is served, not at the next resync.
  k apply -f - >/dev/null <<Y
apiVersion: v1
kind: ConfigMap
metadata:
  name: dep-late
  namespace: $G
  ownerReferences:
  - {apiVersion: late.example.com/v1, kind: Gadget, name: ghost, uid: 00000000-0000-0000-0000-000000000001}
Y
  sleep 1
  expect_ok "late kind: dependent kept while the owner's kind is not served" k get cm dep-late -n "$G"
  k apply -f - >/dev/null <<Y
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.late.example.com}
spec:
  group: late.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
Y
  expect_ok "late kind: dependent of a missing owner collected once its CRD is served" \
    wait_until 20 gone cm dep-late "$G"
  k delete crd gadgets.late.example.com --wait=false >/dev/null

  # A finalizer on a dependent holds the foreground owner.
  k create configmap owner-held -n "$G" >/dev/null
  dependent dep-held "$G" owner-held "$(uid cm owner-held "$G")" true
  k patch cm dep-held -n "$G" --type=merge -p '{"metadata":{"finalizers":["example.com/hold"]}}' >/dev/null
  expect_ok "held: foreground delete accepted" \
    k delete cm owner-held -n "$G" --cascade=foreground --wait=false
  sleep 1
  expect_out "held: owner waits with foregroundDeletion" "foregroundDeletion" \
    k get cm owner-held -n "$G" -o jsonpath='{.metadata.finalizers}'
  k patch cm dep-held -n "$G" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
  expect_ok "held: owner gone once the finalizer is removed" \
    wait_until 20 eval "gone cm owner-held $G && gone cm dep-held $G"
  k delete ns "$G" --wait=false >/dev/null

  # Resource quota: status follows spec, and what deletes free is given back.
  local Q="quota-$1"
  k create ns "$Q" >/dev/null
  wait_until 20 k get cm kube-root-ca.crt -n "$Q" >/dev/null 2>&1
  k create configmap qa -n "$Q" >/dev/null
  expect_out "quota created" "^resourcequota/q created$" \
    k create quota q -n "$Q" --hard=configmaps=5,count/secrets=3,pods=2,count/crontabs.ctl.example.com=4
  used() { k get quota q -n "$Q" -o go-template="{{index .status.used \"$1\"}}"; }
  expect_ok "quota: status.used computed for every hard name" \
    wait_until 20 eval '[ "$(used configmaps)" = 2 ] && [ "$(used pods)" = 0 ] && [ "$(used count/secrets)" = 0 ]'
  expect_eq "quota: status.hard is spec.hard" "$(k get quota q -n "$Q" -o jsonpath='{.spec.hard}')" \
    k get quota q -n "$Q" -o jsonpath='{.status.hard}'
  k create configmap qb -n "$Q" >/dev/null
  k create secret generic qs -n "$Q" --from-literal=k=v >/dev/null
  expect_ok "quota: creates charged" \
    wait_until 20 eval '[ "$(used configmaps)" = 3 ] && [ "$(used count/secrets)" = 1 ]'
  k delete configmap qa qb -n "$Q" >/dev/null
  k delete secret qs -n "$Q" >/dev/null
  expect_ok "quota: deletes given back" \
    wait_until 20 eval '[ "$(used configmaps)" = 1 ] && [ "$(used count/secrets)" = 0 ]'
  k apply -f - >/dev/null <<Y
apiVersion: ctl.example.com/v1
kind: CronTab
metadata: {name: qc, namespace: $Q}
spec: {x: 1}
Y
  expect_ok "quota: custom objects counted" \
    wait_until 20 eval '[ "$(used count/crontabs.ctl.example.com)" = 1 ]'
  k delete crontab qc -n "$Q" >/dev/null
  expect_ok "quota: custom object delete given back" \
    wait_until 20 eval '[ "$(used count/crontabs.ctl.example.com)" = 0 ]'
  wait_until 20 k get sa default -n "$Q" >/dev/null 2>&1
  k run qp -n "$Q" --image=nginx --restart=Never >/dev/null
  expect_ok "quota: pod charged" wait_until 20 eval '[ "$(used pods)" = 1 ]'
  k patch pod qp -n "$Q" --subresource=status --type=merge -p '{"status":{"phase":"Succeeded"}}' >/dev/null
  expect_ok "quota: a finished pod no longer counts" wait_until 20 eval '[ "$(used pods)" = 0 ]'
  k patch quota q -n "$Q" --type=merge -p '{"spec":{"hard":{"services":"2"}}}' >/dev/null
  expect_ok "quota: a new hard name gets its usage" \
    wait_until 20 eval '[ "$(used services)" = 0 ] && [ "$(k get quota q -n "$Q" -o jsonpath="{.status.hard.services}")" = 2 ]'
  expect_out "quota: kubectl describe shows used and hard" "configmaps +1 +5" \
    k describe quota q -n "$Q"
  k delete ns "$Q" --wait=false >/dev/null

  # TTL after finished: a Job whose Complete condition is true goes ttlSecondsAfterFinished later.
  local T="ttl-$1" now
  k create ns "$T" >/dev/null
  k create job done -n "$T" --image=busybox >/dev/null
  k create job kept -n "$T" --image=busybox >/dev/null
  k patch job done kept -n "$T" --type=merge -p '{"spec":{"ttlSecondsAfterFinished":1}}' >/dev/null
  now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  expect_ok "ttl: a Job marked Complete through /status" \
    k patch job done -n "$T" --subresource=status --type=merge -p "{\"status\":{\"startTime\":\"$now\",\"completionTime\":\"$now\",\"succeeded\":1,\"conditions\":[{\"type\":\"SuccessCriteriaMet\",\"status\":\"True\",\"lastTransitionTime\":\"$now\"},{\"type\":\"Complete\",\"status\":\"True\",\"lastTransitionTime\":\"$now\"}]}}"
  expect_ok "ttl: the finished Job is deleted after its TTL" wait_until 20 gone job done "$T"
  expect_out "ttl: an unfinished Job stays" "^job.batch/kept$" k get job kept -n "$T" -o name
  k delete ns "$T" --wait=false >/dev/null
}

for backend in etcd embedded; do
  LABEL="controllers-$backend"
  CACHE="$WORK/cache-$backend"
  if [ "$backend" = etcd ]; then start_kapi_on_etcd controllers; else start_kapi_embedded controllers; fi
  run_cases "$backend"
done

# With every controller off, kapi is an API server alone: a namespace stays Terminating.
LABEL="controllers-off"
CACHE="$WORK/cache-off"
start_kapi_embedded off --controllers=-*
k create ns stays >/dev/null
k delete ns stays --wait=false >/dev/null
sleep 1
expect_eq "--controllers=-*: a deleted namespace stays Terminating" "Terminating" \
  k get ns stays -o jsonpath='{.status.phase}'
expect_eq "--controllers=-*: no default ServiceAccount" "" \
  k get sa default -n stays --ignore-not-found -o name

summary

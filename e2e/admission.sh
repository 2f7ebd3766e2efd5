#!/usr/bin/env bash
# Admission end-to-end: real etcd, real kapi (restarted with different admission flags), real
# kubectl. Shows AlwaysPullImages, AlwaysDeny, NamespaceLifecycle, LimitRanger and ResourceQuota
# at work, ServiceAccount (with the controllers that give every namespace its default account and
# kube-root-ca.crt), Priority, LimitRange ratios, compute quotas, an unknown plugin failing
# start-up, and the admission histograms at /metrics.
#
#   KAPI_BIN=path/to/kapi-apiserver e2e/admission.sh   (default: builds the debug binary)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=e2e/lib.sh
. "$ROOT/e2e/lib.sh"

e2e_init admission
e2e_start_etcd

pod() { printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{"initContainers":[{"name":"init","image":"busybox","imagePullPolicy":"IfNotPresent"}],"containers":[{"name":"a","image":"nginx","imagePullPolicy":"Never"},{"name":"b","image":"redis"}]}}' "$1"; }

# 1. AlwaysPullImages.
start_kapi_on_etcd pull --enable-admission-plugins=AlwaysPullImages
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

# 4. ResourceQuota (default on). Every namespace holds kube-root-ca.crt, which counts as one
# configmap, as on any cluster: a quota of three leaves room for two more.
expect_ok "create a count/configmaps quota" k create namespace q
expect_ok "kube-root-ca.crt is published in it" wait_until 20 k get configmap kube-root-ca.crt -n q
expect_ok "quota of three configmaps" k create quota cmq -n q --hard=count/configmaps=3
expect_ok "first configmap" k create configmap c1 -n q
expect_ok "second configmap" k create configmap c2 -n q
expect_fail "third configmap exceeds quota" \
  'configmaps "c3" is forbidden: exceeded quota: cmq, requested: count/configmaps=1, used: count/configmaps=3, limited: count/configmaps=3' \
  k create configmap c3 -n q
expect_eq "quota status shows the usage" "3" k get quota cmq -n q -o 'jsonpath={.status.used.count/configmaps}'

# 5. ServiceAccount (default on): the default account and kube-root-ca.crt appear in a new
# namespace, and a pod gets the account, the projected token volume and its mounts.
expect_ok "create namespace sa" k create namespace sa
expect_ok "the default service account appears" wait_until 20 k get serviceaccount default -n sa
expect_ok "kube-root-ca.crt appears" wait_until 20 k get configmap kube-root-ca.crt -n sa
expect_out "kube-root-ca.crt holds the CA" 'BEGIN CERTIFICATE' k get configmap kube-root-ca.crt -n sa -o 'jsonpath={.data.ca\.crt}'
expect_ok "create a pod with an init container" k create -n sa -f - <<<"$(pod sa-pod)"
expect_eq "the pod runs as the default account" "default default" \
  k get pod sa-pod -n sa -o 'jsonpath={.spec.serviceAccountName} {.spec.serviceAccount}'
expect_out "the projected token volume is added" '^kube-api-access-[a-z0-9]{5}$' \
  k get pod sa-pod -n sa -o 'jsonpath={.spec.volumes[0].name}'
expect_eq "token, CA and namespace are projected" "3607 kube-root-ca.crt metadata.namespace" \
  k get pod sa-pod -n sa -o 'jsonpath={.spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds} {.spec.volumes[0].projected.sources[1].configMap.name} {.spec.volumes[0].projected.sources[2].downwardAPI.items[0].fieldRef.fieldPath}'
expect_eq "every container mounts the token read-only" \
  "/var/run/secrets/kubernetes.io/serviceaccount:true /var/run/secrets/kubernetes.io/serviceaccount:true /var/run/secrets/kubernetes.io/serviceaccount:true " \
  k get pod sa-pod -n sa -o 'jsonpath={range .spec.initContainers[*]}{.volumeMounts[0].mountPath}:{.volumeMounts[0].readOnly} {end}{range .spec.containers[*]}{.volumeMounts[0].mountPath}:{.volumeMounts[0].readOnly} {end}'
expect_ok "automountServiceAccountToken: false is honoured" k run quiet -n sa --image=nginx \
  --overrides='{"spec":{"automountServiceAccountToken":false}}'
expect_eq "no token volume when automount is off" "" k get pod quiet -n sa -o 'jsonpath={.spec.volumes}'
expect_fail "a missing service account is refused" \
  'pods "ghost" is forbidden: error looking up service account sa/ghost: serviceaccount "ghost" not found' \
  k run ghost -n sa --image=nginx --overrides='{"spec":{"serviceAccountName":"ghost"}}'
expect_eq "DefaultTolerationSeconds adds the not-ready and unreachable tolerations" \
  "node.kubernetes.io/not-ready:300 node.kubernetes.io/unreachable:300 " \
  k get pod sa-pod -n sa -o 'jsonpath={range .spec.tolerations[*]}{.key}:{.tolerationSeconds} {end}'

# 6. Priority (default on).
expect_ok "create a PriorityClass" k create priorityclass high --value=1000 --preemption-policy=Never
expect_ok "create a pod naming it" k run prio -n sa --image=nginx --overrides='{"spec":{"priorityClassName":"high"}}'
expect_eq "the class's value and policy land on the pod" "high 1000 Never" \
  k get pod prio -n sa -o 'jsonpath={.spec.priorityClassName} {.spec.priority} {.spec.preemptionPolicy}'
expect_eq "a pod naming no class gets priority 0" "0 PreemptLowerPriority" \
  k get pod quiet -n sa -o 'jsonpath={.spec.priority} {.spec.preemptionPolicy}'
expect_ok "a system class resolves" k run critical -n kube-system --image=nginx --overrides='{"spec":{"priorityClassName":"system-cluster-critical"}}'
expect_eq "system-cluster-critical is 2000000000" "2000000000" k get pod critical -n kube-system -o 'jsonpath={.spec.priority}'
expect_fail "a missing PriorityClass is refused" \
  'pods "noprio" is forbidden: no PriorityClass with name nope was found' \
  k run noprio -n sa --image=nginx --overrides='{"spec":{"priorityClassName":"nope"}}'

# rpod NAME CPU_REQUEST CPU_LIMIT MEMORY: a pod with one container of those resources.
rpod() { printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"%s","memory":"%s"},"limits":{"cpu":"%s","memory":"%s"}}}]}}' "$1" "$2" "$4" "$3" "$4"; }

# 7. LimitRanger ratio.
expect_ok "create namespace ratio" k create namespace ratio
expect_ok "a LimitRange with a cpu ratio of 2" k apply -n ratio -f - <<'YAML'
apiVersion: v1
kind: LimitRange
metadata: {name: ratio}
spec:
  limits:
  - type: Container
    maxLimitRequestRatio: {cpu: "2"}
YAML
expect_fail "a limit four times the request is refused" \
  'pods "wide" is forbidden: cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000' \
  k create -n ratio -f - <<<"$(rpod wide 250m 1 64Mi)"
expect_ok "a limit twice the request is admitted" k create -n ratio -f - <<<"$(rpod narrow 500m 1 64Mi)"

# 8. Compute quota.
expect_ok "create namespace cq" k create namespace cq
expect_ok "a compute quota" k create quota compute -n cq --hard=requests.cpu=1,limits.memory=1Gi,pods=5
expect_ok "a pod within the quota" k create -n cq -f - <<<"$(rpod small 600m 600m 512Mi)"
expect_eq "quota status shows the compute usage" "600m 512Mi 1" \
  k get quota compute -n cq -o 'jsonpath={.status.used.requests\.cpu} {.status.used.limits\.memory} {.status.used.pods}'
expect_fail "a pod beyond the cpu quota is refused" \
  'pods "big" is forbidden: exceeded quota: compute, requested: requests.cpu=500m, used: requests.cpu=600m, limited: requests.cpu=1' \
  k create -n cq -f - <<<"$(rpod big 500m 500m 128Mi)"
expect_fail "a pod without resources must specify them" \
  'pods "bare" is forbidden: failed quota: compute: must specify limits.memory for: bare; requests.cpu for: bare' \
  k run bare -n cq --image=nginx

# 9. Metrics.
expect_out "per-plugin histogram at /metrics" 'apiserver_admission_controller_admission_duration_seconds_count\{name="ResourceQuota",operation="CREATE",rejected="true",type="validate"\}' k get --raw /metrics
expect_out "per-step histogram at /metrics" 'apiserver_admission_step_admission_duration_seconds_count\{operation="CREATE",rejected="false",type="admit"\}' k get --raw /metrics
expect_out "AlwaysPullImages timed at /metrics" 'apiserver_admission_controller_admission_duration_seconds_count\{name="AlwaysPullImages"' k get --raw /metrics

# 10. AlwaysDeny: refused with 403 and nothing stored.
start_kapi_on_etcd deny --enable-admission-plugins=AlwaysDeny
expect_fail "AlwaysDeny refuses a create" 'configmaps "d" is forbidden: admission control is denying all modifications' k create configmap d
expect_fail "the refusal is a 403 Forbidden" '403 Forbidden' k create configmap d -v=6
expect_fail "nothing was stored" 'configmaps "d" not found' k get configmap d

# 11. Start-up failures name the plugin.
expect_fail "an unknown plugin fails start-up" 'NoSuchPlugin' \
  timeout 20 "$KAPI_BIN" --secure-port "$(free_port)" --data-dir "$WORK/bad" --enable-admission-plugins=NoSuchPlugin
expect_fail "a plugin in both flags fails start-up" 'LimitRanger' \
  timeout 20 "$KAPI_BIN" --secure-port "$(free_port)" --data-dir "$WORK/bad2" --enable-admission-plugins=LimitRanger --disable-admission-plugins=LimitRanger

expect_fail "a plugin kapi cannot honour fails start-up saying why" \
  'admission plugin "ImagePolicyWebhook" is not supported by kapi: image review webhooks are not implemented' \
  timeout 20 "$KAPI_BIN" --secure-port "$(free_port)" --data-dir "$WORK/bad3" --enable-admission-plugins=ImagePolicyWebhook
expect_fail "EventRateLimit without its configuration fails start-up" \
  'admission plugin "EventRateLimit": invalid configuration: no configuration was provided' \
  timeout 20 "$KAPI_BIN" --secure-port "$(free_port)" --data-dir "$WORK/bad4" --enable-admission-plugins=EventRateLimit

summary

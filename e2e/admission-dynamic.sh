#!/usr/bin/env bash
# Dynamic admission end-to-end: kapi on etcd and on the embedded store, real kubectl, and a
# webhook server started here (its own CA, caBundle, loopback). Shows validating webhooks
# (deny by label, other namespaces unaffected, UPDATE carries oldObject, dryRun flag,
# warnings, match conditions), a mutating webhook's JSONPatch persisted and an IfNeeded
# webhook reinvoked, failurePolicy Ignore and Fail with a dead, a slow and a misbehaving
# webhook (and that a slow webhook stalls nothing else), ValidatingAdmissionPolicy with params
# and a binding (Deny), a Warn binding and its status, CEL's authorizer (RBAC), cel.bind,
# type() and dyn() at run time, non-bool validations refused, type checking of built-in kinds
# and of a policy written before its CRD, matchPolicy Equivalent's conversion of a CRD's
# versions, the Table columns, the webhook metrics, the official Python client's view, and
# --disable-admission-plugins switching them off.
#
#   KAPI_BIN=path/to/kapi-apiserver e2e/admission-dynamic.sh   (default: builds the debug binary)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=e2e/lib.sh
. "$ROOT/e2e/lib.sh"

e2e_init admission-dynamic
e2e_start_etcd

# The webhook's CA and serving certificate (IP SAN 127.0.0.1).
PKI="$WORK/webhook-pki"; mkdir -p "$PKI" "$WORK/record"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=e2e webhook CA" \
  -keyout "$PKI/ca.key" -out "$PKI/ca.crt" >/dev/null 2>&1
openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$PKI/tls.key" -out "$PKI/tls.csr" >/dev/null 2>&1
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >"$PKI/ext"
openssl x509 -req -in "$PKI/tls.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
  -days 1 -extfile "$PKI/ext" -out "$PKI/tls.crt" >/dev/null 2>&1
CA_BUNDLE="$(base64 -w0 <"$PKI/ca.crt")"
HOOK_PORT=$(free_port)
python3 "$ROOT/e2e/webhook/server.py" "$HOOK_PORT" "$PKI/tls.crt" "$PKI/tls.key" "$WORK/record" &
PIDS+=($!)
wait_until 20 bash -c "python3 -c \"import socket; socket.create_connection(('127.0.0.1', $HOOK_PORT))\" 2>/dev/null" \
  || { echo "e2e: webhook server did not start"; exit 1; }
DEAD_PORT=$(free_port)
URL="https://127.0.0.1:$HOOK_PORT"

# hook NAME PATH POLICY [TIMEOUT] [OBJECT-LABEL]: one webhook entry on configmaps.
hook() {
  cat <<YAML
- name: $1
  clientConfig: {url: "${6:-$URL}/$2", caBundle: "$CA_BUNDLE"}
  rules: [{operations: [CREATE, UPDATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  namespaceSelector: {matchLabels: {webhooks: "on"}}
  objectSelector: {matchLabels: {hook: "${5:-$2}"}}
  failurePolicy: $3
  timeoutSeconds: ${4:-10}
  sideEffects: None
  admissionReviewVersions: [v1]
YAML
}


suite() {
  LABEL=$1
  k create namespace wh >/dev/null && k label namespace wh webhooks=on >/dev/null
  k create namespace other >/dev/null && k label namespace other webhooks=on >/dev/null
  k create namespace plain >/dev/null

  # 1. The API, its defaults and validation.
  expect_ok "create a validating webhook configuration" k apply -f - <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: deny-by-label}
webhooks:
- name: deny.kapi.test
  clientConfig: {url: "$URL/validate", caBundle: "$CA_BUNDLE"}
  rules: [{operations: [CREATE, UPDATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  namespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: [wh]}]}
  matchConditions: [{name: not-exempt, expression: "object.metadata.name != 'exempt'"}]
  sideEffects: None
  admissionReviewVersions: [v1]
YAML
  expect_eq "upstream defaults are set" "Fail Equivalent 10 *" \
    k get validatingwebhookconfiguration deny-by-label -o 'jsonpath={.webhooks[0].failurePolicy} {.webhooks[0].matchPolicy} {.webhooks[0].timeoutSeconds} {.webhooks[0].rules[0].scope}'
  expect_out "kubectl get shows WEBHOOKS" "NAME +WEBHOOKS +AGE" k get validatingwebhookconfigurations
  expect_out "one webhook counted" "deny-by-label +1 " k get validatingwebhookconfigurations
  expect_fail "sideEffects is required" 'webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun' k apply -f - <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: bad}
webhooks:
- name: bad.kapi.test
  clientConfig: {url: "http://127.0.0.1/x"}
  admissionReviewVersions: [v1]
  timeoutSeconds: 31
YAML
  expect_out "timeout, scheme and names are checked" "timeout value must be between 1 and 30 seconds" printf '%s' "$OUT"
  expect_out "https is required" "'https' is the only allowed URL scheme" printf '%s' "$OUT"
  expect_out "discovery lists the four resources" "validatingadmissionpolicybindings" k api-resources --api-group=admissionregistration.k8s.io

  # 2. Validating: deny by label, effective without a restart, only where selected.
  deny_cm() { ! k create configmap d1 -n wh --dry-run=server -o name --from-literal=a=b 2>/dev/null >/dev/null || return 1; }
  expect_ok "configuration takes effect within seconds" wait_until 5 bash -c \
    "! '$KUBECTL' --kubeconfig '$KUBECONFIG_FILE' --cache-dir '$CACHE' apply -n wh -f - <<<'{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"probe\",\"labels\":{\"deny\":\"true\"}}}' >/dev/null 2>&1"
  expect_fail "labelled configmap denied in wh" \
    'admission webhook "deny.kapi.test" denied the request: label deny=true is not allowed' \
    k apply -n wh -f - <<<'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"denied","labels":{"deny":"true"}}}'
  expect_ok "a false matchCondition skips the webhook" \
    k apply -n wh -f - <<<'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"exempt","labels":{"deny":"true"}}}'
  expect_ok "same configmap allowed in another namespace" \
    k apply -n plain -f - <<<'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"denied","labels":{"deny":"true"}}}'
  expect_out "webhook warnings reach kubectl" "Warning: validated by the test webhook" k create configmap ok1 -n wh --from-literal=a=b
  expect_ok "label it (an UPDATE)" k label configmap ok1 -n wh color=blue
  expect_eq "UPDATE carries oldObject and the new object" "UPDATE ok1 blue none" python3 -c "
import json; r=json.load(open('$WORK/record/validate.json'))['request']
print(r['operation'], r['oldObject']['metadata']['name'], r['object']['metadata']['labels']['color'], r['oldObject']['metadata'].get('labels', {}).get('color', 'none'))"
  expect_fail "an UPDATE to a denied label is refused" 'denied the request' k label configmap ok1 -n wh deny=true
  expect_ok "a server dry-run create" k create configmap dry -n wh --from-literal=a=b --dry-run=server
  expect_eq "the review says dryRun and names the user" "True CREATE dry True" python3 -c "
import json; r=json.load(open('$WORK/record/validate.json'))['request']
print(r['dryRun'], r['operation'], r['name'], bool(r['userInfo']['username']))"
  expect_fail "dry-run is not written" 'not found' k get configmap dry -n wh

  # 3. Mutating: a JSONPatch label, persisted.
  expect_ok "create a mutating webhook configuration" k apply -f - <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: add-label}
webhooks:
$(hook mutate.kapi.test mutate Fail)
  reinvocationPolicy: IfNeeded
YAML
  expect_eq "reinvocationPolicy kept, others defaulted" "IfNeeded Equivalent" \
    k get mutatingwebhookconfiguration add-label -o 'jsonpath={.webhooks[0].reinvocationPolicy} {.webhooks[0].matchPolicy}'
  sleep 1
  expect_ok "create a configmap for the mutating webhook" \
    k apply -n wh -f - <<<'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m1","labels":{"hook":"mutate"}}}'
  expect_eq "the webhook's label is persisted" "true" k get configmap m1 -n wh -o 'jsonpath={.metadata.labels.mutated}'
  expect_ok "a second mutating webhook, ordered after the first" k apply -f - <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: zz-second}
webhooks:
$(hook second.kapi.test mutate2 Fail 10 mutate)
YAML
  sleep 1
  expect_ok "create through both mutating webhooks" \
    k apply -n wh -f - <<<'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m2","labels":{"hook":"mutate"}}}'
  expect_eq "both labels persisted" "true true" k get configmap m2 -n wh -o 'jsonpath={.metadata.labels.mutated} {.metadata.labels.second}'
  expect_eq "the IfNeeded webhook was reinvoked after the later change" "true" python3 -c "
import json; r=json.load(open('$WORK/record/mutate.json'))['request']
print(r['object']['metadata']['labels'].get('second', 'missing'))"
  expect_ok "remove the second mutating webhook" k delete mutatingwebhookconfiguration zz-second

  # 4. failurePolicy with a dead webhook, a slow one and misbehaving ones.
  expect_ok "configure failing webhooks" k apply -f - <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: failing}
webhooks:
$(hook dead-ignore.kapi.test dead Ignore 10 dead-ignore "https://127.0.0.1:$DEAD_PORT")
$(hook dead-fail.kapi.test dead Fail 10 dead-fail "https://127.0.0.1:$DEAD_PORT")
$(hook slow-ignore.kapi.test slow Ignore 1 slow-ignore)
$(hook slow-fail.kapi.test slow Fail 2 slow-fail)
$(hook garbage.kapi.test garbage Fail)
$(hook wronguid.kapi.test wronguid Fail)
$(hook status500.kapi.test status500 Fail)
YAML
  sleep 1
  cm() { k apply -n wh -f - <<<"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"$1\",\"labels\":{\"hook\":\"$2\"}}}"; }
  expect_ok "dead webhook, Ignore: allowed" cm f1 dead-ignore
  expect_fail "dead webhook, Fail: refused" 'Internal error occurred: failed calling webhook "dead-fail.kapi.test": failed to call webhook: Post "https://127.0.0.1:'"$DEAD_PORT"'/dead?timeout=10s"' cm f2 dead-fail
  local t0=$SECONDS
  expect_ok "slow webhook, Ignore: allowed after its timeout" cm f3 slow-ignore
  [ $((SECONDS - t0)) -le 3 ] && pass "the slow webhook cost at most its timeout" || fail "slow webhook took $((SECONDS - t0))s"
  cm f4 slow-fail >"$WORK/slow.out" 2>&1 &
  local bg=$!
  sleep 0.3
  t0=$SECONDS
  expect_ok "other requests are served while a webhook is slow" k get namespaces
  [ $((SECONDS - t0)) -le 1 ] && pass "no stall behind the slow webhook" || fail "a read waited $((SECONDS - t0))s"
  wait $bg
  OUT="$(cat "$WORK/slow.out")"
  if grep -Fq 'failed calling webhook "slow-fail.kapi.test"' <<<"$OUT" && grep -Fq 'context deadline exceeded' <<<"$OUT"; then
    pass "slow webhook, Fail: refused at its timeout"; else fail "slow webhook, Fail: refused at its timeout"; fi
  expect_fail "garbage body refused" 'failed calling webhook "garbage.kapi.test": received invalid webhook response' cm f5 garbage
  expect_fail "wrong uid refused" 'received invalid webhook response: expected response.uid=' cm f6 wronguid
  expect_fail "HTTP 500 refused" 'failed calling webhook "status500.kapi.test"' cm f7 status500
  expect_ok "remove the failing webhooks" k delete validatingwebhookconfiguration failing

  # 5. ValidatingAdmissionPolicy with params (Deny) and a Warn binding.
  expect_ok "params configmap" k create configmap policy-params -n wh --from-literal=banned=forbidden-name
  expect_ok "create a policy and its bindings" k apply -f - <<'YAML'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: ban-names}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules: [{operations: [CREATE, UPDATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
    objectSelector: {matchLabels: {policy: "on"}}
  variables:
  - {name: name, expression: object.metadata.name}
  validations:
  - expression: variables.name != params.data.banned
    messageExpression: "'name ' + variables.name + ' is banned'"
    reason: Forbidden
  auditAnnotations:
  - {key: checked, valueExpression: "'checked ' + object.metadata.name"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: ban-names-deny}
spec:
  policyName: ban-names
  paramRef: {name: policy-params, namespace: wh, parameterNotFoundAction: Deny}
  validationActions: [Deny]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: owner-label}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
    objectSelector: {matchLabels: {policy: "on"}}
  validations:
  - expression: "'owner' in object.metadata.labels"
    message: an owner label is recommended
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: owner-label-warn}
spec:
  policyName: owner-label
  validationActions: [Warn, Audit]
YAML
  expect_eq "policy defaults" "Fail Equivalent" k get validatingadmissionpolicy ban-names -o 'jsonpath={.spec.failurePolicy} {.spec.matchConstraints.matchPolicy}'
  expect_out "policy columns" "ban-names +1 +v1/ConfigMap" k get validatingadmissionpolicies
  expect_ok "status.observedGeneration is written" wait_until 5 bash -c \
    "[ \"\$('$KUBECTL' --kubeconfig '$KUBECONFIG_FILE' --cache-dir '$CACHE' get validatingadmissionpolicy ban-names -o 'jsonpath={.status.observedGeneration}')\" = 1 ]"
  expect_out "binding columns" "ban-names-deny +ban-names +wh/policy-params" k get validatingadmissionpolicybindings
  expect_fail "validationActions are checked" 'spec.validationActions: Required value: at least one validation action is required' k apply -f - <<'YAML'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-actions}
spec: {policyName: ban-names}
YAML
  sleep 1
  pcm() { k apply -n wh -f - <<<"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"$1\",\"labels\":{\"policy\":\"on\"$2}}}"; }
  expect_fail "Deny: the banned name is refused with upstream's message" \
    "configmaps \"forbidden-name\" is forbidden: ValidatingAdmissionPolicy 'ban-names' with binding 'ban-names-deny' denied request: name forbidden-name is banned" \
    pcm forbidden-name ',"owner":"me"'
  expect_ok "Deny: another name passes" pcm fine-name ',"owner":"me"'
  expect_out "Warn: a warning and the object is created" \
    "Warning: Validation failed for ValidatingAdmissionPolicy 'owner-label' with binding 'owner-label-warn': an owner label is recommended" \
    pcm no-owner ''
  expect_ok "Warn does not refuse" k get configmap no-owner -n wh
  expect_ok "remove the params" k delete configmap policy-params -n wh
  sleep 1
  expect_fail "missing params with parameterNotFoundAction Deny" "no params found for policy binding with \`Deny\` parameterNotFoundAction" pcm other-name ',"owner":"me"'

  # Type checking: undeclared variables are refused when the policy is written; a policy on a
  # custom resource gets its expressions checked against the CRD's schema in its status.
  expect_fail "policy: undeclared variable refused" \
    "spec.validations[0].expression: Invalid value: \"nosuch.x == 1\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'nosuch' (in container '')" \
    k apply -f - <<'YAML'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: undeclared}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  validations:
  - expression: "nosuch.x == 1"
YAML
  expect_ok "typecheck: a policy written before its CRD" k apply -f - <<'YAML'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: gizmo-early}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [tc.example.com], apiVersions: [v1], resources: [gizmos]}]
  validations:
  - expression: "object.spec.colour == 'red'"
YAML
  expect_ok "typecheck: no kind resolved yet, no warnings" wait_until 10 bash -c \
    "'$KUBECTL' --kubeconfig '$KUBECONFIG_FILE' --cache-dir '$CACHE' get validatingadmissionpolicy gizmo-early -o 'jsonpath={.status.observedGeneration}' | grep -q 1"
  expect_ok "typecheck: a CRD" k apply -f - <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.tc.example.com}
spec:
  group: tc.example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
YAML
  expect_ok "typecheck: a policy on it" k apply -f - <<'YAML'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: gizmo-size}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [tc.example.com], apiVersions: [v1], resources: [gizmos]}]
  validations:
  - expression: "object.spec.size < 10"
  - expression: "object.spec.sise < 10"
YAML
  expect_ok "typecheck: status written" wait_until 10 bash -c \
    "'$KUBECTL' --kubeconfig '$KUBECONFIG_FILE' --cache-dir '$CACHE' get validatingadmissionpolicy gizmo-size -o 'jsonpath={.status.typeChecking}' | grep -q expressionWarnings"
  expect_out "typecheck: the warning names the field and the kind" \
    'spec.validations\[1\].expression.*tc.example.com/v1, Kind=Gizmo: ERROR: .*:1:12: undefined field .sise.' \
    k get validatingadmissionpolicy gizmo-size -o 'jsonpath={.status.typeChecking}'
  expect_ok "typecheck: the CRD's arrival re-checks the earlier policy" wait_until 10 bash -c \
    "'$KUBECTL' --kubeconfig '$KUBECONFIG_FILE' --cache-dir '$CACHE' get validatingadmissionpolicy gizmo-early -o 'jsonpath={.status.typeChecking}' | grep -q 'Kind=Gizmo: ERROR: .*:1:12: undefined field .colour.'"
  expect_ok "typecheck: a policy on a built-in kind" k apply -f - <<'YAML'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: deploy-replicas}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments]}]
  validations:
  - expression: "object.spec.replicas <= 5 && object.metadata.name.size() < 64"
  - expression: "object.spec.replica <= 5"
  - expression: "object.spec.template.spec.containers.all(c, c.image != '')"
    messageExpression: "string(object.spec.template.spec.containers[0].nam)"
YAML
  expect_ok "typecheck: built-in status written" wait_until 10 bash -c \
    "'$KUBECTL' --kubeconfig '$KUBECONFIG_FILE' --cache-dir '$CACHE' get validatingadmissionpolicy deploy-replicas -o 'jsonpath={.status.typeChecking}' | grep -q expressionWarnings"
  expect_eq "typecheck: the built-in kind's schema types object" \
    "spec.validations[1].expression spec.validations[2].messageExpression" \
    k get validatingadmissionpolicy deploy-replicas -o 'jsonpath={.status.typeChecking.expressionWarnings[*].fieldRef}'
  expect_out "typecheck: worded as upstream" \
    "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replica'" \
    k get validatingadmissionpolicy deploy-replicas -o 'jsonpath={.status.typeChecking.expressionWarnings[0].warning}'
  k delete validatingadmissionpolicy deploy-replicas gizmo-early >/dev/null 2>&1
  k delete validatingadmissionpolicy gizmo-size >/dev/null 2>&1
  k delete crd gizmos.tc.example.com --wait=false >/dev/null 2>&1

  # CEL at run time: the `authorizer` variable asks the server's RBAC about the request's user;
  # cel.bind, type() and dyn() evaluate; validations that are not bool are refused at write.
  expect_ok "authorizer: a policy asking RBAC" k apply -f - <<'YAML'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: authz-secrets}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  matchConditions: [{name: labelled, expression: "has(object.metadata.labels) && 'authz' in object.metadata.labels"}]
  validations:
  - expression: "authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('list').allowed()"
    messageExpression: "'user ' + request.userInfo.username + ' may not list secrets'"
    reason: Forbidden
  - expression: "authorizer.requestResource.check('create').allowed() && !authorizer.requestResource.check('create').errored()"
    message: "requestResource"
  - expression: "!authorizer.serviceAccount('kube-system', 'nobody').group('').resource('secrets').check('delete').allowed()"
    message: "serviceAccount"
  - expression: "authorizer.path('/healthz').check('get').allowed()"
    message: "path"
  - expression: "cel.bind(n, object.metadata.name, n.size() < 30 && type(n) == string && dyn(n) == n)"
    message: "bind"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: authz-secrets}
spec: {policyName: authz-secrets, validationActions: [Deny]}
YAML
  expect_ok "authorizer: alice may create configmaps in plain" k apply -f - <<'YAML'
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cm-writer, namespace: plain}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [create]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: cm-writer, namespace: plain}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-writer}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
YAML
  acm() { local n=$1; shift; k create -n plain "$@" -f - <<<"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"$n\",\"labels\":{\"authz\":\"on\"}}}"; }
  sleep 1
  expect_ok "authorizer: the admin passes every check" acm authz-admin
  expect_fail "authorizer: alice cannot list secrets, so the policy refuses" \
    "configmaps \"authz-alice\" is forbidden: ValidatingAdmissionPolicy 'authz-secrets' with binding 'authz-secrets' denied request: user alice may not list secrets" \
    acm authz-alice --as=alice
  expect_ok "authorizer: let alice list secrets" k apply -f - <<'YAML'
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cm-writer, namespace: plain}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [create]}, {apiGroups: [""], resources: [secrets], verbs: [list]}]
YAML
  expect_ok "authorizer: the policy now admits alice" wait_until 10 bash -c \
    "'$KUBECTL' --kubeconfig '$KUBECONFIG_FILE' --cache-dir '$CACHE' --as=alice create -n plain -f - <<<'{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"authz-alice\",\"labels\":{\"authz\":\"on\"}}}' >/dev/null 2>&1"
  expect_fail "cel.bind: evaluated (a long name is refused by the bound check)" \
    "denied request: bind" acm authz-a-name-longer-than-thirty-characters
  k delete validatingadmissionpolicybinding authz-secrets >/dev/null 2>&1
  k delete validatingadmissionpolicy authz-secrets >/dev/null 2>&1
  expect_fail "a validation that is not bool is refused at write" \
    'spec.validations[0].expression: Invalid value: "object.metadata.name": must evaluate to bool but got dyn' \
    k apply -f - <<'YAML'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: not-bool}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  validations:
  - expression: "object.metadata.name"
    messageExpression: "1"
YAML
  expect_out "a messageExpression must be a string" \
    'spec.validations\[0\].messageExpression: Invalid value: "1": must evaluate to string but got int' printf '%s' "$OUT"

  # matchPolicy Equivalent: rules on v1 of a two-version CRD see a v2 request converted to v1.
  expect_ok "equivalent: a CRD served at v1 and v2" k apply -f - <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.eq.example.com}
spec:
  group: eq.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
  - {name: v2, served: true, storage: false, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
YAML
  k wait --for=condition=Established crd/widgets.eq.example.com --timeout=30s >/dev/null 2>&1
  expect_ok "equivalent: a webhook and a policy on v1 only" k apply -f - <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: equivalent}
webhooks:
- name: equiv.kapi.test
  clientConfig: {url: "$URL/equiv", caBundle: "$CA_BUNDLE"}
  rules: [{operations: [CREATE], apiGroups: [eq.example.com], apiVersions: [v1], resources: [widgets]}]
  failurePolicy: Ignore
  sideEffects: None
  admissionReviewVersions: [v1]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: equivalent}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [eq.example.com], apiVersions: [v1], resources: [widgets]}]
  validations:
  - expression: "!(object.apiVersion == 'eq.example.com/v1' && request.kind.version == 'v1' && request.requestKind.version == 'v2' && object.metadata.name == 'refused')"
    message: "seen as v1, sent as v2"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: equivalent}
spec: {policyName: equivalent, validationActions: [Deny]}
YAML
  sleep 2
  wgt() { k create -n plain -f - <<<"{\"apiVersion\":\"eq.example.com/v2\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"$1\"}}"; }
  expect_ok "equivalent: a v2 widget is created" wgt w1
  expect_eq "equivalent: the webhook saw the object at v1, the request at v2" "v1 v2 v1 v2 eq.example.com/v1" python3 -c "
import json; r=json.load(open('$WORK/record/equiv.json'))['request']
print(r['kind']['version'], r['requestKind']['version'], r['resource']['version'], r['requestResource']['version'], r['object']['apiVersion'])"
  expect_fail "equivalent: the policy evaluated the v1 form" "seen as v1, sent as v2" wgt refused
  k delete validatingwebhookconfiguration equivalent >/dev/null 2>&1
  k delete validatingadmissionpolicybinding equivalent >/dev/null 2>&1
  k delete validatingadmissionpolicy equivalent >/dev/null 2>&1
  k delete crd widgets.eq.example.com --wait=false >/dev/null 2>&1

  # 6. The official Python client sees the same answers.
  if PY="$(py_env)"; then
    expect_out "python client: refusals, patches and the new kinds" "^python ok$" env KUBECONFIG="$KUBECONFIG_FILE" "$PY/bin/python" - <<'PY'
import json
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config()
core = client.CoreV1Api()
try:
    core.create_namespaced_config_map("wh", {"metadata": {"name": "py-denied", "labels": {"deny": "true"}}})
    raise SystemExit("not denied")
except ApiException as e:
    assert e.status == 403, e.status
    msg = json.loads(e.body)["message"]
    assert msg == 'admission webhook "deny.kapi.test" denied the request: label deny=true is not allowed', msg
made = core.create_namespaced_config_map("wh", {"metadata": {"name": "py-mutated", "labels": {"hook": "mutate"}}})
assert made.metadata.labels["mutated"] == "true", made.metadata.labels
adm = client.AdmissionregistrationV1Api()
assert "deny-by-label" in [w.metadata.name for w in adm.list_validating_webhook_configuration().items]
hooks = adm.read_mutating_webhook_configuration("add-label").webhooks
assert hooks[0].reinvocation_policy == "IfNeeded" and hooks[0].timeout_seconds == 10
policy = adm.read_validating_admission_policy("ban-names")
assert policy.spec.param_kind.kind == "ConfigMap" and policy.spec.failure_policy == "Fail"
binding = adm.read_validating_admission_policy_binding("ban-names-deny")
assert binding.spec.validation_actions == ["Deny"]
print("python ok")
PY
  else
    fail "python client environment"
  fi

  # 7. Metrics.
  expect_out "webhook request metrics" 'apiserver_admission_webhook_request_total\{code="200",name="deny.kapi.test",operation="CREATE",rejected="true",type="validating"\}' k get --raw /metrics
  expect_out "webhook rejection metrics" 'apiserver_admission_webhook_rejection_count\{error_type="calling_webhook_error",name="dead-fail.kapi.test"' k get --raw /metrics
  expect_out "webhook latency metrics" 'apiserver_admission_webhook_admission_duration_seconds_bucket\{name="mutate.kapi.test"' k get --raw /metrics
}

start_kapi_on_etcd dyn
expect_out "startup log lists the dynamic plugins in order" \
  "mutating admission controller.*MutatingAdmissionWebhook" cat "$WORK/kapi-dyn.log"
expect_out "validating order: policy before webhook" \
  "validating admission controller.*ValidatingAdmissionPolicy,ValidatingAdmissionWebhook" cat "$WORK/kapi-dyn.log"
suite etcd

# The plugins can be switched off; the configurations stay.
start_kapi_on_etcd dyn --disable-admission-plugins=ValidatingAdmissionWebhook,ValidatingAdmissionPolicy
LABEL=disabled
expect_ok "with the plugins disabled, the labelled configmap is allowed" \
  k apply -n wh -f - <<<'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"denied","labels":{"deny":"true"}}}'

start_kapi_embedded emb
suite embedded

summary

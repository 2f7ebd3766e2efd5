#!/usr/bin/env bash
# MutatingAdmissionPolicy end-to-end (admissionregistration.k8s.io/v1alpha1, 1.33 alpha), on
# etcd and on the embedded store, with real kubectl: the API off by default and on with
# --runtime-config, upstream's defaults, columns and validation refusals, and the plugin
# (under --feature-gates=MutatingAdmissionPolicy=true) mutating config maps with JSONPatch and
# ApplyConfiguration mutations, a param, a match condition, failurePolicy Fail and Ignore on a
# run-time error, an IfNeeded policy reinvoked, and the official Python client's typed API.
#
#   KAPI_BIN=path/to/kapi-apiserver e2e/mutating-policy.sh   (default: builds the debug binary)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=e2e/lib.sh
. "$ROOT/e2e/lib.sh"

e2e_init mutating-policy
e2e_start_etcd

# policy NAME FAILURE REINVOCATION MUTATIONS-YAML [EXTRA-SPEC-YAML]: a policy on configmaps in
# namespaces labelled map=on.
policy() {
  cat <<YAML
apiVersion: admissionregistration.k8s.io/v1alpha1
kind: MutatingAdmissionPolicy
metadata: {name: $1}
spec:
  failurePolicy: $2
  reinvocationPolicy: $3
  matchConstraints:
    resourceRules: [{operations: [CREATE, UPDATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
    namespaceSelector: {matchLabels: {map: "on"}}
  mutations:
$4
${5:-}
YAML
}

binding() {
  cat <<YAML
apiVersion: admissionregistration.k8s.io/v1alpha1
kind: MutatingAdmissionPolicyBinding
metadata: {name: $1}
spec:
  policyName: $2
${3:-}
YAML
}

suite() {
  LABEL=$1
  k create namespace mp >/dev/null && k label namespace mp map=on >/dev/null
  k create namespace plain >/dev/null

  # 1. Served, with upstream's defaults, columns and refusals.
  expect_out "discovery lists the v1alpha1 kinds" "mutatingadmissionpolicies +api-extensions|mutatingadmissionpolicies .*admissionregistration.k8s.io/v1alpha1 +false +MutatingAdmissionPolicy" \
    k api-resources --api-group=admissionregistration.k8s.io
  expect_ok "create a JSONPatch policy" k apply -f - < <(policy add-label Fail Never '  - patchType: JSONPatch
    jsonPatch:
      expression: >-
        has(object.metadata.labels) ?
        [JSONPatch{op: "add", path: "/metadata/labels/mutated", value: "json-patch"}] :
        [JSONPatch{op: "add", path: "/metadata/labels", value: {"mutated": "json-patch"}}]')
  expect_eq "failurePolicy and matchPolicy defaulted" "Fail Equivalent *" \
    k get mutatingadmissionpolicy add-label -o 'jsonpath={.spec.failurePolicy} {.spec.matchConstraints.matchPolicy} {.spec.matchConstraints.resourceRules[0].scope}'
  expect_out "kubectl get shows MUTATIONS and PARAMKIND" "NAME +MUTATIONS +PARAMKIND +AGE" k get mutatingadmissionpolicies
  expect_out "one mutation, no param kind" "add-label +1 +<unset> " k get mutatingadmissionpolicies
  expect_ok "create its binding" k apply -f - < <(binding add-label add-label)
  expect_out "binding columns" "add-label +add-label +<unset> " k get mutatingadmissionpolicybindings

  bad_empty() {
    k apply -f - <<'YAML'
apiVersion: admissionregistration.k8s.io/v1alpha1
kind: MutatingAdmissionPolicy
metadata: {name: bad}
spec:
  matchConstraints:
    resourceRules: [{operations: [DELETE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
YAML
  }
  for want in 'spec.matchConstraints.resourceRules.operations: Unsupported value: "DELETE": supported values: "*", "CONNECT", "CREATE", "UPDATE"' \
    'spec.mutations: Required value: mutations must contain at least one item' \
    'spec.reinvocationPolicy: Required value'; do
    expect_fail "refused: $want" "$want" bad_empty
  done
  bad_mutations() {
    k apply -f - < <(policy bad Fail Never '  - patchType: JSONPatch
    applyConfiguration: {expression: "Object{}"}
  - patchType: Merge')
  }
  for want in 'spec.mutations[0].jsonPatch: Required value: must be specified when patchType is JSONPatch' \
    'spec.mutations[0].applyConfiguration: Invalid value: "{applyConfiguration}": must not be specified when patchType is JSONPatch' \
    'spec.mutations[1].patchType: Unsupported value: "Merge": supported values: "ApplyConfiguration", "JSONPatch"'; do
    expect_fail "refused: $want" "$want" bad_mutations
  done
  expect_fail "an expression of the wrong type is refused" \
    'spec.mutations[0].applyConfiguration.expression: Invalid value: "[JSONPatch{op: \"add\", path: \"/x\"}]": must evaluate to Object but got list(JSONPatch)' \
    k apply -f - < <(policy bad Fail Never '  - patchType: ApplyConfiguration
    applyConfiguration: {expression: "[JSONPatch{op: \"add\", path: \"/x\"}]"}')
  expect_fail "an unknown JSONPatch field is refused" "undefined field 'nope'" \
    k apply -f - < <(policy bad Fail Never '  - patchType: JSONPatch
    jsonPatch: {expression: "[JSONPatch{nope: 1}]"}')
  expect_fail "a binding without policyName is refused" "spec.policyName: Required value" \
    k apply -f - < <(binding bad "")

  # 2. JSONPatch mutations are applied (and only where the policy matches).
  expect_ok "create a configmap in the matched namespace" k create configmap one -n mp --from-literal=a=b
  expect_eq "the JSONPatch added a label" "json-patch" k get configmap one -n mp -o 'jsonpath={.metadata.labels.mutated}'
  expect_ok "create a configmap elsewhere" k create configmap one -n plain --from-literal=a=b
  expect_eq "other namespaces are untouched" "" k get configmap one -n plain -o 'jsonpath={.metadata.labels.mutated}'
  expect_eq "dry-run shows the mutation" "json-patch" \
    k create configmap dry -n mp --dry-run=server -o 'jsonpath={.metadata.labels.mutated}'

  # 3. ApplyConfiguration with a param and a match condition.
  k create configmap map-param -n mp --from-literal=owner=team-a >/dev/null
  expect_ok "create an ApplyConfiguration policy with a param" k apply -f - < <(policy apply-owner Fail Never '  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >-
        Object{metadata: Object.metadata{annotations: {"owner": params.data.owner}}, data: {"stamped": "yes"}}' '  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConditions: [{name: wants-owner, expression: "has(object.metadata.labels) && \"owner\" in object.metadata.labels"}]')
  expect_out "paramKind printed" "apply-owner +1 +v1/ConfigMap " k get mutatingadmissionpolicies
  expect_ok "bind it to the param" k apply -f - < <(binding apply-owner apply-owner '  paramRef: {name: map-param, namespace: mp, parameterNotFoundAction: Deny}')
  expect_ok "create a configmap the condition takes" \
    k apply -n mp -f - <<<'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"owned","labels":{"owner":"x"}},"data":{"a":"b"}}'
  expect_eq "annotation from the param, data merged" "team-a yes b json-patch" \
    k get configmap owned -n mp -o 'jsonpath={.metadata.annotations.owner} {.data.stamped} {.data.a} {.metadata.labels.mutated}'
  expect_eq "the false match condition skipped the other" "" k get configmap one -n mp -o 'jsonpath={.metadata.annotations.owner}'

  # 4. A run-time error under failurePolicy Fail refuses; under Ignore it is skipped.
  expect_ok "create a failing policy" k apply -f - < <(policy broken Fail Never '  - patchType: JSONPatch
    jsonPatch: {expression: "[JSONPatch{op: \"add\", path: \"/data/x\", value: object.data.missing}]"}' '  matchConditions: [{name: broken-only, expression: "object.metadata.name.startsWith(\"broken\")"}]')
  expect_ok "bind it" k apply -f - < <(binding broken broken)
  expect_fail "failurePolicy Fail refuses the request with upstream's words" \
    "policy 'broken' with binding 'broken' denied request: expression '[JSONPatch{op: \"add\", path: \"/data/x\", value: object.data.missing}]' resulted in error: " \
    k create configmap broken-one -n mp --from-literal=a=b
  k patch mutatingadmissionpolicy broken --type=merge -p '{"spec":{"failurePolicy":"Ignore"}}' >/dev/null
  sleep 1
  expect_ok "failurePolicy Ignore admits it" k create configmap broken-two -n mp --from-literal=a=b
  expect_eq "the other policies still mutated it" "json-patch" k get configmap broken-two -n mp -o 'jsonpath={.metadata.labels.mutated}'

  # 5. Reinvocation: an IfNeeded policy runs again after a later one changed the object.
  expect_ok "create an IfNeeded policy reading a later policy's label" k apply -f - < <(policy a-reinvoked Fail IfNeeded '  - patchType: JSONPatch
    jsonPatch:
      expression: >-
        has(object.metadata.labels) && "late" in object.metadata.labels ?
        [JSONPatch{op: "add", path: "/metadata/labels/saw-late", value: "true"}] : []' '  matchConditions: [{name: reinvoke-only, expression: "object.metadata.name == \"reinvoke\""}]')
  expect_ok "and the later policy" k apply -f - < <(policy z-late Fail Never '  - patchType: ApplyConfiguration
    applyConfiguration: {expression: "Object{metadata: Object.metadata{labels: {\"late\": \"yes\"}}}"}' '  matchConditions: [{name: reinvoke-only, expression: "object.metadata.name == \"reinvoke\""}]')
  k apply -f - < <(binding a-reinvoked a-reinvoked) >/dev/null
  k apply -f - < <(binding z-late z-late) >/dev/null
  sleep 1
  expect_ok "create the reinvoked configmap" k create configmap reinvoke -n mp --from-literal=a=b
  expect_eq "the IfNeeded policy saw the later change" "yes true" \
    k get configmap reinvoke -n mp -o 'jsonpath={.metadata.labels.late} {.metadata.labels.saw-late}'

  # 6. The official Python client's typed API.
  if PY="$(py_env)"; then
    expect_out "python client: the v1alpha1 kinds" "^python ok$" env KUBECONFIG="$KUBECONFIG_FILE" "$PY/bin/python" - <<'PY'
from kubernetes import client, config
config.load_kube_config()
api = client.AdmissionregistrationV1alpha1Api()
p = api.read_mutating_admission_policy("apply-owner")
assert p.spec.param_kind.kind == "ConfigMap" and p.spec.failure_policy == "Fail", p.spec
assert p.spec.mutations[0].patch_type == "ApplyConfiguration"
names = [x.metadata.name for x in api.list_mutating_admission_policy_binding().items]
assert "apply-owner" in names and "add-label" in names, names
b = api.read_mutating_admission_policy_binding("apply-owner")
assert b.spec.param_ref.name == "map-param", b.spec
made = client.CoreV1Api().create_namespaced_config_map("mp", {"metadata": {"name": "py"}})
assert made.metadata.labels["mutated"] == "json-patch", made.metadata.labels
print("python ok")
PY
  else
    fail "python client environment"
  fi
}

# Off by default: not served, and the plugin loaded but idle.
start_kapi_on_etcd off
LABEL=default
expect_fail "v1alpha1 is not served by default" "the server doesn't have a resource type" k get mutatingadmissionpolicies
expect_out "the plugin is in the default chain" "mutating admission controller.*MutatingAdmissionPolicy" cat "$WORK/kapi-off.log"

start_kapi_on_etcd map --runtime-config=admissionregistration.k8s.io/v1alpha1=true --feature-gates=MutatingAdmissionPolicy=true
suite etcd

# api/all serves it; without the feature gate the policies do nothing.
start_kapi_on_etcd map --runtime-config=api/all=true
LABEL=gate-off
expect_ok "served with api/all" k get mutatingadmissionpolicies
expect_ok "create a configmap without the gate" k create configmap gate-off -n mp
expect_eq "not mutated without the feature gate" "" k get configmap gate-off -n mp -o 'jsonpath={.metadata.labels.mutated}'

start_kapi_embedded emb --runtime-config=api/alpha=true --feature-gates=MutatingAdmissionPolicy=true
suite embedded

summary

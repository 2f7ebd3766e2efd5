#!/usr/bin/env bash
# Audit end-to-end: real etcd, real kapi with an audit policy and log, real kubectl. Shows one
# event per request and stage at the level the policy gives (Metadata without objects, Request
# with the request object, RequestResponse with both, None skipped), ResponseStarted for a
# watch, failures' responseStatus, the authorization decision annotation, impersonatedUser,
# the legacy format on stdout, and a bad policy failing start-up.
#
#   KAPI_BIN=path/to/kapi-apiserver e2e/audit.sh   (default: builds the debug binary)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=e2e/lib.sh
. "$ROOT/e2e/lib.sh"

e2e_init audit
e2e_start_etcd

POLICY="$WORK/policy.yaml"
cat >"$POLICY" <<'YAML'
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  # Probes and secrets are not recorded.
  - level: None
    nonResourceURLs: ["/readyz*", "/healthz*", "/livez*"]
  - level: None
    resources: [{group: "", resources: ["secrets"]}]
  - level: RequestResponse
    resources: [{group: "", resources: ["serviceaccounts"]}]
  - level: Request
    resources: [{group: "apps"}]
  - level: Metadata
    resources: [{group: "", resources: ["configmaps"]}]
    omitManagedFields: true
  - level: Metadata
    omitStages: [RequestReceived]
YAML
LOG="$WORK/audit/audit.log"

# ev FILTER [FIELD]: the events (JSON) of the audit log matching the jq FILTER, or FIELD of each.
ev() { jq -c "select($1)${2:+ | $2}" "$LOG"; }
# has_events FILTER N: waits until at least N events match (the log is written behind requests).
has_events() { wait_until 10 bash -c "[ \$(jq -c 'select($1)' '$LOG' | wc -l) -ge $2 ]"; }

start_kapi_on_etcd main --authorization-mode=AlwaysAllow --audit-policy-file "$POLICY" --audit-log-path "$LOG"

# 1. Metadata: a configmap create, both stages, no objects.
expect_ok "create a configmap" k create configmap c1 --from-literal=a=b
CM='.verb=="create" and .objectRef.resource=="configmaps" and .objectRef.name=="c1"'
expect_ok "the configmap create is logged" has_events "$CM" 1
# The name of a created object is in the body: the RequestReceived event does not have it yet.
CM_ID=$(jq -r "select($CM) | .auditID" "$LOG" | head -1)
expect_eq "stages in order, under one auditID" '"RequestReceived" null
"ResponseComplete" "c1"' \
  bash -c "jq -r 'select(.auditID==\"$CM_ID\") | \"\(.stage|tojson) \(.objectRef.name|tojson)\"' '$LOG'"
expect_eq "level Metadata" '"Metadata"' ev "$CM and .stage==\"ResponseComplete\"" .level
expect_eq "no requestObject or responseObject at Metadata" 'null null' \
  bash -c "jq -r 'select($CM and .stage==\"ResponseComplete\") | \"\(.requestObject) \(.responseObject)\"' '$LOG'"
expect_eq "objectRef" '{"resource":"configmaps","namespace":"default","name":"c1","apiVersion":"v1"}' \
  ev "$CM and .stage==\"ResponseComplete\"" .objectRef
expect_eq "responseStatus" '{"metadata":{},"code":201}' ev "$CM and .stage==\"ResponseComplete\"" .responseStatus
expect_eq "user is the admin certificate's" '"system:masters"' ev "$CM and .stage==\"ResponseComplete\"" '.user.groups[0]'
expect_out "userAgent and sourceIPs" '^"kubectl.*" \["127.0.0.1"\]$' \
  bash -c "jq -r 'select($CM and .stage==\"ResponseComplete\") | \"\(.userAgent|tojson) \(.sourceIPs|tojson)\"' '$LOG'"
expect_eq "the authorization decision is annotated" '{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""}' \
  ev "$CM and .stage==\"ResponseComplete\"" .annotations
expect_out "timestamps have microseconds" '^"[0-9-]{10}T[0-9:]{8}\.[0-9]{6}Z" "[0-9-]{10}T[0-9:]{8}\.[0-9]{6}Z"$' \
  bash -c "jq -r 'select($CM and .stage==\"ResponseComplete\") | \"\(.requestReceivedTimestamp|tojson) \(.stageTimestamp|tojson)\"' '$LOG'"
expect_eq "the event's kind and apiVersion" '"Event" "audit.k8s.io/v1"' \
  bash -c "jq -r 'select($CM and .stage==\"ResponseComplete\") | \"\(.kind|tojson) \(.apiVersion|tojson)\"' '$LOG'"
expect_ok "kapi answered with the same Audit-Id" bash -c \
  "id=\$(\"$KUBECTL\" --kubeconfig '$KUBECONFIG_FILE' --cache-dir '$CACHE' get configmap c1 -v=8 2>&1 | grep -io 'audit-id: [0-9a-f-]*' | head -1 | awk '{print \$2}'); [ -n \"\$id\" ] && sleep 0.5 && grep -q \"\\\"auditID\\\":\\\"\$id\\\"\" '$LOG'"

# 2. None: secrets leave no trace.
expect_ok "create a secret" k create secret generic s1 --from-literal=a=b
expect_ok "get the secret" k get secret s1
expect_eq "no event for secrets" "" ev '.objectRef.resource=="secrets"'
expect_eq "no event for /readyz" "" ev '.requestURI|startswith("/readyz")'

# 3. RequestResponse: both objects.
expect_ok "create a service account" k create serviceaccount sa1
SA='.verb=="create" and .objectRef.resource=="serviceaccounts" and .objectRef.name=="sa1" and .stage=="ResponseComplete"'
expect_ok "the service account create is logged" has_events "$SA" 1
expect_eq "requestObject is what kubectl sent" '"sa1"' ev "$SA" .requestObject.metadata.name
expect_out "responseObject is the stored object" '^"[0-9a-f-]{36}"$' ev "$SA" .responseObject.metadata.uid
expect_eq "level RequestResponse" '"RequestResponse"' ev "$SA" .level

# 4. Request: the request object only.
expect_ok "create a deployment" k create deployment d1 --image=nginx
DEP='.verb=="create" and .objectRef.resource=="deployments" and .stage=="ResponseComplete"'
expect_ok "the deployment create is logged" has_events "$DEP" 1
expect_eq "Request level: requestObject, no responseObject" '"nginx" null' \
  bash -c "jq -r 'select($DEP) | \"\(.requestObject.spec.template.spec.containers[0].image|tojson) \(.responseObject)\"' '$LOG'"
expect_eq "objectRef names the apps group" '"apps" "v1"' \
  bash -c "jq -r 'select($DEP) | \"\(.objectRef.apiGroup|tojson) \(.objectRef.apiVersion|tojson)\"' '$LOG'"

# 5. Failures carry upstream's Status fields.
expect_fail "get a missing configmap" 'configmaps "nope" not found' k get configmap nope
MISS='.verb=="get" and .objectRef.name=="nope" and .stage=="ResponseComplete"'
expect_ok "the failed get is logged" has_events "$MISS" 1
expect_eq "responseStatus of a 404" '{"metadata":{},"status":"Failure","message":"configmaps \"nope\" not found","reason":"NotFound","details":{"name":"nope","kind":"configmaps"},"code":404}' \
  ev "$MISS" .responseStatus

# 6. A patch is recorded, and a Metadata-level update keeps no objects.
expect_ok "patch the configmap" k patch configmap c1 -p '{"data":{"a":"c"}}'
expect_ok "the patch is logged" has_events '.verb=="patch" and .objectRef.name=="c1" and .stage=="ResponseComplete"' 1

# 7. A watch: RequestReceived, ResponseStarted, then ResponseComplete when the stream ends.
expect_ok "watch configmaps for a second" k get --raw '/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1'
W='.verb=="watch" and .objectRef.resource=="configmaps"'
expect_ok "the watch is logged at three stages" has_events "$W" 3
expect_eq "watch stages in order" '"RequestReceived"
"ResponseStarted"
"ResponseComplete"' ev "$W" .stage

# 8. The rule's omitStages: the catch-all rule skips RequestReceived.
expect_ok "list namespaces" k get namespaces
NS='.verb=="list" and .objectRef.resource=="namespaces"'
expect_ok "the namespace list is logged" has_events "$NS" 1
expect_eq "only ResponseComplete for the catch-all rule" '"ResponseComplete"' ev "$NS" .stage

# 9. Impersonation: user is the admin, impersonatedUser the one asked for.
expect_ok "get configmaps as jane" k get configmaps --as=jane --as-group=devs
IMP='.verb=="list" and .objectRef.resource=="configmaps" and .impersonatedUser.username=="jane" and .stage=="ResponseComplete"'
expect_ok "the impersonated list is logged" has_events "$IMP" 1
expect_eq "impersonatedUser groups" '["devs","system:authenticated"]' ev "$IMP" .impersonatedUser.groups
expect_out "user stays the admin" 'system:masters' ev "$IMP" .user.groups

# 10. Non-resource requests: no objectRef, verb is the method.
expect_ok "get /version" k get --raw /version
expect_ok "the /version request is logged" has_events '.requestURI=="/version"' 1
expect_eq "verb get, no objectRef" '"get" null' \
  bash -c "jq -r 'select(.requestURI==\"/version\") | \"\(.verb|tojson) \(.objectRef)\"' '$LOG'"

# 11. The legacy format on stdout.
start_kapi_on_etcd legacy --authorization-mode=AlwaysAllow --audit-policy-file "$POLICY" --audit-log-path - --audit-log-format legacy
expect_ok "create a configmap (legacy log)" k create configmap c2
expect_ok "a legacy line on stdout" wait_until 10 grep -q 'AUDIT: id=".*" stage="ResponseComplete" ip="127.0.0.1" method="create" user=".*" groups=".*system:masters.*" as="<self>" asgroups="<lookup>" user-agent="kubectl.*" namespace="default" uri="/api/v1/namespaces/default/configmaps.*" response="201"' "$WORK/kapi-legacy.out"

# 12. A bad policy fails start-up, naming the file and the reason.
printf 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n' >"$WORK/bad-policy.yaml"
expect_fail "a bad level fails start-up" "bad-policy.yaml\": invalid policy: rules[0].level: Unsupported value: \"Everything\"" \
  timeout 20 "$KAPI_BIN" --secure-port "$(free_port)" --data-dir "$WORK/bad" --audit-policy-file "$WORK/bad-policy.yaml" --audit-log-path "$WORK/bad.log"
printf 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n' >"$WORK/empty-policy.yaml"
expect_fail "a policy without rules fails start-up" "loaded illegal policy with 0 rules" \
  timeout 20 "$KAPI_BIN" --secure-port "$(free_port)" --data-dir "$WORK/bad2" --audit-policy-file "$WORK/empty-policy.yaml" --audit-log-path "$WORK/bad.log"

summary

#!/usr/bin/env bash
# RBAC end-to-end: real etcd, real kapi with the default --authorization-mode (RBAC), real
# kubectl. A service-account token is 403 in upstream's words until a Role and RoleBinding
# allow it; `kubectl auth can-i` agrees; `can-i --list`; escalation is refused without
# `escalate`/`bind`; `--as` needs `impersonate`; anonymous users reach health and version
# only; the bootstrap policy is aggregated and reconciled at restart (autoupdate=false kept).
#
#   KAPI_BIN=path/to/kapi-apiserver e2e/rbac.sh   (default: builds the debug binary)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=e2e/lib.sh
. "$ROOT/e2e/lib.sh"

e2e_init rbac
e2e_start_etcd

# Static token users: eve (group devs) and bob.
cat >"$WORK/tokens.csv" <<'EOF'
eve-token,eve,uid-eve,"devs"
bob-token,bob,uid-bob,
EOF

# One server, restarted on the same port and data.
E2E_KAPI_PORT=$(free_port)
start_kapi() { start_kapi_on_etcd main --token-auth-file "$WORK/tokens.csv" "$@"; }
start_kapi

# as_user USER ARGS...: kubectl with USER's bearer token (a kubeconfig per user, written once).
as_user() {
  local user=$1; shift
  "$KUBECTL" --kubeconfig "$WORK/$user.kubeconfig" --cache-dir "$CACHE" "$@"
}
user_kubeconfig() {
  local user=$1 token=$2 cfg="$WORK/$1.kubeconfig"
  cp "$KUBECONFIG_FILE" "$cfg"
  "$KUBECTL" --kubeconfig "$cfg" config set-credentials "$user" --token="$token" >/dev/null
  "$KUBECTL" --kubeconfig "$cfg" config set-context "$("$KUBECTL" --kubeconfig "$cfg" config current-context)" --user="$user" >/dev/null
}
NS=rbac-e2e
# expect_no NAME CMD...: passes when CMD (kubectl auth can-i) answers "no" and exits 1.
expect_no() {
  local n=$1; shift
  if ! run_cmd "$@" && [ "$OUT" = "no" ]; then pass "$n"; else fail "$n (want: no, exit 1)"; fi
}
SA_USER="system:serviceaccount:$NS:app"

# 1. The bootstrap policy.
expect_ok "bootstrap cluster roles exist" k get clusterrole cluster-admin admin edit view \
  system:discovery system:basic-user system:public-info-viewer system:monitoring system:auth-delegator
expect_out "cluster-admin is bound to system:masters" 'system:masters' \
  k get clusterrolebinding cluster-admin -o 'jsonpath={.subjects[*].name}'
expect_out "bootstrap objects carry the autoupdate annotation and rbac-defaults label" 'true rbac-defaults' \
  k get clusterrole view -o 'jsonpath={.metadata.annotations.rbac\.authorization\.kubernetes\.io/autoupdate} {.metadata.labels.kubernetes\.io/bootstrapping}'
expect_out "view is aggregated from system:aggregate-to-view" 'configmaps' \
  k get clusterrole view -o 'jsonpath={.rules[*].resources}'
expect_out "admin aggregates edit which aggregates view" 'rolebindings.*configmaps|configmaps.*rolebindings' \
  k get clusterrole admin -o 'jsonpath={.rules[*].resources}'

# 2. Anonymous requests: health and version are public, the rest is 403.
URL="https://127.0.0.1:$E2E_KAPI_PORT"
expect_eq "anonymous /healthz" "ok" curl -sk "$URL/healthz"
expect_out "anonymous /version" '"gitVersion"' curl -sk "$URL/version"
expect_out "anonymous list of namespaces is 403 in upstream's words" \
  'namespaces is forbidden: User \\"system:anonymous\\" cannot list resource \\"namespaces\\" in API group \\"\\" at the cluster scope' \
  curl -sk "$URL/api/v1/namespaces"
expect_out "anonymous /apis is 403 for a non-resource URL" \
  'forbidden: User \\"system:anonymous\\" cannot get path \\"/apis\\"' curl -sk "$URL/apis"

# 3. A service account's token: 403 until a Role and RoleBinding allow it.
k create namespace "$NS" >/dev/null
k create serviceaccount app -n "$NS" >/dev/null
if run_cmd k create token app -n "$NS"; then
  pass "kubectl create token"
  user_kubeconfig sa "$OUT"
else
  fail "kubectl create token"
fi
user_kubeconfig eve eve-token
user_kubeconfig bob bob-token

expect_fail "service account: get configmaps is 403 with the exact message" \
  "Error from server (Forbidden): configmaps is forbidden: User \"$SA_USER\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"$NS\"" \
  as_user sa get configmaps -n "$NS"
expect_fail "service account: named get is 403 with the name" \
  "Error from server (Forbidden): configmaps \"kube-root-ca.crt\" is forbidden: User \"$SA_USER\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"$NS\"" \
  as_user sa get configmap kube-root-ca.crt -n "$NS"
expect_no "can-i get configmaps: no" as_user sa auth can-i get configmaps -n "$NS"

expect_ok "create role" k create role cm-reader --verb=get,list,watch --resource=configmaps -n "$NS"
expect_ok "create rolebinding" k create rolebinding cm-reader --role=cm-reader --serviceaccount="$NS:app" -n "$NS"
if wait_until 10 as_user sa get configmaps -n "$NS" >/dev/null 2>&1; then
  pass "service account: get configmaps allowed after role + rolebinding"
else
  run_cmd as_user sa get configmaps -n "$NS"; fail "service account: get configmaps allowed after role + rolebinding"
fi
expect_eq "can-i get configmaps: yes" "yes" as_user sa auth can-i get configmaps -n "$NS"
expect_no "can-i delete configmaps: no" as_user sa auth can-i delete configmaps -n "$NS"
expect_no "can-i get configmaps in another namespace: no" as_user sa auth can-i get configmaps -n default
expect_eq "admin: can-i --as the service account" "yes" k auth can-i get configmaps -n "$NS" --as="$SA_USER"
expect_eq "admin: can-i anything" "yes" k auth can-i '*' '*'
expect_out "can-i --list shows the role's rules" 'configmaps +\[\] +\[\] +\[get list watch\]' \
  as_user sa auth can-i --list -n "$NS"
expect_out "can-i --list shows the bootstrap self-review rules" 'selfsubjectaccessreviews.authorization.k8s.io +\[\] +\[\] +\[create\]' \
  as_user sa auth can-i --list -n "$NS"
expect_out "can-i --list shows discovery URLs" '\[/api/\*\] +\[\] +\[get\]' as_user sa auth can-i --list -n "$NS"
k delete rolebinding cm-reader -n "$NS" >/dev/null
if wait_until 10 sh -c "! '$KUBECTL' --kubeconfig '$WORK/sa.kubeconfig' --cache-dir '$CACHE' get configmaps -n $NS >/dev/null 2>&1"; then
  pass "deleting the rolebinding takes the permission away"
else
  fail "deleting the rolebinding takes the permission away"
fi

# 4. Escalation prevention: eve may create roles and bindings but holds little.
k create role role-maker --verb=create,update,get --resource=roles,rolebindings -n "$NS" >/dev/null
k create role cm-get --verb=get --resource=configmaps -n "$NS" >/dev/null
k create role pod-deleter --verb=delete --resource=pods -n "$NS" >/dev/null
k create rolebinding eve-role-maker --role=role-maker --group=devs -n "$NS" >/dev/null
k create rolebinding eve-cm-get --role=cm-get --user=eve -n "$NS" >/dev/null
wait_until 10 sh -c "[ \"\$('$KUBECTL' --kubeconfig '$WORK/eve.kubeconfig' --cache-dir '$CACHE' auth can-i get configmaps -n $NS 2>/dev/null)\" = yes ]"
expect_fail "escalation: a role granting more than eve holds is refused" \
  "roles.rbac.authorization.k8s.io \"too-much\" is forbidden: user \"eve\" (groups=[\"devs\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\"]}" \
  as_user eve create role too-much --verb=delete --resource=pods -n "$NS"
expect_ok "escalation: a role within eve's permissions is allowed" \
  as_user eve create role within --verb=get --resource=configmaps -n "$NS"
expect_fail "escalation: binding a role eve does not hold is refused" \
  "rolebindings.rbac.authorization.k8s.io \"bind-deleter\" is forbidden: user \"eve\" (groups=[\"devs\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:" \
  as_user eve create rolebinding bind-deleter --role=pod-deleter --user=bob -n "$NS"
k create role binder --verb=bind --resource=roles --resource-name=pod-deleter -n "$NS" >/dev/null
k create rolebinding eve-binder --role=binder --user=eve -n "$NS" >/dev/null
if wait_until 10 as_user eve create rolebinding bind-deleter --role=pod-deleter --user=bob -n "$NS" >/dev/null 2>&1; then
  pass "escalation: with bind on the role, eve may bind it"
else
  run_cmd as_user eve create rolebinding bind-deleter --role=pod-deleter --user=bob -n "$NS"; fail "escalation: with bind on the role, eve may bind it"
fi
k create role escalator --verb=escalate --resource=roles -n "$NS" >/dev/null
k create rolebinding eve-escalator --role=escalator --user=eve -n "$NS" >/dev/null
if wait_until 10 as_user eve create role too-much --verb=delete --resource=pods -n "$NS" >/dev/null 2>&1; then
  pass "escalation: with escalate on roles, eve may grant more"
else
  run_cmd as_user eve create role too-much --verb=delete --resource=pods -n "$NS"; fail "escalation: with escalate on roles, eve may grant more"
fi
k create clusterrole cr-maker --verb=create --resource=clusterroles >/dev/null
k create clusterrolebinding eve-cr-maker --clusterrole=cr-maker --user=eve >/dev/null
wait_until 10 sh -c "[ \"\$('$KUBECTL' --kubeconfig '$WORK/eve.kubeconfig' --cache-dir '$CACHE' auth can-i create clusterroles 2>/dev/null)\" = yes ]"
expect_fail "escalation: an aggregationRule needs cluster-admin" \
  'clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule' \
  as_user eve create clusterrole agg --aggregation-rule=x=y

# 5. Impersonation needs the impersonate verb.
expect_fail "kubectl --as without impersonate is 403" \
  'users "bob" is forbidden: User "eve" cannot impersonate resource "users" in API group "" at the cluster scope' \
  as_user eve get configmaps -n "$NS" --as=bob
k create configmap cm1 -n "$NS" >/dev/null
expect_out "admin may impersonate (eve may get configmaps)" '^cm1 ' k get configmap cm1 -n "$NS" --as=eve --no-headers
expect_fail "impersonated identity is authorized as itself" \
  "configmaps is forbidden: User \"bob\" cannot list resource \"configmaps\"" \
  k get configmaps -n "$NS" --as=bob

# 6. Aggregation follows new labelled roles.
k create -f - >/dev/null <<'EOF'
{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
 "metadata": {"name": "extra-view", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
 "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list"]}]}
EOF
if wait_until 10 sh -c "'$KUBECTL' --kubeconfig '$KUBECONFIG_FILE' --cache-dir '$CACHE' get clusterrole admin -o jsonpath='{.rules[*].resources}' | grep -q widgets"; then
  pass "a role labelled aggregate-to-view reaches view, edit and admin"
else
  fail "a role labelled aggregate-to-view reaches view, edit and admin"
fi

# 7. A restart reconciles the bootstrap policy as upstream: a role trimmed without
# autoupdate=false gets its rules back; one annotated autoupdate=false keeps the user's change.
rules_of() {
  "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$CACHE" get clusterrole "$1" -o json |
    python3 -c 'import json,sys; print(len(json.load(sys.stdin)["rules"]))'
}
k patch clusterrole system:heapster --type=json -p '[{"op":"remove","path":"/rules/1"}]' >/dev/null
k annotate clusterrole system:kube-dns rbac.authorization.kubernetes.io/autoupdate=false --overwrite >/dev/null
k patch clusterrole system:kube-dns --type=json -p '[{"op":"remove","path":"/rules/0"}]' >/dev/null
k delete clusterrolebinding system:monitoring >/dev/null
start_kapi
# the kept rule, then the removed one's get, list and watch, a rule each (upstream appends the
# missing rules broken down)
expect_eq "restart: a trimmed bootstrap role gets its rules back" "4" rules_of system:heapster
expect_eq "restart: a role with autoupdate=false keeps the user's change" "0" rules_of system:kube-dns
expect_ok "restart: a deleted bootstrap binding is created again" k get clusterrolebinding system:monitoring
expect_eq "restart: permissions come back from storage" "yes" as_user eve auth can-i get configmaps -n "$NS"

# 8. Modes.
run_cmd "$KAPI_BIN" --secure-port "$(free_port)" --data-dir "$WORK/bad" --authorization-mode=RBAC,Sometimes
if [ $? -ne 0 ] && grep -Fq 'unknown authorization mode "Sometimes"' <<<"$OUT"; then
  pass "an unknown authorization mode fails start-up"
else
  fail "an unknown authorization mode fails start-up"
fi
start_kapi --authorization-mode=AlwaysDeny
expect_eq "AlwaysDeny: system:masters may still do anything" "yes" k auth can-i create pods -n "$NS"
expect_fail "AlwaysDeny: others are refused with the reason" \
  'cannot list resource "configmaps" in API group "" in the namespace "rbac-e2e": Everything is forbidden.' \
  as_user eve get configmaps -n "$NS"

summary

#!/usr/bin/env bash
# Authentication end-to-end: real etcd, real kapi, real kubectl. Service-account tokens from
# `kubectl create token` authenticate (`kubectl auth whoami`), stop working when the account or
# the bound object is deleted, survive a restart (the generated signing key is reused) and are
# refused for another audience; garbage tokens are 401; static tokens from --token-auth-file
# work; TokenReview answers; `kubectl --as` works for the admin and is refused (403) for a user
# the authorizer does not allow to impersonate; --anonymous-auth=false makes credential-less
# requests 401; a front proxy's certificate (--requestheader-*) names the user in headers, curl
# against `kubectl auth whoami`, and the extension-apiserver-authentication ConfigMap says so.
#
#   KAPI_BIN=path/to/kapi-apiserver e2e/auth.sh   (default: builds the debug binary)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=e2e/lib.sh
. "$ROOT/e2e/lib.sh"

e2e_init auth
e2e_start_etcd

# t TOKEN ARGS...: kubectl with only a bearer token (no client certificate).
t() { local tok=$1; shift; "$KUBECTL" --kubeconfig /dev/null --server "https://127.0.0.1:$PORT" \
  --certificate-authority "$CA" --cache-dir "$CACHE" --token "$tok" "$@"; }
# raw_code ARGS...: the HTTP status curl sees.
raw_code() { curl -s -o /dev/null -w '%{http_code}' --cacert "$CA" "$@"; }

UNAUTHORIZED="error: You must be logged in to the server (Unauthorized)"
SA_GROUPS='\[system:serviceaccounts system:serviceaccounts:default system:authenticated\]'

start_kapi_on_etcd main --token-auth-file "$ROOT/config/token-auth.csv"

# Service-account tokens.
expect_ok "create serviceaccount robot" k create serviceaccount robot
run_cmd k create token robot; TOKEN="$OUT"
if [[ "$TOKEN" =~ ^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$ ]]; then pass "create token gives a JWT"; else fail "create token gives a JWT"; fi
expect_out "whoami names the service account" "Username +system:serviceaccount:default:robot" t "$TOKEN" auth whoami
expect_out "whoami lists the service account's groups" "Groups +$SA_GROUPS" t "$TOKEN" auth whoami
expect_out "whoami shows the token's credential id" "credential-id +\[JTI=" t "$TOKEN" auth whoami
expect_out "a token is good for the API (discovery)" '"kind":"APIVersions"' t "$TOKEN" get --raw /api
expect_out "the token request answers expirationTimestamp and the defaults" \
  "^3600 https://kubernetes.default.svc.cluster.local [0-9]{4}-" \
  k create token robot -o jsonpath='{.spec.expirationSeconds} {.spec.audiences[0]} {.status.expirationTimestamp}'
expect_out "--duration sets expirationSeconds" "^7200$" k create token robot --duration=2h -o jsonpath='{.spec.expirationSeconds}'
expect_fail "a duration under 10 minutes is invalid" \
  'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes' \
  k create token robot --duration=5m
expect_fail "a token for a missing service account is 404" 'serviceaccounts "ghost" not found' k create token ghost

# Audiences.
run_cmd k create token robot --audience=vault; VAULT="$OUT"
expect_fail "a token for another audience is 401 on the API" "$UNAUTHORIZED" t "$VAULT" auth whoami
# With client-side validation on, as users run it: kubectl lists customresourcedefinitions for a
# kind without a PATCH operation, then validates against /openapi/v2, where a review requires
# `spec` alone (not `metadata`).
review() { printf '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"%s"%s}}' "$1" "${2:+,\"audiences\":[\"$2\"]}"; }
expect_eq "TokenReview accepts the token for its audience" "true vault system:serviceaccount:default:robot" \
  k create -f - -o jsonpath='{.status.authenticated} {.status.audiences[0]} {.status.user.username}' <<<"$(review "$VAULT" vault)"
expect_out "TokenReview refuses it for the API's audience, with upstream's reason" \
  'token audiences \["vault"\] is invalid for the target audiences \["https://kubernetes.default.svc.cluster.local"\]' \
  k create -f - -o jsonpath='{.status.authenticated} {.status.error}' <<<"$(review "$VAULT")"
expect_eq "TokenReview of the API token" "true system:serviceaccount:default:robot" \
  k create -f - -o jsonpath='{.status.authenticated} {.status.user.username}' <<<"$(review "$TOKEN")"

# Garbage.
expect_fail "a garbage token is 401" "$UNAUTHORIZED" t garbage get namespaces
run_cmd curl -s --cacert "$CA" -H "Authorization: Bearer garbage" "https://127.0.0.1:$PORT/api/v1/namespaces"
expect_eq "the 401 is an Unauthorized Status" "401 Unauthorized Unauthorized" \
  python3 -c 'import json,sys; s=json.loads(sys.argv[1]); print(s["code"], s["reason"], s["message"])' "$OUT"

# Bound objects.
expect_ok "create secret s1" k create secret generic s1 --from-literal=a=b
run_cmd k create token robot --bound-object-kind=Secret --bound-object-name=s1; BOUND="$OUT"
expect_out "a secret-bound token works" "system:serviceaccount:default:robot" t "$BOUND" auth whoami
expect_ok "delete the secret" k delete secret s1
expect_fail "the secret-bound token is 401 once the secret is gone" "$UNAUTHORIZED" t "$BOUND" auth whoami
expect_ok "create node n1" k create -f - <<<'{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}'
run_cmd k create token robot --bound-object-kind=Node --bound-object-name=n1; NODE_TOKEN="$OUT"
expect_out "a node-bound token names its node" "node-name +\[n1\]" t "$NODE_TOKEN" auth whoami
expect_ok "create pod p1 on n1 as robot" k create -f - <<<'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1"},"spec":{"serviceAccountName":"robot","nodeName":"n1","containers":[{"name":"c","image":"nginx"}]}}'
run_cmd k create token robot --bound-object-kind=Pod --bound-object-name=p1; POD_TOKEN="$OUT"
expect_out "a pod-bound token names its pod" "pod-name +\[p1\]" t "$POD_TOKEN" auth whoami
expect_out "a pod-bound token names its pod's node" "node-name +\[n1\]" t "$POD_TOKEN" auth whoami
expect_ok "delete pod p1 at once" k delete pod p1 --grace-period=0 --force
expect_fail "the pod-bound token is 401 once the pod is gone" "$UNAUTHORIZED" t "$POD_TOKEN" auth whoami
expect_ok "delete node n1" k delete node n1
expect_fail "the node-bound token is 401 once the node is gone" "$UNAUTHORIZED" t "$NODE_TOKEN" auth whoami
expect_fail "binding to a missing pod is 404" 'pods "nope" not found' \
  k create token robot --bound-object-kind=Pod --bound-object-name=nope

# The signing key survives a restart.
start_kapi_on_etcd main --token-auth-file "$ROOT/config/token-auth.csv"
expect_out "a token outlives a restart (the key is reused)" "Username +system:serviceaccount:default:robot" t "$TOKEN" auth whoami

# Deleting (or replacing) the service account ends its tokens.
expect_ok "delete serviceaccount robot" k delete serviceaccount robot
expect_fail "the deleted account's token is 401" "$UNAUTHORIZED" t "$TOKEN" auth whoami
expect_ok "create serviceaccount robot again" k create serviceaccount robot
expect_fail "a new account of the same name does not revive the old token" "$UNAUTHORIZED" t "$TOKEN" auth whoami

# Static tokens.
JANE=31ada4fd-adec-460c-809a-9e56ceb75269
expect_out "a static token names its user" "Username +jane" t "$JANE" auth whoami
expect_out "a static token's user has its uid" "UID +1001" t "$JANE" auth whoami
expect_out "a static token's groups plus system:authenticated" "Groups +\[dev ops system:authenticated\]" t "$JANE" auth whoami

# Impersonation by the admin.
expect_out "the admin impersonates a user" "Username +bob" k auth whoami --as=bob
expect_out "the impersonated user is in system:authenticated" "Groups +\[system:authenticated\]" k auth whoami --as=bob
expect_out "the admin impersonates user and groups" "Groups +\[g1 g2 system:authenticated\]" k auth whoami --as=bob --as-group=g1 --as-group=g2
expect_out "the admin impersonates a service account" "Groups +$SA_GROUPS" k auth whoami --as=system:serviceaccount:default:robot
expect_out "the admin impersonates a uid" "UID +u-42" k auth whoami --as=bob --as-uid=u-42

# An authorizer that refuses: impersonation is upstream's 403; credential-less requests 401.
start_kapi_on_etcd deny --authorization-mode=AlwaysDeny --anonymous-auth=false --token-auth-file "$ROOT/config/token-auth.csv"
expect_fail "impersonation refused by the authorizer is 403 in upstream's words" \
  'users "bob" is forbidden: User "jane" cannot impersonate resource "users" in API group "" at the cluster scope' \
  t "$JANE" get --raw /api/v1/namespaces --as=bob
expect_eq "without --anonymous-auth a request without credentials is 401" "401" raw_code "https://127.0.0.1:$PORT/api"
expect_eq "a static token is still recognised (then forbidden)" "403" raw_code -H "Authorization: Bearer $JANE" "https://127.0.0.1:$PORT/api/v1/namespaces"

# The front proxy (--requestheader-*): a certificate from the request-header CA with an allowed
# CN names the user in X-Remote-* headers; a normal client certificate, a CN not allowed and
# no certificate do not. Every answer below is kube-apiserver v1.28.7's, run the same way
# (1.28 has no --requestheader-uid-headers: the uid lines are 1.33's).
FP="$WORK/front-proxy"; mkdir -p "$FP"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$FP/ca.key" -out "$FP/ca.crt" -subj "/CN=front-proxy-ca" -days 1 2>/dev/null
printf 'extendedKeyUsage=clientAuth\n' >"$FP/ext"
for cn in front-proxy-client intruder; do
  openssl req -newkey rsa:2048 -nodes -keyout "$FP/$cn.key" -out "$FP/$cn.csr" -subj "/CN=$cn" 2>/dev/null
  openssl x509 -req -in "$FP/$cn.csr" -CA "$FP/ca.crt" -CAkey "$FP/ca.key" -CAcreateserial -out "$FP/$cn.crt" -days 1 -extfile "$FP/ext" 2>/dev/null
done
start_kapi_on_etcd front --requestheader-client-ca-file "$FP/ca.crt" --requestheader-allowed-names front-proxy-client \
  --requestheader-username-headers X-Remote-User --requestheader-uid-headers X-Remote-Uid \
  --requestheader-group-headers X-Remote-Group --requestheader-extra-headers-prefix X-Remote-Extra- \
  --proxy-client-cert-file "$FP/front-proxy-client.crt" --proxy-client-key-file "$FP/front-proxy-client.key"
# ssr CERT HEADERS...: a SelfSubjectReview with curl as CERT (none: no certificate); prints
# the HTTP code, then the user info or the Status message.
ssr() {
  local cert=$1; shift
  local auth=(); [ "$cert" != none ] && auth=(--cert "$FP/$cert.crt" --key "$FP/$cert.key")
  [ "$cert" = admin ] && auth=(--cert "$WORK/admin.crt" --key "$WORK/admin.key")
  curl -s --cacert "$CA" "${auth[@]}" "$@" -w '\n%{http_code}' -H 'Content-Type: application/json' \
    -d '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' \
    "https://127.0.0.1:$PORT/apis/authentication.k8s.io/v1/selfsubjectreviews" |
    python3 -c '
import json, sys
body, code = sys.stdin.read().rsplit("\n", 1)
o = json.loads(body)
u = o["status"]["userInfo"] if o["kind"] == "SelfSubjectReview" else o["message"]
if isinstance(u, dict):  # 1.33 adds the certificate credential id (1.28 does not)
    u.get("extra", {}).pop("authentication.kubernetes.io/credential-id", None)
    u = {k: v for k, v in u.items() if v}
print(code, json.dumps(u, sort_keys=True))'
}
grep client-certificate-data "$KUBECONFIG_FILE" | awk '{print $2}' | base64 -d >"$WORK/admin.crt"
grep client-key-data "$KUBECONFIG_FILE" | awk '{print $2}' | base64 -d >"$WORK/admin.key"
ALICE=(-H "X-Remote-User: alice" -H "X-Remote-Uid: uid-42" -H "X-Remote-Group: devs" -H "X-Remote-Group: ops"
  -H "X-Remote-Extra-Scopes: openid" -H "X-Remote-Extra-Scopes: profile" -H "X-Remote-Extra-Acme.com%2Fproject: p1")
expect_eq "the front proxy's certificate: the headers are the user" \
  '201 {"extra": {"acme.com/project": ["p1"], "scopes": ["openid", "profile"]}, "groups": ["devs", "ops", "system:authenticated"], "uid": "uid-42", "username": "alice"}' \
  ssr front-proxy-client "${ALICE[@]}"
expect_eq "the front proxy's certificate without a user header is 401" '401 "Unauthorized"' \
  ssr front-proxy-client -H "X-Remote-Group: devs"
expect_eq "the request-header CA's certificate with a CN not allowed is 401" '401 "Unauthorized"' \
  ssr intruder "${ALICE[@]}"
expect_eq "a normal client certificate: the headers are ignored" \
  '201 {"groups": ["system:masters", "system:authenticated"], "username": "kubernetes-admin"}' \
  ssr admin "${ALICE[@]}"
expect_eq "no certificate: anonymous, whatever the headers say" \
  '403 "selfsubjectreviews.authentication.k8s.io is forbidden: User \"system:anonymous\" cannot create resource \"selfsubjectreviews\" in API group \"authentication.k8s.io\" at the cluster scope"' \
  ssr none "${ALICE[@]}"
expect_out "kubectl auth whoami with the admin kubeconfig is the admin" "Username +kubernetes-admin" k auth whoami
expect_fail "kubectl with the front proxy's certificate (no headers) is 401" "$UNAUTHORIZED" \
  "$KUBECTL" --kubeconfig /dev/null --server "https://127.0.0.1:$PORT" --certificate-authority "$CA" --cache-dir "$CACHE" \
  --client-certificate "$FP/front-proxy-client.crt" --client-key "$FP/front-proxy-client.key" auth whoami
cm() { k -n kube-system get configmap extension-apiserver-authentication -o jsonpath="{.data.$1}"; }
expect_eq "the ConfigMap names the allowed names" '["front-proxy-client"]' cm requestheader-allowed-names
expect_eq "the ConfigMap names the username headers" '["X-Remote-User"]' cm requestheader-username-headers
expect_eq "the ConfigMap names the uid headers (1.32+)" '["X-Remote-Uid"]' cm requestheader-uid-headers
expect_eq "the ConfigMap names the group headers" '["X-Remote-Group"]' cm requestheader-group-headers
expect_eq "the ConfigMap names the extra prefix" '["X-Remote-Extra-"]' cm requestheader-extra-headers-prefix
expect_eq "the ConfigMap holds the request-header CA" "$(cat "$FP/ca.crt")" cm requestheader-client-ca-file
# The proxy client pair is checked at start: a key of another certificate is refused.
run_cmd timeout 20 "$KAPI_BIN" --secure-port "$(free_port)" --data-dir "$WORK/kapi-badpair" \
  --proxy-client-cert-file "$FP/front-proxy-client.crt" --proxy-client-key-file "$FP/intruder.key"
if [ $? -ne 0 ] && grep -Fq "does not match public key" <<<"$OUT"; then pass "a proxy client key of another certificate stops start-up"; else fail "a proxy client key of another certificate stops start-up"; fi

summary

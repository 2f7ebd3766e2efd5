#!/usr/bin/env bash
# kapi as envtest's kube-apiserver: replays controller-runtime envtest's start-up of its control
# plane (controller-runtime v0.15–v0.21, pkg/internal/testing/controlplane: etcd.go,
# apiserver.go, auth.go; pkg/internal/testing/certs/tinyca.go; pkg/envtest/server.go) against the
# KUBEBUILDER_ASSETS directory hack/envtest-assets.sh lays out, then does what a user's suite does
# next through kubectl with the admin certificate envtest would make.
#
#  1. etcd from the assets with envtest's flags, polled on /health;
#  2. envtest's certificates in a fresh cert dir: a serving pair signed by its own CA
#     (apiserver.crt/.key), a service-account signer (sa-signer.crt/.key), a client CA
#     (client-cert-auth-ca.crt); RSA 2048, PKCS#8 keys, as its TinyCA makes them;
#  3. `kube-apiserver --help` probed for `--insecure-port` (passed as 0 only when listed);
#  4. kube-apiserver started with envtest's exact flags, polled on https://.../healthz without
#     verifying the certificate and without a client certificate, every 100 ms until 200;
#  5. the admin user envtest provisions (CN=admin, O=system:masters, signed by the client CA)
#     and a kubeconfig trusting envtest's serving CA: create a CRD, wait until Established,
#     create/get/patch/list/delete a custom object, RBAC for a second user, a service-account
#     token signed with envtest's signer;
#  6. SIGTERM, and kapi exits 0 (envtest's Stop).
#
#   KAPI_BIN=path/to/kapi-apiserver e2e/envtest.sh   (default: builds the debug binary)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=e2e/lib.sh
. "$ROOT/e2e/lib.sh"

e2e_init envtest
ASSETS="$WORK/assets"
KAPI_BIN="$KAPI_BIN" hack/envtest-assets.sh "$ASSETS" >/dev/null || { echo "e2e: envtest-assets.sh failed"; exit 1; }
expect_ok "assets: kube-apiserver, etcd and kubectl are executables" \
  test -x "$ASSETS/kube-apiserver" -a -x "$ASSETS/etcd" -a -x "$ASSETS/kubectl"
KUBECTL="$ASSETS/kubectl"

# --- 1. etcd, as controlplane/etcd.go starts it ---------------------------------------------
ETCD_PORT=$(free_port)
ETCD_URL="http://127.0.0.1:$ETCD_PORT"
mkdir -p "$WORK/etcd"
"$ASSETS/etcd" --advertise-client-urls="$ETCD_URL" --data-dir="$WORK/etcd" \
  --listen-client-urls="$ETCD_URL" --listen-peer-urls=http://localhost:0 >"$WORK/etcd.log" 2>&1 &
PIDS+=($!)
wait_until 30 curl -sf -o /dev/null "$ETCD_URL/health" || { echo "e2e: etcd did not start"; tail "$WORK/etcd.log"; exit 1; }

# --- 2. envtest's certificates (tinyca.go) ---------------------------------------------------
CERTS="$WORK/k8s_test_framework_certs"
mkdir -p "$CERTS"
PKI="$WORK/envtest-ca"
mkdir -p "$PKI"
# tiny_ca NAME: a self-signed CA (CN envtest-environment, O envtest) in $PKI/NAME.{crt,key}.
tiny_ca() {
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/O=envtest/CN=envtest-environment" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign" \
    -keyout "$PKI/$1.key" -out "$PKI/$1.crt" 2>/dev/null
}
# tiny_leaf CA OUT SUBJECT EXTENSIONS: a leaf signed by $PKI/CA, valid a week, into OUT.{crt,key}.
SERIAL=1
tiny_leaf() {
  local ca=$1 out=$2 subj=$3 ext=$4
  openssl req -new -newkey rsa:2048 -nodes -subj "$subj" -keyout "$out.key" -out "$out.csr" 2>/dev/null
  printf '%b\n' "$ext" >"$out.ext"
  openssl x509 -req -in "$out.csr" -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" -set_serial "$SERIAL" \
    -days 7 -extfile "$out.ext" -out "$out.crt" 2>/dev/null
  SERIAL=$((SERIAL + 1))
}
tiny_ca serving
tiny_leaf serving "$CERTS/apiserver" "/O=envtest/CN=localhost" \
  "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth"
tiny_ca sa-signer
cp "$PKI/sa-signer.crt" "$CERTS/sa-signer.crt"
cp "$PKI/sa-signer.key" "$CERTS/sa-signer.key"
tiny_ca client
cp "$PKI/client.crt" "$CERTS/client-cert-auth-ca.crt"
# user NAME [GROUP]: envtest's CertAuthn.AddUser: a client certificate signed by the client CA.
user() {
  local subj="/CN=$1"
  [ $# -ge 2 ] && subj="/O=$2/CN=$1"
  tiny_leaf client "$PKI/user-$1" "$subj" "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth"
}
user admin system:masters
user jane

# --- 3. + 4. kube-apiserver with envtest's flags, polled as process.go polls ----------------
PORT=$(free_port)
ARGS=(
  --allow-privileged=true
  --authorization-mode=RBAC
  --bind-address=127.0.0.1
  --cert-dir="$CERTS"
  --client-ca-file="$CERTS/client-cert-auth-ca.crt"
  --disable-admission-plugins=ServiceAccount
  --etcd-servers="$ETCD_URL"
  --secure-port="$PORT"
  --service-account-issuer="https://127.0.0.1:$PORT/"
  --service-account-key-file="$CERTS/sa-signer.crt"
  --service-account-signing-key-file="$CERTS/sa-signer.key"
  --service-cluster-ip-range=10.0.0.0/24
  # What real suites add through APIServer.Configure() (OPA Gatekeeper's, among others): every
  # API version, feature gates, more admission plugins off. controller-runtime >= v0.19 no
  # longer passes the deprecated --advertise-address, so it is not passed here either.
  --runtime-config=api/all=true
  --feature-gates=MutatingAdmissionPolicy=true
  --disable-admission-plugins=ServiceAccount,NamespaceLifecycle
)
# discoverFlags: `--insecure-port` is passed (as 0) only when `--help` lists it.
if "$ASSETS/kube-apiserver" --help 2>&1 | grep -Eq '^\s*--insecure-port\b'; then
  ARGS+=(--insecure-port=0)
  pass "--help lists --insecure-port (passed as 0)"
else
  pass "--help does not list --insecure-port (not passed, as for kube-apiserver >= 1.24)"
fi
# envtest starts it in the Go test's working directory: nothing may land there.
mkdir -p "$WORK/cwd"
(cd "$WORK/cwd" && exec "$ASSETS/kube-apiserver" "${ARGS[@]}") >"$WORK/kapi.out" 2>"$WORK/kapi.log" &
KAPI_PID=$!
HEALTHZ="https://127.0.0.1:$PORT/healthz"
healthz_ok() { [ "$(curl -sk -o /dev/null -w '%{http_code}' "$HEALTHZ")" = 200 ]; }
if wait_until 60 healthz_ok; then pass "GET /healthz (no client certificate, unverified TLS) answers 200"
else fail "GET /healthz (no client certificate, unverified TLS) answers 200"; tail -20 "$WORK/kapi.log"; summary; exit 1; fi
expect_eq "/healthz body" "ok" curl -sk "$HEALTHZ"
for p in readyz livez; do
  expect_eq "anonymous /$p answers 200" 200 curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$PORT/$p"
done
expect_out "the ignored flags are logged" "--allow-privileged=true: accepted for kube-apiserver compatibility" cat "$WORK/kapi.log"
# The serving certificate is envtest's: it verifies against envtest's serving CA.
expect_eq "kapi serves envtest's apiserver.crt (verifies against its CA)" 200 \
  curl -s --cacert "$PKI/serving.crt" -o /dev/null -w '%{http_code}' "$HEALTHZ"

# --- 5. the user's side: envtest's rest.Config as a kubeconfig ------------------------------
# kubeconfig_for USER FILE: envtest's rest.Config for USER (Host, serving CA, client cert).
kubeconfig_for() {
  local f=$2
  "$KUBECTL" config --kubeconfig "$f" set-cluster envtest --server "https://127.0.0.1:$PORT" \
    --certificate-authority "$PKI/serving.crt" --embed-certs >/dev/null
  "$KUBECTL" config --kubeconfig "$f" set-credentials "$1" --client-certificate "$PKI/user-$1.crt" \
    --client-key "$PKI/user-$1.key" --embed-certs >/dev/null
  "$KUBECTL" config --kubeconfig "$f" set-context envtest --cluster envtest --user "$1" >/dev/null
  "$KUBECTL" config --kubeconfig "$f" use-context envtest >/dev/null
}
KUBECONFIG_FILE="$WORK/admin.kubeconfig"
kubeconfig_for admin "$KUBECONFIG_FILE"
JANE="$WORK/jane.kubeconfig"
kubeconfig_for jane "$JANE"
kj() { "$KUBECTL" --kubeconfig "$JANE" --cache-dir "$CACHE-jane" "$@"; }

expect_out "admin is envtest's admin in system:masters" '"username": "admin"' k auth whoami -o json
expect_out "the default namespace exists" "^namespace/default$" k get ns default -o name

k apply -f - >"$WORK/crd.out" 2>&1 <<'Y'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: guestbooks.webapp.example.com}
spec:
  group: webapp.example.com
  scope: Namespaced
  names: {plural: guestbooks, singular: guestbook, kind: Guestbook, listKind: GuestbookList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 1}
          status:
            type: object
            properties:
              ready: {type: boolean}
Y
OUT=$(cat "$WORK/crd.out")
if grep -q "created" <<<"$OUT"; then pass "CRD created"; else fail "CRD created"; fi
expect_out "CRD Established" "condition met" k wait --for=condition=Established crd/guestbooks.webapp.example.com --timeout=30s

gb() { printf 'apiVersion: webapp.example.com/v1\nkind: Guestbook\nmetadata: {name: %s, namespace: default}\nspec: {size: %s}\n' "$1" "$2"; }
expect_out "create a Guestbook" "^guestbook.webapp.example.com/first created$" k create -f <(gb first 2)
expect_fail "the CRD's schema is enforced" "spec.size" k create -f <(gb invalid 0)
expect_eq "get the Guestbook" "2" k get guestbook first -o jsonpath='{.spec.size}'
expect_out "patch the Guestbook" "patched" k patch guestbook first --type=merge -p '{"spec":{"size":3}}'
expect_out "patch its status subresource" "patched" k patch guestbook first --subresource=status --type=merge -p '{"status":{"ready":true}}'
expect_eq "spec and status as written" "3 true" k get guestbook first -o jsonpath='{.spec.size} {.status.ready}'
expect_out "list Guestbooks" "^guestbook.webapp.example.com/first$" k get guestbooks -o name

# RBAC: a second user, provisioned as envtest's AddUser does, is denied until bound.
expect_fail "jane cannot list guestbooks" \
  'User "jane" cannot list resource "guestbooks" in API group "webapp.example.com" in the namespace "default"' \
  kj get guestbooks
# can_i ARGS...: kubectl auth can-i's answer (it exits 1 for "no").
can_i() { k auth can-i "$@" 2>&1; return 0; }
expect_eq "can-i says no" "no" can_i list guestbooks.webapp.example.com --as=jane
expect_ok "a Role" k create role guestbook-reader --verb=get,list,watch --resource=guestbooks.webapp.example.com
expect_ok "a RoleBinding" k create rolebinding jane-reads --role=guestbook-reader --user=jane
expect_eq "can-i says yes once bound" "yes" can_i list guestbooks.webapp.example.com --as=jane
expect_out "jane can list guestbooks now" "^guestbook.webapp.example.com/first$" kj get guestbooks -o name
expect_fail "jane still cannot delete" 'cannot delete resource "guestbooks"' kj delete guestbook first

# A service-account token signed with envtest's sa-signer.key, for its issuer.
expect_ok "a ServiceAccount" k create serviceaccount robot
if run_cmd k create token robot; then
  TOKEN=$OUT
  pass "a token for it"
  expect_out "the token authenticates" "system:serviceaccount:default:robot" \
    "$KUBECTL" --kubeconfig /dev/null --server "https://127.0.0.1:$PORT" \
    --certificate-authority "$PKI/serving.crt" --token "$TOKEN" auth whoami
  PAYLOAD=$(cut -d. -f2 <<<"$TOKEN" | tr '_-' '/+')
  while [ $(( ${#PAYLOAD} % 4 )) -ne 0 ]; do PAYLOAD="$PAYLOAD="; done
  expect_out "its issuer is --service-account-issuer" "\"iss\":\"https://127.0.0.1:$PORT/\"" \
    bash -c "base64 -d <<<'$PAYLOAD'"
else
  fail "a token for it"
fi

expect_out "delete the Guestbook" "deleted" k delete guestbook first
expect_out "delete the CRD" "deleted" k delete crd guestbooks.webapp.example.com

# --runtime-config=api/all=true turned on the versions off by default, in discovery, routes
# and OpenAPI; a ValidatingAdmissionPolicy written as v1beta1 is read back as v1 and enforced.
expect_out "admissionregistration.k8s.io/v1beta1 is served" "^admissionregistration.k8s.io/v1beta1$" k api-versions
expect_out "and published in OpenAPI v3" "apis/admissionregistration.k8s.io/v1beta1" k get --raw /openapi/v3
k apply -f - >"$WORK/vap.out" 2>&1 <<'Y'
apiVersion: admissionregistration.k8s.io/v1beta1
kind: ValidatingAdmissionPolicy
metadata: {name: no-forbidden}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
  - {expression: "object.metadata.name != 'forbidden'", message: "that name is forbidden"}
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-forbidden}
spec: {policyName: no-forbidden, validationActions: [Deny]}
Y
expect_out "a v1beta1 ValidatingAdmissionPolicy and binding" "validatingadmissionpolicybinding.admissionregistration.k8s.io/no-forbidden created" cat "$WORK/vap.out"
expect_eq "read back as v1" "admissionregistration.k8s.io/v1" \
  k get validatingadmissionpolicies.v1.admissionregistration.k8s.io no-forbidden -o jsonpath='{.apiVersion}'
vap_denies() { ! k create configmap forbidden >/dev/null 2>&1; }
if wait_until 30 vap_denies; then pass "the policy is enforced"; else fail "the policy is enforced"; fi
expect_fail "its words" "ValidatingAdmissionPolicy 'no-forbidden' with binding 'no-forbidden' denied request: that name is forbidden" \
  k create configmap forbidden

# envtest's semantics: no controllers. A deleted namespace with content stays Terminating and
# a dependent of an owner that never existed is not collected, as on envtest's kube-apiserver.
expect_ok "a namespace with a ConfigMap" bash -c "'$KUBECTL' --kubeconfig '$KUBECONFIG_FILE' create ns left && '$KUBECTL' --kubeconfig '$KUBECONFIG_FILE' -n left create configmap kept"
k apply -f - >/dev/null 2>&1 <<'Y'
apiVersion: v1
kind: ConfigMap
metadata:
  name: orphan
  namespace: default
  ownerReferences: [{apiVersion: v1, kind: Pod, name: never-created, uid: 4d7c1d52-3b8c-4e38-9c0a-3f5d1b6a0001}]
Y
expect_out "deleting it is accepted" "deleted" k delete ns left --wait=false
expect_eq "the namespace is Terminating" "Terminating" k get ns left -o jsonpath='{.status.phase}'
sleep 2
expect_eq "and still is, its ConfigMap kept (no namespace controller)" "Terminating kept" \
  bash -c "echo \$('$KUBECTL' --kubeconfig '$KUBECONFIG_FILE' get ns left -o jsonpath='{.status.phase}') \$('$KUBECTL' --kubeconfig '$KUBECONFIG_FILE' -n left get configmap kept -o jsonpath='{.metadata.name}')"
expect_out "the dependent of a missing owner is kept (no garbage collector)" "^configmap/orphan$" k get configmap orphan -o name
expect_out "KAPI_LOG (the assets' kube-apiserver.log) has this start's arguments" \
  "started with: --controllers=-\* .*--runtime-config=api/all=true" cat "$ASSETS/kube-apiserver.log"

expect_eq "nothing written to the working directory" "" ls -A "$WORK/cwd"
expect_ok "kapi's admin kubeconfig is in --cert-dir" test -s "$CERTS/admin.kubeconfig"

# --- 6. envtest's Stop: SIGTERM, then the process is waited for ------------------------------
kill -TERM "$KAPI_PID"
STOPPED=""
for _ in $(seq 1 200); do kill -0 "$KAPI_PID" 2>/dev/null || { STOPPED=1; break; }; sleep 0.1; done
if [ -n "$STOPPED" ]; then
  wait "$KAPI_PID"; RC=$?
  KAPI_PID=""
  expect_eq "kube-apiserver exits 0 on SIGTERM" 0 echo "$RC"
else
  fail "kube-apiserver stops within 20 s of SIGTERM"
fi

# --- 7. opting in to kapi's controllers: the same start with KAPI_ENVTEST_CONTROLLERS='*' -------
# Also with versions kube-apiserver accepts and kapi does not serve: started, and logged.
(cd "$WORK/cwd" && KAPI_ENVTEST_CONTROLLERS='*' exec "$ASSETS/kube-apiserver" "${ARGS[@]}" \
  --runtime-config=apps/v1beta2=true,resource.k8s.io/v1beta1=true) >>"$WORK/kapi.out" 2>>"$WORK/kapi.log" &
KAPI_PID=$!
if wait_until 60 healthz_ok; then
  pass "restarted with KAPI_ENVTEST_CONTROLLERS='*'"
  for gv in apps/v1beta2 resource.k8s.io/v1beta1; do
    expect_out "--runtime-config=$gv=true is accepted and logged as not served" \
      "runtime-config=$gv: kapi does not serve this group/version" cat "$WORK/kapi.log" "$ASSETS/kube-apiserver.log"
  done
  # The namespace left Terminating above is emptied and removed now.
  ns_gone() { ! k get ns left >/dev/null 2>&1; }
  if wait_until 60 ns_gone; then pass "the namespace controller finishes the deletion"; else fail "the namespace controller finishes the deletion"; fi
  orphan_gone() { ! k get configmap orphan >/dev/null 2>&1; }
  if wait_until 60 orphan_gone; then pass "the garbage collector deletes the orphan"; else fail "the garbage collector deletes the orphan"; fi
  kill -TERM "$KAPI_PID"; wait "$KAPI_PID"; KAPI_PID=""
else
  fail "restarted with KAPI_ENVTEST_CONTROLLERS='*'"
fi

# --- 8. refused starts: upstream's words and exit code, also in KAPI_LOG --------------------
# refused NAME TEXT ARGS...: the wrapper exits 1 with TEXT on stderr and in kube-apiserver.log.
refused() {
  local n=$1 text=$2; shift 2
  local log="$WORK/refused.log" rc
  (cd "$WORK/cwd" && KAPI_LOG="$log" exec "$ASSETS/kube-apiserver" "${ARGS[@]}" "$@") >"$WORK/refused.out" 2>&1
  rc=$?
  if [ "$rc" = 1 ] && grep -Fq -- "$text" "$WORK/refused.out" && grep -Fq -- "$text" "$log" \
    && grep -q "refused to start" "$log"; then
    pass "$n: exit 1, $text"
  else
    fail "$n (want exit 1 and: $text; got $rc: $(head -3 "$WORK/refused.out"))"
  fi
  rm -f "$log"
}
refused "an unknown --runtime-config group" "unknown api groups foo.example.com" --runtime-config=foo.example.com/v1=true
refused "a version upstream does not have" "group version apps/v9 that has not been registered" --runtime-config=apps/v9=true
refused "a malformed --runtime-config value" 'invalid value of apps/v1: yes, err: strconv.ParseBool: parsing "yes": invalid syntax' --runtime-config=apps/v1=yes
refused "api/all=false alone" "invalid key with only api/all=false" --runtime-config=api/all=false
refused "a key that is not group/version" "runtime-config invalid key a/b/c/d" --runtime-config=a/b/c/d=true
refused "an unknown flag" "Error: unknown flag: --no-such-flag" --no-such-flag=1
refused "a malformed flag value" 'Error: invalid argument "abc" for "--secure-port" flag: strconv.ParseInt: parsing "abc": invalid syntax' --secure-port=abc
refused "an unknown feature gate" "unrecognized feature gate: NoSuchGate" --feature-gates=NoSuchGate=true
refused "a locked feature gate" "cannot set feature gate AnyVolumeDataSource to false, feature is locked to true" --feature-gates=AnyVolumeDataSource=false

summary

#!/usr/bin/env bash
# The aggregation layer (apiregistration.k8s.io/v1) end to end, on etcd and on the embedded
# store, with real kubectl and the official Python client: the local APIServices of the
# built-in group/versions (Available, reason Local, upstream's priorities and labels), the one
# a CRD's served version gets (and loses with the CRD), discovery of the group, upstream's
# refusals of bad APIServices, the table `kubectl get apiservices` prints, and the Available
# condition of an APIService served by a Service as its Service and Endpoints come; then, with
# upstream's sample-apiserver (KAPI_UPSTREAM_BIN or ../shared/upstream; skipped without it), the
# proxy to an extension API server: discovery, kubectl create/get/watch/delete of Flunders,
# kapi's 403, the server stopped (upstream's 503s, FailedDiscoveryCheck) and started again.
# Network: loopback only.
#
#   KAPI_BIN=path/to/kapi-apiserver e2e/aggregation.sh
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=e2e/lib.sh
. "$ROOT/e2e/lib.sh"

e2e_init aggregation
PY_ENV=$(py_env) || { echo "e2e: could not install the Python client" >&2; exit 1; }
e2e_start_etcd

# The local APIServices kapi registers: its served built-in group/versions.
LOCAL="v1.
v1.admissionregistration.k8s.io
v1.apiextensions.k8s.io
v1.apps
v1.authentication.k8s.io
v1.authorization.k8s.io
v1.autoscaling
v1.batch
v1.certificates.k8s.io
v1.coordination.k8s.io
v1.discovery.k8s.io
v1.events.k8s.io
v1.flowcontrol.apiserver.k8s.io
v1.networking.k8s.io
v1.node.k8s.io
v1.policy
v1.rbac.authorization.k8s.io
v1.scheduling.k8s.io
v1.storage.k8s.io
v1beta3.flowcontrol.apiserver.k8s.io
v2.autoscaling"

apiservice() { # NAME SPEC-JSON: an APIService body
  printf '{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"%s"},"spec":%s}' "$1" "$2"
}

# expect_available NAME WANT: waits (10 s at most) for the wardle APIService's Available
# condition to read WANT (status|reason|message).
expect_available() {
  local n=$1 want=$2
  wait_until 10 sh -c "[ \"\$($KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE get apiservice v1alpha1.wardle.example.com -o jsonpath='{.status.conditions[0].status}|{.status.conditions[0].reason}|{.status.conditions[0].message}')\" = '$want' ]"
  expect_eq "$n" "$want" k get apiservice v1alpha1.wardle.example.com \
    -o jsonpath='{.status.conditions[0].status}|{.status.conditions[0].reason}|{.status.conditions[0].message}'
}

run_cases() {
  expect_eq "the local APIServices are the served built-in group/versions" "$LOCAL" \
    sh -c "$KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE get apiservices -o name | sed 's|^apiservice.apiregistration.k8s.io/||'"
  expect_eq "every local APIService is Available, reason Local" "21" \
    sh -c "$KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE get apiservices --no-headers | awk '\$2==\"Local\" && \$3==\"True\"' | wc -l"
  expect_out "kubectl get apiservices prints upstream's columns" '^NAME +SERVICE +AVAILABLE +AGE' \
    k get apiservices
  expect_eq "v1.apps: upstream's priorities, label and condition" \
    "apps v1 17800 15 onstart True Local Local APIServices are always available" \
    k get apiservice v1.apps -o jsonpath='{.spec.group} {.spec.version} {.spec.groupPriorityMinimum} {.spec.versionPriority} {.metadata.labels.kube-aggregator\.kubernetes\.io/automanaged} {.status.conditions[0].status} {.status.conditions[0].reason} {.status.conditions[0].message}'
  expect_eq "v1. (core) has no group" "|18000|1" \
    k get apiservice v1. -o jsonpath='{.spec.group}|{.spec.groupPriorityMinimum}|{.spec.versionPriority}'
  expect_out "kubectl api-resources lists apiservices" '^apiservices +apiregistration.k8s.io/v1 +false +APIService' \
    k api-resources --api-group=apiregistration.k8s.io
  expect_out "/apis/apiregistration.k8s.io/v1 is served (the Discovery conformance case)" '"name":"apiservices/status"' \
    k get --raw /apis/apiregistration.k8s.io/v1
  expect_eq "/apis lists apiregistration.k8s.io first" "apiregistration.k8s.io" \
    sh -c "$KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE get --raw /apis | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"groups\"][0][\"name\"])'"
  expect_out "OpenAPI v3 has the group" '"apis/apiregistration.k8s.io/v1"' k get --raw /openapi/v3
  expect_out "kubectl explain reads the APIService schema" 'groupPriorityMinimum' \
    k explain apiservice.spec

  # upstream's refusals, word for word (kube-apiserver 1.28.7)
  expect_fail "a name that is not version.group" \
    'metadata.name: Invalid value: "v1.apps2": must be `spec.version+"."+spec.group`: "v1alpha1.wardle.example.com"' \
    k create -f - <<<"$(apiservice v1.apps2 '{"group":"wardle.example.com","version":"v1alpha1","groupPriorityMinimum":100,"versionPriority":10}')"
  expect_fail "priorities out of range" \
    'spec.versionPriority: Invalid value: 2000: must be positive and less than 1000' \
    k create -f - <<<"$(apiservice v1.x.io '{"group":"x.io","version":"v1","groupPriorityMinimum":0,"versionPriority":2000}')"
  expect_fail "a local APIService with a caBundle" \
    'spec.caBundle: Invalid value: "3 bytes": local APIServices may not have a caBundle' \
    k create -f - <<<"$(apiservice v1.x.io '{"group":"x.io","version":"v1","groupPriorityMinimum":100,"versionPriority":10,"caBundle":"Zm9v"}')"
  expect_fail "a caBundle that is not base64" \
    'APIService in version "v1" cannot be handled as a APIService: illegal base64 data at input byte 9' \
    k create -f - <<<"$(apiservice v1.x.io '{"group":"x.io","version":"v1","groupPriorityMinimum":100,"versionPriority":10,"caBundle":"notbase64!!","service":{"namespace":"a","name":"b"}}')"
  expect_fail "caBundle and insecureSkipTLSVerify together" \
    'spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present' \
    k create -f - <<<"$(apiservice v1.x.io '{"group":"x.io","version":"v1","groupPriorityMinimum":100,"versionPriority":10,"caBundle":"Zm9v","insecureSkipTLSVerify":true,"service":{"namespace":"a","name":"b"}}')"

  # a CRD's served versions get local APIServices, kept continuously
  k apply -f - >/dev/null <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.agg.example.com}
spec:
  group: agg.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
  - {name: v1beta1, served: false, storage: false, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
EOF
  wait_until 20 k get apiservice v1.agg.example.com >/dev/null 2>&1
  expect_eq "a CRD version's APIService: priority 1000/100, automanaged true" "1000 100 true True Local" \
    k get apiservice v1.agg.example.com -o jsonpath='{.spec.groupPriorityMinimum} {.spec.versionPriority} {.metadata.labels.kube-aggregator\.kubernetes\.io/automanaged} {.status.conditions[0].status} {.status.conditions[0].reason}'
  expect_fail "a version not served gets none" 'apiservices.apiregistration.k8s.io "v1beta1.agg.example.com" not found' \
    k get apiservice v1beta1.agg.example.com
  k delete crd widgets.agg.example.com >/dev/null 2>&1
  expect_ok "it goes with the CRD" wait_until 20 sh -c "! $KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE get apiservice v1.agg.example.com >/dev/null 2>&1"

  # a user's local APIService is left alone and made Available
  k create -f - >/dev/null 2>&1 <<<"$(apiservice v1.mine.example.com '{"group":"mine.example.com","version":"v1","groupPriorityMinimum":100,"versionPriority":10}')"
  expect_eq "a user's local APIService is Available/Local and not automanaged" "|True|Local" \
    k get apiservice v1.mine.example.com -o jsonpath='{.metadata.labels}|{.status.conditions[0].status}|{.status.conditions[0].reason}'
  k delete apiservice v1.mine.example.com >/dev/null 2>&1

  # an APIService served by a Service: upstream's availability words as its Service and
  # Endpoints come (kube-apiserver 1.28.7 answers the same steps with the same conditions)
  k create namespace wardle >/dev/null 2>&1
  k create -f - >/dev/null <<<"$(apiservice v1alpha1.wardle.example.com '{"group":"wardle.example.com","version":"v1alpha1","groupPriorityMinimum":100,"versionPriority":10,"insecureSkipTLSVerify":true,"service":{"namespace":"wardle","name":"api"}}')"
  expect_available "no Service: ServiceNotFound" 'False|ServiceNotFound|service/api in "wardle" is not present'
  expect_out "kubectl prints False (ServiceNotFound)" '^v1alpha1.wardle.example.com +wardle/api +False \(ServiceNotFound\)' \
    k get apiservices v1alpha1.wardle.example.com --no-headers
  k apply -f - >/dev/null <<'EOF2'
apiVersion: v1
kind: Service
metadata: {name: api, namespace: wardle}
spec: {ports: [{port: 8443, name: https}]}
EOF2
  expect_available "a Service on another port: ServicePortError" 'False|ServicePortError|service/api in "wardle" is not listening on port 443'
  k patch service -n wardle api --type=json -p '[{"op":"replace","path":"/spec/ports/0/port","value":443}]' >/dev/null
  expect_available "no Endpoints: EndpointsNotFound" 'False|EndpointsNotFound|cannot find endpoints for service/api in "wardle"'
  k apply -f - >/dev/null <<'EOF2'
apiVersion: v1
kind: Endpoints
metadata: {name: api, namespace: wardle}
subsets: [{addresses: [{ip: 192.0.2.10}], ports: [{port: 1, name: other}]}]
EOF2
  expect_available "no endpoint with the port's name: MissingEndpoints" 'False|MissingEndpoints|endpoints for service/api in "wardle" have no addresses with port name "https"'
  k delete apiservice v1alpha1.wardle.example.com >/dev/null 2>&1
  k delete namespace wardle --wait=false >/dev/null 2>&1

  expect_out "the Python client lists the APIServices" '^v1\.apps 17800 True$' \
    env KUBECONFIG="$KUBECONFIG_FILE" "$PY_ENV/bin/python" -c '
from kubernetes import client, config
config.load_kube_config()
for s in client.ApiregistrationV1Api().list_api_service().items:
    print(s.metadata.name, s.spec.group_priority_minimum, s.status.conditions[0].status)'
}

# The proxy to an extension server: upstream's sample-apiserver (wardle.example.com) behind
# kapi, reached through its Service's Endpoints (--enable-aggregator-routing), kapi presenting a
# front-proxy client certificate the sample server trusts through the
# extension-apiserver-authentication ConfigMap.
SAMPLE="$(upstream_bin)"
SAMPLE=${SAMPLE:+$SAMPLE/sample-apiserver}
[ -n "$SAMPLE" ] && [ -x "$SAMPLE" ] || { SAMPLE=""; echo "e2e aggregation: the proxy cases are skipped: no sample-apiserver (set KAPI_UPSTREAM_BIN or provide ../shared/upstream)"; }

# certificates: a front-proxy CA and kapi's client certificate under it; a CA for the sample
# server and its serving certificate for api.wardle.svc
PKI="$WORK/aggpki"; mkdir -p "$PKI"
mkcert() { # NAME CN CA [SAN]: a key and certificate signed by CA (a self-signed CA without CA)
  local n=$1 cn=$2 ca=$3 san=${4:-}
  openssl req -new -newkey rsa:2048 -nodes -keyout "$PKI/$n.key" -subj "/CN=$cn" -out "$PKI/$n.csr" 2>/dev/null
  if [ -z "$ca" ]; then
    printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,digitalSignature\n' >"$PKI/$n.ext"
    openssl x509 -req -in "$PKI/$n.csr" -signkey "$PKI/$n.key" -days 2 -out "$PKI/$n.crt" -extfile "$PKI/$n.ext" 2>/dev/null
    return
  fi
  if [ -n "$san" ]; then
    printf 'keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=%s\n' "$san" >"$PKI/$n.ext"
  else
    printf 'keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' >"$PKI/$n.ext"
  fi
  openssl x509 -req -in "$PKI/$n.csr" -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" -CAcreateserial -days 2 \
    -out "$PKI/$n.crt" -extfile "$PKI/$n.ext" 2>/dev/null
}
mkcert front-proxy-ca front-proxy-ca ""
mkcert front-proxy-client front-proxy-client front-proxy-ca
mkcert wardle-ca wardle-ca ""
mkcert wardle-serving api.wardle.svc wardle-ca "DNS:api.wardle.svc"
AGG_FLAGS=(--enable-aggregator-routing
  --proxy-client-cert-file "$PKI/front-proxy-client.crt" --proxy-client-key-file "$PKI/front-proxy-client.key"
  --requestheader-client-ca-file "$PKI/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client
  --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group
  --requestheader-extra-headers-prefix=X-Remote-Extra-)

# start_sample: (re)starts the sample server on its etcd and SAMPLE_PORT, as the wardle/apiserver
# ServiceAccount; waits until it serves.
start_sample() {
  "$SAMPLE" --etcd-servers "http://127.0.0.1:$SAMPLE_ETCD" --secure-port "$SAMPLE_PORT" --bind-address 127.0.0.1 \
    --cert-dir "$WORK/sample-certs" --tls-cert-file "$PKI/wardle-serving.crt" --tls-private-key-file "$PKI/wardle-serving.key" \
    --kubeconfig "$WORK/sample.kubeconfig" --authentication-kubeconfig "$WORK/sample.kubeconfig" \
    --authorization-kubeconfig "$WORK/sample.kubeconfig" --feature-gates=APIPriorityAndFairness=false \
    >>"$WORK/sample-$LABEL.log" 2>&1 &
  SAMPLE_PID=$!
  PIDS+=("$SAMPLE_PID")
  wait_until 60 curl -sfk -o /dev/null "https://127.0.0.1:$SAMPLE_PORT/readyz"
}

# sample_service: the wardle Service `api` reaching the sample server (backend_service);
# sets SERVICE_PORT, the APIService's service port.
sample_service() { backend_service api "$SAMPLE_PORT"; SERVICE_PORT=$SVC_PORT; }

# the Available condition of the wardle APIService, waiting up to SECONDS for WANT
available_is() { # SECONDS WANT
  wait_until "$1" sh -c "[ \"\$($KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE get apiservice v1alpha1.wardle.example.com -o jsonpath='{.status.conditions[0].status}|{.status.conditions[0].reason}')\" = '$2' ]"
}

# raw GET of a path as the e2e-admin ServiceAccount (cluster-admin): the status code and body
raw_get() { curl -sk -H "Authorization: Bearer $ADMIN_TOKEN" -w '|%{http_code}' "https://127.0.0.1:$PORT$1"; }

# backend_service NAME PORT: a Service NAME in wardle reaching 127.0.0.1:PORT; sets SVC_PORT
# (the APIService's service port). kapi (with --enable-aggregator-routing): a Service on 443
# and Endpoints at 127.0.0.1. kube-apiserver refuses loopback Endpoints, so for it an
# ExternalName Service naming 127.0.0.1, dialed at the APIService's port (upstream's
# ResolveCluster, no aggregator routing).
backend_service() {
  local name=$1 port=$2
  if [ "$LABEL" = aggregation-reference ]; then
    SVC_PORT=$port
    k apply -f - >/dev/null <<EOF2
apiVersion: v1
kind: Service
metadata: {name: $name, namespace: wardle}
spec: {type: ExternalName, externalName: 127.0.0.1}
EOF2
    return
  fi
  SVC_PORT=443
  k apply -f - >/dev/null <<EOF2
apiVersion: v1
kind: Service
metadata: {name: $name, namespace: wardle}
spec: {ports: [{port: 443, name: https}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: $name, namespace: wardle}
subsets: [{addresses: [{ip: 127.0.0.1}], ports: [{port: $port, name: https}]}]
EOF2
}

# condition_is NAME WANT: waits (20 s at most) for APIService NAME's Available condition to
# read WANT (status|reason|message), then checks it.
condition_is() {
  local n=$1 svc=$2 want=$3 get
  get="$KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE get apiservice $svc -o jsonpath='{.status.conditions[0].status}|{.status.conditions[0].reason}|{.status.conditions[0].message}'"
  wait_until 20 sh -c "[ \"\$($get 2>/dev/null)\" = '$want' ]"
  expect_eq "$n" "$want" sh -c "$get"
}

# The sample server's OpenAPI through the API server: merged into /openapi/v2, its v3
# documents listed and proxied, kubectl explain and kubectl's validation of a Flunder.
openapi_cases() {
  expect_ok "/openapi/v2 gets the Flunder definition" wait_until 30 sh -c \
    "$KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE get --raw /openapi/v2 | grep -q '\"io.k8s.sample-apiserver.pkg.apis.wardle.v1alpha1.Flunder\"'"
  expect_out "/openapi/v2 has the sample server's paths (both of its versions)" \
    '^/apis/wardle.example.com/v1alpha1/namespaces/\{namespace\}/flunders/\{name\} /apis/wardle.example.com/v1beta1/ True$' \
    sh -c "$KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE get --raw /openapi/v2 | python3 -c 'import json,sys; d=json.load(sys.stdin); p=d[\"paths\"]; print(\"/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders/{name}\" if \"/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders/{name}\" in p else \"-\", \"/apis/wardle.example.com/v1beta1/\" if \"/apis/wardle.example.com/v1beta1/\" in p else \"-\", \"/api/v1/namespaces\" in p)'"
  expect_out "/openapi/v3 lists the sample server's documents" \
    '^apis/wardle.example.com apis/wardle.example.com/v1alpha1 apis/wardle.example.com/v1beta1$' \
    sh -c "$KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE get --raw /openapi/v3 | python3 -c 'import json,sys; print(*sorted(k for k in json.load(sys.stdin)[\"paths\"] if \"wardle\" in k))'"
  expect_out "/openapi/v3/apis/wardle.example.com/v1alpha1 comes from the sample server" \
    '"io.k8s.sample-apiserver.pkg.apis.wardle.v1alpha1.Flunder"' \
    k get --raw /openapi/v3/apis/wardle.example.com/v1alpha1
  expect_eq "kubectl explain flunders (upstream's output)" "$(cat "$ROOT/e2e/expected/aggregation-explain-flunders.txt")" \
    k explain flunders
  # kubectl prints one blank line more after FIELD: through kapi than through kube-apiserver
  # 1.28.7 (and through the sample server itself), from the same v3 document; blank lines aside
  # the output is the same.
  expect_eq "kubectl explain flunders.spec (blank lines aside)" \
    "$(grep -v '^$' "$ROOT/e2e/expected/aggregation-explain-flunders-spec.txt")" \
    sh -c "$KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE explain flunders.spec | grep -v '^\$'"
  expect_fail "kubectl create (validation on) refuses an unknown field" \
    'Error from server (BadRequest): error when creating "STDIN": Flunder in version "v1alpha1" cannot be handled as a Flunder: strict decoding error: unknown field "spec.bogus"' \
    k create -f - <<<'{"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{"name":"bad","namespace":"default"},"spec":{"bogus":1}}'
  expect_out "kubectl create --validate=false keeps going (the unknown field dropped)" 'flunder.wardle.example.com/lax created' \
    k create --validate=false -f - <<<'{"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{"name":"lax","namespace":"default"},"spec":{"bogus":1}}'
  k delete flunder lax >/dev/null 2>&1
}

# /apis in every encoding lists the remote group, and a group served both by the API server
# and by an extension server lists every APIService's version by versionPriority.
discovery_merge_cases() {
  expect_out "/apis asked for in protobuf lists wardle.example.com" 'wardle.example.com/v1alpha1' \
    sh -c "curl -sk -H 'Authorization: Bearer $ADMIN_TOKEN' -H 'Accept: application/vnd.kubernetes.protobuf' https://127.0.0.1:$PORT/apis | tr -c '[:print:]' ' '"
  expect_out "/apis asked for in YAML lists wardle.example.com" 'wardle.example.com/v1alpha1' \
    curl -sk -H "Authorization: Bearer $ADMIN_TOKEN" -H 'Accept: application/yaml' "https://127.0.0.1:$PORT/apis"
  k create -f - >/dev/null <<<"$(apiservice v2.apps "{\"group\":\"apps\",\"version\":\"v2\",\"groupPriorityMinimum\":100,\"versionPriority\":20,\"insecureSkipTLSVerify\":true,\"service\":{\"namespace\":\"wardle\",\"name\":\"api\",\"port\":$SERVICE_PORT}}")"
  k create -f - >/dev/null <<<"$(apiservice v1beta1.apps "{\"group\":\"apps\",\"version\":\"v1beta1\",\"groupPriorityMinimum\":100,\"versionPriority\":1,\"insecureSkipTLSVerify\":true,\"service\":{\"namespace\":\"wardle\",\"name\":\"api\",\"port\":$SERVICE_PORT}}")"
  local want='{"name": "apps", "versions": [{"groupVersion": "apps/v2", "version": "v2"}, {"groupVersion": "apps/v1", "version": "v1"}, {"groupVersion": "apps/v1beta1", "version": "v1beta1"}], "preferredVersion": {"groupVersion": "apps/v2", "version": "v2"}}'
  wait_until 10 sh -c "$KUBECTL --kubeconfig $KUBECONFIG_FILE get --raw /apis | grep -q apps/v1beta1"
  expect_eq "a group served here and elsewhere: /apis lists every version by versionPriority" "$want" \
    sh -c "$KUBECTL --kubeconfig $KUBECONFIG_FILE get --raw /apis | python3 -c 'import json,sys; print(*[json.dumps(g) for g in json.load(sys.stdin)[\"groups\"] if g[\"name\"]==\"apps\"])'"
  expect_eq "and /apis/apps" "$want" \
    sh -c "$KUBECTL --kubeconfig $KUBECONFIG_FILE get --raw /apis/apps | python3 -c 'import json,sys; d=json.load(sys.stdin); del d[\"kind\"], d[\"apiVersion\"]; print(json.dumps(d))'"
  expect_eq "and aggregated discovery" "v2 v1 v1beta1" \
    sh -c "curl -sk -H 'Authorization: Bearer $ADMIN_TOKEN' -H 'Accept: application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList' https://127.0.0.1:$PORT/apis | python3 -c 'import json,sys; print(*[v[\"version\"] for g in json.load(sys.stdin)[\"items\"] if g[\"metadata\"][\"name\"]==\"apps\" for v in g[\"versions\"]])'"
  k delete apiservice v2.apps v1beta1.apps >/dev/null 2>&1
}

# Bad APIServices and backends: upstream's answers, and the server stays ready.
bad_input_cases() {
  expect_fail "an APIService for a group/version served here (v1.apps) with a service" \
    'Error from server (AlreadyExists): error when creating "STDIN": apiservices.apiregistration.k8s.io "v1.apps" already exists' \
    k create -f - <<<"$(apiservice v1.apps '{"group":"apps","version":"v1","groupPriorityMinimum":100,"versionPriority":10,"service":{"namespace":"wardle","name":"api"}}')"
  expect_eq "v1.apps stays local" "|True|Local" \
    k get apiservice v1.apps -o jsonpath='{.spec.service}|{.status.conditions[0].status}|{.status.conditions[0].reason}'
  # a caBundle without a PEM block: upstream's availability check does not verify the
  # backend's certificate, so it reaches the sample server (which serves no such group)
  k create -f - >/dev/null <<<"$(apiservice v1.badca.example.com "{\"group\":\"badca.example.com\",\"version\":\"v1\",\"groupPriorityMinimum\":100,\"versionPriority\":10,\"caBundle\":\"Zm9v\",\"service\":{\"namespace\":\"wardle\",\"name\":\"api\",\"port\":$SERVICE_PORT}}")"
  condition_is "a caBundle that is not PEM: the check still reaches the server (404)" v1.badca.example.com \
    "False|FailedDiscoveryCheck|failing or missing response from https://127.0.0.1:$SAMPLE_PORT/apis/badca.example.com/v1: bad status from https://127.0.0.1:$SAMPLE_PORT/apis/badca.example.com/v1: 404"
  expect_eq "and its requests get 503 service unavailable" 'service unavailable
|503' raw_get /apis/badca.example.com/v1
  # a Service that does not exist
  k create -f - >/dev/null <<<"$(apiservice v1.nosvc.example.com '{"group":"nosvc.example.com","version":"v1","groupPriorityMinimum":100,"versionPriority":10,"insecureSkipTLSVerify":true,"service":{"namespace":"wardle","name":"nope"}}')"
  condition_is "a Service that does not exist: ServiceNotFound" v1.nosvc.example.com \
    'False|ServiceNotFound|service/nope in "wardle" is not present'
  expect_eq "its requests get 503 service unavailable" 'service unavailable
|503' raw_get /apis/nosvc.example.com/v1
  expect_out "its group is still in /apis/nosvc.example.com" '"preferredVersion": ?\{' \
    raw_get /apis/nosvc.example.com
  expect_eq "aggregated discovery lists its version as Stale" '{"version": "v1", "freshness": "Stale"}' \
    sh -c "curl -sk -H 'Authorization: Bearer $ADMIN_TOKEN' -H 'Accept: application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList' https://127.0.0.1:$PORT/apis | python3 -c 'import json,sys; print(*[json.dumps(v) for g in json.load(sys.stdin)[\"items\"] if g[\"metadata\"][\"name\"]==\"nosvc.example.com\" for v in g[\"versions\"]])'"
  # a backend that answers junk on TCP, and one that answers every GET with 200 and HTML
  local junk_port html_port junk_pid html_pid
  junk_port=$(free_port); html_port=$(free_port)
  python3 "$ROOT/e2e/python/bad_backend.py" junk "$junk_port" >/dev/null 2>&1 &
  junk_pid=$!
  python3 "$ROOT/e2e/python/bad_backend.py" html "$html_port" "$PKI/wardle-serving.crt" "$PKI/wardle-serving.key" >/dev/null 2>&1 &
  html_pid=$!
  PIDS+=("$junk_pid" "$html_pid")
  # the check runs on create, then again after a backoff that the failing APIServices above
  # have already taken to 30 s (upstream's resync): a backend still starting would be seen
  # as refused for longer than condition_is waits
  wait_until 20 bash -c "exec 3<>/dev/tcp/127.0.0.1/$junk_port"
  wait_until 20 curl -sk -o /dev/null "https://127.0.0.1:$html_port/"
  backend_service junk "$junk_port"
  k create -f - >/dev/null <<<"$(apiservice v1.junk.example.com "{\"group\":\"junk.example.com\",\"version\":\"v1\",\"groupPriorityMinimum\":100,\"versionPriority\":10,\"insecureSkipTLSVerify\":true,\"service\":{\"namespace\":\"wardle\",\"name\":\"junk\",\"port\":$SVC_PORT}}")"
  condition_is "a backend that is not TLS: FailedDiscoveryCheck with the handshake error" v1.junk.example.com \
    "False|FailedDiscoveryCheck|failing or missing response from https://127.0.0.1:$junk_port/apis/junk.example.com/v1: Get \"https://127.0.0.1:$junk_port/apis/junk.example.com/v1\": tls: first record does not look like a TLS handshake"
  backend_service html "$html_port"
  k create -f - >/dev/null <<<"$(apiservice v1.html.example.com "{\"group\":\"html.example.com\",\"version\":\"v1\",\"groupPriorityMinimum\":100,\"versionPriority\":10,\"insecureSkipTLSVerify\":true,\"service\":{\"namespace\":\"wardle\",\"name\":\"html\",\"port\":$SVC_PORT}}")"
  condition_is "a backend answering 200 with HTML passes the check (any 2xx does)" v1.html.example.com \
    'True|Passed|all checks passed'
  expect_eq "its answers are passed on as they are" '<html><body>not a discovery document</body></html>
|200' raw_get /apis/html.example.com/v1
  expect_out "/apis still lists its group" '"name":"html.example.com"' k get --raw /apis
  expect_eq "the server stays ready" "ok" k get --raw /readyz
  expect_out "and serves the sample server as before" '^one ' k get flunders --no-headers
  kill "$junk_pid" "$html_pid" 2>/dev/null; wait "$junk_pid" "$html_pid" 2>/dev/null
  k delete apiservice v1.badca.example.com v1.nosvc.example.com v1.junk.example.com v1.html.example.com >/dev/null 2>&1
  k delete service -n wardle junk html >/dev/null 2>&1
}

# The availability metrics, with the sample server stopped (FailedDiscoveryCheck).
metrics_cases() {
  local m; m=$(k get --raw /metrics | grep -E '^(# (HELP|TYPE) )?aggregator_unavailable_apiservice')
  expect_out "aggregator_unavailable_apiservice: upstream's help" \
    '^# HELP aggregator_unavailable_apiservice \[ALPHA\] Gauge of APIServices which are marked as unavailable broken down by APIService name\.$' echo "$m"
  expect_out "aggregator_unavailable_apiservice is 1 for the stopped server" \
    '^aggregator_unavailable_apiservice\{name="v1alpha1.wardle.example.com"\} 1$' echo "$m"
  expect_out "and 0 for a local APIService" '^aggregator_unavailable_apiservice\{name="v1.apps"\} 0$' echo "$m"
  expect_out "aggregator_unavailable_apiservice_total: upstream's help" \
    '^# HELP aggregator_unavailable_apiservice_total \[ALPHA\] Counter of APIServices which are marked as unavailable broken down by APIService name and reason\.$' echo "$m"
  expect_out "aggregator_unavailable_apiservice_total counts the transition by its reason" \
    '^aggregator_unavailable_apiservice_total\{name="v1alpha1.wardle.example.com",reason="FailedDiscoveryCheck"\} 1$' echo "$m"
}

run_proxy_cases() {
  [ -n "$SAMPLE" ] || return 0
  SAMPLE_ETCD=$(free_port); local peer; peer=$(free_port); SAMPLE_PORT=$(free_port)
  etcd --name "wardle-$LABEL" --data-dir "$WORK/etcd-wardle-$LABEL" \
    --listen-client-urls "http://127.0.0.1:$SAMPLE_ETCD" --advertise-client-urls "http://127.0.0.1:$SAMPLE_ETCD" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "wardle-$LABEL=http://127.0.0.1:$peer" >"$WORK/etcd-wardle-$LABEL.log" 2>&1 &
  local etcd_pid=$!
  PIDS+=("$etcd_pid")
  wait_until 30 curl -sf -o /dev/null "http://127.0.0.1:$SAMPLE_ETCD/health"
  # the namespace of the availability cases before must be gone
  wait_until 30 sh -c "! $KUBECTL --kubeconfig $KUBECONFIG_FILE get namespace wardle >/dev/null 2>&1"
  # the sample server's identity: token and access reviews, the authentication ConfigMap, and
  # what its admission plugins watch
  k create namespace wardle >/dev/null 2>&1
  k apply -f - >/dev/null <<'EOF2'
apiVersion: v1
kind: ServiceAccount
metadata: {name: apiserver, namespace: wardle}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: e2e-admin, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: e2e-admin, namespace: default}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: wardle:auth-delegator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:auth-delegator}
subjects: [{kind: ServiceAccount, name: apiserver, namespace: wardle}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: wardle-auth-reader, namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects: [{kind: ServiceAccount, name: apiserver, namespace: wardle}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: wardle:server}
rules:
- {apiGroups: [""], resources: [namespaces], verbs: [get, list, watch]}
- {apiGroups: [admissionregistration.k8s.io], resources: ["*"], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: wardle:server}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: wardle:server}
subjects: [{kind: ServiceAccount, name: apiserver, namespace: wardle}]
EOF2
  local token; token=$(k create token apiserver -n wardle --duration=2h)
  ADMIN_TOKEN=$(k create token e2e-admin --duration=2h)
  cat >"$WORK/sample.kubeconfig" <<EOF2
apiVersion: v1
kind: Config
clusters: [{name: kapi, cluster: {server: "https://127.0.0.1:$PORT", certificate-authority: "$CA"}}]
users: [{name: wardle, user: {token: "$token"}}]
contexts: [{name: kapi, context: {cluster: kapi, user: wardle}}]
current-context: kapi
EOF2
  start_sample || { fail "sample-apiserver did not start"; tail -5 "$WORK/sample-$LABEL.log"; return 0; }
  sample_service
  k apply -f - >/dev/null <<EOF2
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.wardle.example.com}
spec:
  group: wardle.example.com
  version: v1alpha1
  groupPriorityMinimum: 1000
  versionPriority: 15
  service: {namespace: wardle, name: api, port: $SERVICE_PORT}
  caBundle: $(base64 -w0 "$PKI/wardle-ca.crt")
EOF2
  expect_ok "the APIService served by sample-apiserver becomes Available (Passed)" available_is 40 'True|Passed'
  expect_eq "its message is upstream's" "all checks passed" \
    k get apiservice v1alpha1.wardle.example.com -o jsonpath='{.status.conditions[0].message}'
  expect_out "/apis lists wardle.example.com (legacy)" '"name":"wardle.example.com","versions":\[\{"groupVersion":"wardle.example.com/v1alpha1"' \
    k get --raw /apis
  expect_out "/apis/wardle.example.com is the APIGroup" '"preferredVersion":\{"groupVersion":"wardle.example.com/v1alpha1"' \
    k get --raw /apis/wardle.example.com
  expect_out "/apis/wardle.example.com/v1alpha1 comes from the sample server" '"name":"flunders"' \
    k get --raw /apis/wardle.example.com/v1alpha1
  expect_out "kubectl api-resources (aggregated discovery) lists flunders" '^flunders +wardle.example.com/v1alpha1 +true +Flunder' \
    k api-resources --api-group=wardle.example.com
  expect_out "kubectl create -f a Flunder" 'flunder.wardle.example.com/one created' \
    k create -f - <<<'{"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{"name":"one","namespace":"default"},"spec":{}}'
  openapi_cases
  discovery_merge_cases
  bad_input_cases
  expect_out "kubectl get flunders" '^one ' k get flunders --no-headers
  timeout 15 "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$CACHE" get flunders -w --no-headers -o name >"$WORK/watch-$LABEL.out" 2>&1 &
  local watch_pid=$!
  sleep 2
  k create -f - >/dev/null <<<'{"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{"name":"two","namespace":"default"},"spec":{}}'
  expect_ok "kubectl get flunders -w shows the new Flunder" wait_until 10 grep -q 'flunder.wardle.example.com/two' "$WORK/watch-$LABEL.out"
  kill "$watch_pid" 2>/dev/null; wait "$watch_pid" 2>/dev/null
  expect_out "kubectl delete flunder" 'flunder.wardle.example.com "two" deleted' k delete flunder two
  expect_fail "a user without access is refused by kapi (403)" \
    'flunders.wardle.example.com is forbidden: User "nobody" cannot list resource "flunders" in API group "wardle.example.com" in the namespace "default"' \
    k get flunders --as=nobody
  expect_out "a GET through the proxy with a token kapi authenticated" '"name": ?"one"' \
    raw_get /apis/wardle.example.com/v1alpha1/namespaces/default/flunders/one

  kill "$SAMPLE_PID"; wait "$SAMPLE_PID" 2>/dev/null
  expect_eq "sample-apiserver stopped: a request gets upstream's 503 with the dial error" \
    "error trying to reach service: dial tcp 127.0.0.1:$SAMPLE_PORT: connect: connection refused
|503" raw_get /apis/wardle.example.com/v1alpha1/namespaces/default/flunders
  expect_ok "the APIService goes Available=False (FailedDiscoveryCheck)" \
    available_is 45 'False|FailedDiscoveryCheck'
  expect_out "the check's message is upstream's" \
    "^failing or missing response from https://127.0.0.1:$SAMPLE_PORT/apis/wardle.example.com/v1alpha1: Get \"https://127.0.0.1:$SAMPLE_PORT/apis/wardle.example.com/v1alpha1\": dial tcp 127.0.0.1:$SAMPLE_PORT: connect: connection refused" \
    k get apiservice v1alpha1.wardle.example.com -o jsonpath='{.status.conditions[0].message}'
  metrics_cases
  expect_eq "then requests get upstream's 503 service unavailable" 'service unavailable
|503' raw_get /apis/wardle.example.com/v1alpha1/namespaces/default/flunders
  start_sample || fail "sample-apiserver did not restart"
  wait_until 40 sh -c "curl -sk -H 'Authorization: Bearer $ADMIN_TOKEN' https://127.0.0.1:$PORT/apis/wardle.example.com/v1alpha1/namespaces/default/flunders/one | grep -q '\"uid\"'"
  expect_out "restarted: served again" '^one ' k get flunders --no-headers
  expect_ok "and Available again" available_is 10 'True|Passed'
  k delete flunder one >/dev/null 2>&1
  kill "$SAMPLE_PID" "$etcd_pid" 2>/dev/null; wait "$SAMPLE_PID" "$etcd_pid" 2>/dev/null
  k delete apiservice v1alpha1.wardle.example.com >/dev/null 2>&1
  k delete namespace wardle --wait=false >/dev/null 2>&1
}

# start_reference: upstream's kube-apiserver (same folder as sample-apiserver) on the script's
# etcd with the aggregation flags, in the places kapi puts its CA and admin kubeconfig (its
# own CA, serving certificate, service-account key and system:masters client certificate).
start_reference() {
  local dir="$WORK/kapi-reference" p
  p="$dir/pki"
  PORT=$(free_port)
  KUBECONFIG_FILE="$dir/admin.kubeconfig"; CA="$p/ca.crt"
  # shellcheck source=hack/reference-pki.sh
  . "$ROOT/hack/reference-pki.sh"
  reference_pki "$p" "https://127.0.0.1:$PORT" "$KUBECONFIG_FILE"
  UP="$(dirname "$SAMPLE")" reference_apiserver "$p" "http://127.0.0.1:$ETCD_PORT" "$PORT" \
    --etcd-prefix=/registry-reference --authorization-mode=RBAC "${AGG_FLAGS[@]:1}" >"$WORK/reference.log" 2>&1 &
  KAPI_PID=$!
  wait_until 60 sh -c "[ \"\$(curl -sk -o /dev/null -w '%{http_code}' https://127.0.0.1:$PORT/readyz)\" = 200 ]" \
    || { echo "e2e: kube-apiserver not ready"; tail -20 "$WORK/reference.log"; exit 1; }
}

# E2E_AGG_REFERENCE=1: the proxy and bad-input cases against upstream's kube-apiserver (on
# etcd), to compare with; the local-APIService cases are kapi's (upstream lists flowcontrol).
if [ "${E2E_AGG_REFERENCE:-0}" = 1 ]; then
  [ -n "$SAMPLE" ] || { echo "e2e aggregation: E2E_AGG_REFERENCE=1 needs the upstream binaries"; exit 2; }
  LABEL="aggregation-reference"
  CACHE="$WORK/cache-reference"
  start_reference
  run_proxy_cases
  summary
  exit
fi

for backend in etcd embedded; do
  LABEL="aggregation-$backend"
  CACHE="$WORK/cache-$backend"
  if [ "$backend" = etcd ]; then start_kapi_on_etcd agg "${AGG_FLAGS[@]}"; else start_kapi_embedded agg "${AGG_FLAGS[@]}"; fi
  run_cases
  run_proxy_cases
  # a restart keeps them, and changes nothing it does not need to
  rv=$(k get apiservice v1.apps -o jsonpath='{.metadata.resourceVersion}')
  if [ "$backend" = etcd ]; then start_kapi_on_etcd agg "${AGG_FLAGS[@]}"; else start_kapi_embedded agg "${AGG_FLAGS[@]}"; fi
  expect_eq "a restart leaves the local APIServices as they were" "$rv" \
    k get apiservice v1.apps -o jsonpath='{.metadata.resourceVersion}'
done

summary

#!/usr/bin/env bash
# Validation end-to-end: real kapi (on etcd, then on the embedded store), real kubectl with its
# default client-side validation on. A `kind: List` (what `kubectl get -o yaml` prints) is
# validated by kubectl itself against /openapi/v2 in gnostic's protobuf form, so its messages
# are kubectl's own over kapi's schemas; single objects are validated by the server
# (fieldValidation=Strict). Also `kubectl create --raw`, `apply -f` of a List, `explain`, and
# /openapi/v2 in both encodings. Every bundled kubectl (1.27 to 1.33) is run directly as well as
# the one the dispatcher picks.
#
#   KAPI_BIN=path/to/kapi-apiserver e2e/validate.sh   (default: builds the debug binary)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=e2e/lib.sh
. "$ROOT/e2e/lib.sh"

e2e_init validate
PY_ENV=$(py_env) || { echo "e2e: could not install the Python client" >&2; exit 1; }
e2e_start_etcd
KUBECTL_BIN_DIR=/usr/lib/google-cloud-sdk/bin

# kv MINOR ARGS...: a bundled kubectl of that minor, on the server under test, own cache.
kv() {
  local minor=$1; shift
  "$KUBECTL_BIN_DIR/kubectl.1.$minor" --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$CACHE-$minor" "$@"
}

# openapi_v2 ACCEPT [CURL ARGS...]: GET /openapi/v2 as the admin; prints the response headers.
openapi_v2() {
  local accept=$1; shift
  local pki; pki="$(dirname "$CA")"
  curl -sS -o "$WORK/openapi-v2.body" -D - --cacert "$CA" --cert "$pki/admin.crt" --key "$pki/admin.key" \
    -H "Accept: $accept" "$@" "https://127.0.0.1:$PORT/openapi/v2"
}

# list NAME-SUFFIX [EXTRA-CM-FIELD] [EXTRA-SERVICE-SPEC-FIELD]: a kind: List holding a
# ConfigMap cm-SUFFIX and a Service svc-SUFFIX, as YAML.
list() {
  cat <<YAML
apiVersion: v1
kind: List
metadata:
  resourceVersion: ""
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: cm-$1
  data:
    a: "1"
  ${2:-}
- apiVersion: v1
  kind: Service
  metadata:
    name: svc-$1
  spec:
    ${3:-}
    selector:
      app: web
    ports:
    - port: 80
      targetPort: 8080
YAML
}

run_cases() {
  local f="$WORK/files-$LABEL"
  mkdir -p "$f"
  list a >"$f/list.yaml"
  list s >"$f/list-strict.yaml"
  list bad "foo: bar" >"$f/list-unknown.yaml"
  list nested "" "portz: 1" >"$f/list-nested.yaml"
  list off "foo: bar" >"$f/list-off.yaml"
  list app >"$f/list-apply.yaml"
  sed 's/a: "1"/a: "2"/' "$f/list-apply.yaml" >"$f/list-apply2.yaml"
  printf '%s\n' '{"apiVersion":"v1","kind":"List","metadata":{"labels":{"x":"1","x":"2"}},"items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-dup"}}]}' >"$f/list-dup.json"
  printf '%s\n' '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-single"},"foo":"bar"}' >"$f/cm-unknown.json"
  printf '%s\n' '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-twice"},"data":{"a":"1"},"data":{"a":"2"}}' >"$f/cm-dup.json"
  printf '%s\n' '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-raw"},"data":{"k":"v"}}' >"$f/good.json"
  printf '%s\n' '{"apiVersion":"v1","kind":"ConfigMap",' >"$f/malformed.json"

  # A List is validated by kubectl against /openapi/v2 (protobuf), then created item by item.
  expect_out "create -f of a kind: List with validation on" \
    '^configmap/cm-a created$' k create -f "$f/list.yaml"
  expect_out "... creates the Service too" '^service/svc-a created$' printf '%s\n' "$OUT"
  expect_eq "the List's ConfigMap is stored" "1" k get configmap cm-a -o 'jsonpath={.data.a}'
  expect_eq "the List's Service is stored" "80:8080" \
    k get service svc-a -o 'jsonpath={.spec.ports[0].port}:{.spec.ports[0].targetPort}'
  expect_out "create -f of a kind: List with --validate=strict" \
    '^service/svc-s created$' k create --validate=strict -f "$f/list-strict.yaml"

  # kubectl's own messages for a List item that does not match the schema.
  expect_fail "an unknown field in a List item is refused by kubectl" \
    "error: error validating \"$f/list-unknown.yaml\": error validating data: ValidationError(ConfigMap): unknown field \"foo\" in io.k8s.api.core.v1.ConfigMap; if you choose to ignore these errors, turn validation off with --validate=false" \
    k create -f "$f/list-unknown.yaml"
  expect_fail "... and nothing of the List is created" 'configmaps "cm-bad" not found' k get configmap cm-bad
  expect_fail "an unknown nested field names its path and type" \
    "error validating data: ValidationError(Service.spec): unknown field \"portz\" in io.k8s.api.core.v1.ServiceSpec;" \
    k create -f "$f/list-nested.yaml"
  expect_fail "a duplicate key in the List's labels is refused by kubectl" \
    "error: error validating \"$f/list-dup.json\": error validating data: duplicate key: x; if you choose to ignore these errors, turn validation off with --validate=false" \
    k create -f "$f/list-dup.json"
  expect_out "--validate=false skips the check and creates the List" \
    '^configmap/cm-off created$' k create --validate=false -f "$f/list-off.yaml"

  # A single object is checked by the server (fieldValidation=Strict).
  expect_fail "an unknown field in a single object is refused by the server" \
    "Error from server (BadRequest): error when creating \"$f/cm-unknown.json\": ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"foo\"" \
    k create -f "$f/cm-unknown.json"
  expect_fail "a duplicate field is refused under fieldValidation=Strict" \
    'Error from server (BadRequest): ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "data"' \
    k create --raw '/api/v1/namespaces/default/configmaps?fieldValidation=Strict' -f "$f/cm-dup.json"

  # Field errors as kube-apiserver 1.28.7 words them (selectors of apps kinds, a Job's
  # restartPolicy, a PersistentVolume's sources, qualified names, events, a v1beta3
  # FlowSchema's defaults, a CSI attacher's name): each object refused, in order, word for word.
  if ! run_cmd sh -c "$KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE apply -f - < $ROOT/e2e/testdata/field-errors.yaml" &&
    [ "$OUT" = "$(cat "$ROOT/e2e/expected/validate-field-errors.txt")" ]; then
    pass "kubectl apply of invalid objects: upstream's field errors, word for word"
  else
    fail "kubectl apply of invalid objects: upstream's field errors, word for word (want: e2e/expected/validate-field-errors.txt)"
  fi

  # Updates refused (or allowed) as kube-apiserver 1.28.7 does, word for word.
  # shellcheck source=e2e/testdata/update-errors.sh
  . "$ROOT/e2e/testdata/update-errors.sh"
  K="$KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE"
  if run_cmd update_errors && [ "$OUT" = "$(cat "$ROOT/e2e/expected/validate-update-errors.txt")" ]; then
    pass "kubectl patch of immutable fields: upstream's answers, word for word"
  else
    fail "kubectl patch of immutable fields: upstream's answers, word for word (want: e2e/expected/validate-update-errors.txt)"
  fi

  # Defaults as kube-apiserver 1.28.7 fills them, per kind: what a server-side dry-run create
  # answers (what differs between any two creates left out, see e2e/python/defaults.py).
  if run_cmd "$PY_ENV/bin/python" "$ROOT/e2e/python/defaults.py" "$KUBECTL" "$KUBECONFIG_FILE" "$ROOT/e2e/testdata/defaults.yaml" &&
    [ "$OUT" = "$(cat "$ROOT/e2e/expected/validate-defaults.json")" ]; then
    pass "dry-run creates of 19 kinds: upstream's defaults"
  else
    fail "dry-run creates of 19 kinds: upstream's defaults (want: e2e/expected/validate-defaults.json)"
  fi

  # apply -f of a List: created, then configured and unchanged item by item.
  expect_out "apply -f of a List creates its items" '^service/svc-app created$' k apply -f "$f/list-apply.yaml"
  expect_out "apply -f of a changed List configures what changed" '^configmap/cm-app configured$' \
    k apply -f "$f/list-apply2.yaml"
  expect_out "... and leaves the rest unchanged" '^service/svc-app unchanged$' printf '%s\n' "$OUT"
  expect_eq "the applied change is stored" "2" k get configmap cm-app -o 'jsonpath={.data.a}'

  # create --raw sends the body as it is and prints what the server answers.
  expect_out "create --raw prints the created object" '"name":"cm-raw"' \
    k create --raw /api/v1/namespaces/default/configmaps -f "$f/good.json"
  expect_out "... with its resourceVersion" '"resourceVersion":"[0-9]+"' printf '%s\n' "$OUT"
  expect_fail "create --raw of malformed JSON is a 400 naming the kind" \
    'Error from server (BadRequest): the object provided is unrecognized (must be of type ConfigMap)' \
    k create --raw /api/v1/namespaces/default/configmaps -f "$f/malformed.json"

  # /openapi/v2 in both encodings.
  expect_out "get --raw /openapi/v2 is still JSON" '^\{.*"swagger":"2.0"' k get --raw /openapi/v2
  expect_out "/openapi/v2 as protobuf" \
    '^[Cc]ontent-[Tt]ype: application/com.github.proto-openapi.spec.v2.v1.0\+protobuf' \
    openapi_v2 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf'
  expect_out "... gzipped when asked" '^[Cc]ontent-[Ee]ncoding: gzip' \
    openapi_v2 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf' -H 'Accept-Encoding: gzip'
  local etag; etag="$(grep -i '^etag:' <<<"$OUT" | cut -d' ' -f2 | tr -d '\r')"
  expect_out "... and 304 for its ETag" '^HTTP/[0-9.]+ 304' \
    openapi_v2 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf' -H "If-None-Match: $etag"
  expect_out "an Accept kube-openapi does not offer is a 406" '^HTTP/[0-9.]+ 406' openapi_v2 'text/html'

  # explain: kubectl 1.29+ reads OpenAPI v3, 1.27 and 1.28 read v2 in protobuf.
  expect_out "explain (OpenAPI v3)" '^FIELD: *data' k explain configmap.data
  expect_out "explain with kubectl 1.27 (OpenAPI v2 protobuf)" '^FIELD: *data' kv 27 explain configmap.data
  expect_out "explain with kubectl 1.27 walks nested fields" '^FIELD: *containers' kv 27 explain pod.spec.containers

  # Every bundled kubectl validates the same List the same way, and leaves a single object to
  # the server.
  local minor
  for minor in 27 28 29 30 31 32 33; do
    list "v$minor" >"$f/list-$minor.yaml"
    expect_out "kubectl 1.$minor: create -f of a kind: List" "^service/svc-v$minor created$" \
      kv "$minor" create -f "$f/list-$minor.yaml"
    expect_fail "kubectl 1.$minor: an unknown field in a List item" \
      'error validating data: ValidationError(ConfigMap): unknown field "foo" in io.k8s.api.core.v1.ConfigMap' \
      kv "$minor" create -f "$f/list-unknown.yaml"
    expect_fail "kubectl 1.$minor: an unknown field in a single object" \
      'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "foo"' \
      kv "$minor" create -f "$f/cm-unknown.json"
  done
}

for backend in etcd embedded; do
  LABEL="validate-$backend"
  CACHE="$WORK/cache-$backend"
  if [ "$backend" = etcd ]; then start_kapi_on_etcd validate; else start_kapi_embedded validate; fi
  run_cases
done

summary

# The kubectl cases, run once per (backend, kubectl). Each run works in its own namespace $NS.
# Manifests are JSON or YAML files under $M; kubectl's typed `create <kind>` generators are not
# used here because they send protobuf.

manifest() { # manifest NAME: writes stdin to $M/NAME and prints the path
  cat >"$M/$1"; printf '%s' "$M/$1"
}

run_cases() {
  M="$WORK/manifests-$NS"; mkdir -p "$M"
  local ns_file cm1 cm1b cm2 bad_name unknown dry fin pod deploy svc
  ns_file=$(manifest ns.yaml <<Y
apiVersion: v1
kind: Namespace
metadata:
  name: $NS
Y
)
  cm1=$(manifest cm1.yaml <<Y
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm1
  namespace: $NS
data:
  k1: v1
  k2: v2
Y
)
  cm1b=$(manifest cm1b.yaml <<Y
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm1
  namespace: $NS
data:
  k1: changed
Y
)
  cm2=$(manifest cm2.json <<Y
{"apiVersion": "v1", "kind": "ConfigMap",
 "metadata": {"name": "cm2", "namespace": "$NS", "labels": {"app": "web"}},
 "data": {"a": "b"}}
Y
)
  bad_name=$(manifest bad-name.yaml <<Y
apiVersion: v1
kind: ConfigMap
metadata:
  name: Bad_Name
  namespace: $NS
Y
)
  unknown=$(manifest unknown.yaml <<Y
apiVersion: v1
kind: ConfigMap
metadata:
  name: unknown-field
  namespace: $NS
spec:
  foo: bar
Y
)
  dry=$(manifest dry.yaml <<Y
apiVersion: v1
kind: ConfigMap
metadata:
  name: dry
  namespace: $NS
Y
)
  fin=$(manifest fin.yaml <<Y
apiVersion: v1
kind: ConfigMap
metadata:
  name: held
  namespace: $NS
  finalizers: ["example.com/hold"]
Y
)
  pod=$(manifest pod.yaml <<Y
apiVersion: v1
kind: Pod
metadata:
  name: web-0
  namespace: $NS
spec:
  containers:
  - name: web
    image: nginx:1.27
Y
)
  deploy=$(manifest deploy.yaml <<Y
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: $NS
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
Y
)
  svc=$(manifest svc.yaml <<Y
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: $NS
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
Y
)

  # Discovery, OpenAPI, version
  expect_out "version reports server minor 33" '"minor": "33' k version -o json
  expect_out "api-versions lists apps/v1" '^apps/v1$' k api-versions
  expect_out "api-versions lists v1" '^v1$' k api-versions
  expect_out "api-resources lists configmaps" '^configmaps +cm +v1 +true +ConfigMap$' k api-resources
  expect_out "api-resources lists deployments" '^deployments +deploy +apps/v1 +true +Deployment$' k api-resources
  expect_out "explain configmap.data" 'Data contains the configuration data' k explain configmap.data
  expect_out "readyz verbose lists checks" 'readyz check passed' k get --raw '/readyz?verbose'
  expect_out "api-resources lists bindings (create only)" '^bindings +v1 +true +Binding$' k api-resources
  expect_out "api-resources lists componentstatuses as cs" '^componentstatuses +cs +v1 +false +ComponentStatus$' k api-resources
  expect_out "api-resources verbs of componentstatuses" '^componentstatuses +cs +v1 +false +ComponentStatus +get,list *$' k api-resources -o wide

  # Namespaces
  expect_out "create -f namespace" "^namespace/$NS created$" k create -f "$ns_file"
  expect_out "default namespaces exist" '^kube-node-lease +Active' k get namespaces
  expect_out "get namespace table" "^$NS +Active +" k get ns "$NS"

  # Create, read, errors
  expect_out "create -f configmap" '^configmap/cm1 created$' k create -f "$cm1"
  expect_fail "create existing is AlreadyExists" \
    "Error from server (AlreadyExists): error when creating \"$cm1\": configmaps \"cm1\" already exists" k create -f "$cm1"
  expect_fail "get missing is NotFound" 'Error from server (NotFound): configmaps "nope" not found' k get cm nope -n "$NS"
  expect_out "get table columns" '^NAME +DATA +AGE$' k get cm cm1 -n "$NS"
  expect_out "get table row" '^cm1 +2 +[0-9]+s$' k get cm cm1 -n "$NS"
  expect_out "get -o yaml" '^  name: cm1$' k get cm cm1 -n "$NS" -o yaml
  expect_out "get -o json" '"kind": "ConfigMap"' k get cm cm1 -n "$NS" -o json
  expect_eq "get -o name" 'configmap/cm1' k get cm cm1 -n "$NS" -o name
  expect_eq "get -o jsonpath" 'v1' k get cm cm1 -n "$NS" -o 'jsonpath={.data.k1}'
  expect_out "describe" '^Name: +cm1$' k describe cm cm1 -n "$NS"
  expect_fail "invalid name is 422 Invalid" \
    'The ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of' \
    k create -f "$bad_name"
  expect_fail "unknown field is 400 BadRequest" \
    'Error from server (BadRequest): error when creating' k create -f "$unknown"
  expect_fail "unknown field message is upstream's" 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "spec"' k create -f "$unknown"
  expect_out "create --dry-run=server" '^configmap/dry created \(server dry run\)$' k create -f "$dry" --dry-run=server
  expect_fail "dry run stored nothing" 'configmaps "dry" not found' k get cm dry -n "$NS"

  # Selectors, paging, all namespaces
  expect_out "create -f json" '^configmap/cm2 created$' k create -f "$cm2"
  expect_out "label selector matches" '^cm2 ' k get cm -n "$NS" -l app=web
  if run_cmd k get cm -n "$NS" -l app=web -o name && ! grep -q cm1 <<<"$OUT"; then pass "label selector excludes"; else fail "label selector excludes"; fi
  expect_eq "field selector" 'configmap/cm2' k get cm -n "$NS" --field-selector metadata.name=cm2 -o name
  for i in 1 2 3 4 5; do k create -f - >/dev/null 2>&1 <<Y
{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"page-$i","namespace":"$NS"}}
Y
  done
  if run_cmd k get cm -n "$NS" --chunk-size=2 -o name && [ "$(grep -c '^configmap/\(cm\|page-\)' <<<"$OUT")" -eq 7 ]; then
    pass "--chunk-size=2 lists every object"; else fail "--chunk-size=2 lists every object"; fi
  expect_out "-A shows namespace column" "^$NS +cm1 +2 +" k get cm -A
  expect_out "-A header" '^NAMESPACE +NAME +DATA +AGE$' k get cm -A

  # Updates
  local stale="$M/cm1-stale.json"
  k get cm cm1 -n "$NS" -o json >"$stale" 2>/dev/null
  expect_out "replace -f" '^configmap/cm1 replaced$' k replace -f "$cm1b"
  expect_eq "replace changed data" 'changed' k get cm cm1 -n "$NS" -o 'jsonpath={.data.k1}'
  expect_fail "stale resourceVersion is 409 Conflict" \
    'Operation cannot be fulfilled on configmaps "cm1": the object has been modified; please apply your changes to the latest version and try again' \
    k replace -f "$stale"

  # Watch: the first line is the existing object, then a change made while watching
  local wlog="$M/watch.log"
  k get cm cm2 -n "$NS" -w >"$wlog" 2>&1 &
  local wpid=$!
  wait_until 20 grep -q '^cm2 ' "$wlog"
  k label cm cm2 -n "$NS" tier=front >/dev/null 2>&1
  # The count is taken on every try: "$(...)" as an argument would be counted once, before the event.
  watch_lines_at_least() { [ "$(grep -c '^cm2 ' "$wlog")" -ge "$1" ]; }
  if wait_until 20 watch_lines_at_least 2; then OUT=""; pass "get -w shows a change"; else OUT="$(cat "$wlog")"; fail "get -w shows a change"; fi
  kill "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null

  # Workloads and their columns
  expect_out "create -f pod" '^pod/web-0 created$' k create -f "$pod"
  expect_out "get pods -o wide header" '^NAME +READY +STATUS +RESTARTS +AGE +IP +NODE +NOMINATED NODE +READINESS GATES$' k get pods -n "$NS" -o wide
  expect_out "pod row" '^web-0 +0/1 +Pending +0 +' k get pods -n "$NS"
  # The legacy binding endpoint (POST .../bindings); kubectl prints the Status it answers.
  # (A pod of its own, force-deleted after: a bound pod waits for a kubelet to go.)
  sed 's/name: web-0/name: bind-0/' "$pod" | k create -f - >/dev/null
  expect_out "create -f binding" '^status/<unknown> created$' k create -f - <<Y
{"apiVersion":"v1","kind":"Binding","metadata":{"name":"bind-0","namespace":"$NS"},"target":{"name":"n1"}}
Y
  expect_eq "the binding set the pod's node" 'n1' k get pod bind-0 -n "$NS" -o 'jsonpath={.spec.nodeName}'
  expect_fail "binding a bound pod is upstream's 409" \
    'Operation cannot be fulfilled on pods/binding "bind-0": pod bind-0 is already assigned to node "n1"' k create -f - <<Y
{"apiVersion":"v1","kind":"Binding","metadata":{"name":"bind-0","namespace":"$NS"},"target":{"name":"n2"}}
Y
  k delete pod bind-0 -n "$NS" --grace-period=0 --force >/dev/null 2>&1
  # componentstatuses: probed, deprecated (kube-apiserver's columns and warning).
  expect_out "get cs header" '^NAME +STATUS +MESSAGE +ERROR$' k get cs
  expect_out "get cs: the storage is etcd-0" '^etcd-0 +Healthy +ok *$' k get componentstatuses
  expect_out "get cs: the scheduler is probed" '^scheduler +(Healthy|Unhealthy) ' k get cs
  expect_out "get cs warns of the deprecation" '^Warning: v1 ComponentStatus is deprecated in v1.19\+$' k get cs etcd-0
  expect_fail "get cs of an unknown component" 'Error from server: Component not found: nope' k get cs nope
  expect_out "create -f deployment" '^deployment.apps/web created$' k create -f "$deploy"
  expect_out "deployment columns" '^NAME +READY +UP-TO-DATE +AVAILABLE +AGE$' k get deploy -n "$NS"
  expect_eq "deployment defaults" 'RollingUpdate' k get deploy web -n "$NS" -o 'jsonpath={.spec.strategy.type}'
  expect_out "create -f service" '^service/web created$' k create -f "$svc"
  expect_out "service gets a cluster IP" '^web +ClusterIP +10\.0\.0\.[0-9]+ +<none> +80/TCP +' k get svc web -n "$NS"

  # Deletes, finalizers, waits
  expect_out "create with finalizer" '^configmap/held created$' k create -f "$fin"
  expect_out "delete held object" '^configmap "held" deleted' k delete cm held -n "$NS" --wait=false
  expect_out "finalizer keeps it with deletionTimestamp" '^20[0-9-]+T' k get cm held -n "$NS" -o 'jsonpath={.metadata.deletionTimestamp}'
  expect_fail "wait --for=delete times out while held" 'timed out waiting' k wait --for=delete cm/held -n "$NS" --timeout=2s
  expect_out "remove the finalizer" 'patched' k patch cm held -n "$NS" --type=merge -p '{"metadata":{"finalizers":null}}'
  expect_ok "wait --for=delete succeeds once released" k wait --for=delete cm/held -n "$NS" --timeout=30s
  expect_out "delete" '^configmap "cm1" deleted' k delete cm cm1 -n "$NS"
  expect_fail "deleted object is gone" 'configmaps "cm1" not found' k get cm cm1 -n "$NS"

  # Namespace termination: an object held by a finalizer keeps the namespace Terminating (the
  # namespace controller waits for it), then its release lets the namespace go.
  sed 's/name: held/name: keep/' "$fin" | k create -f - >/dev/null
  expect_out "delete namespace" "^namespace \"$NS\" deleted" k delete ns "$NS" --wait=false
  expect_eq "namespace is Terminating" 'Terminating' k get ns "$NS" -o 'jsonpath={.status.phase}'
  expect_fail "create in a terminating namespace is Forbidden" \
    "because it is being terminated" k create -f "$dry"
  k patch cm keep -n "$NS" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
  expect_ok "namespace gone once its content is" k wait --for=delete "ns/$NS" --timeout=30s
}

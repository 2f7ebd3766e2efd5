# Protobuf cases: kubectl's typed `create` commands (which send
# application/vnd.kubernetes.protobuf from kubectl 1.32 on), each with --dry-run=server first
# (nothing stored), then read back with `get -o yaml`/jsonpath; a protobuf list and watch by a raw
# client (curl with the admin certificate); a garbage protobuf body (400) and a protobuf body for
# a custom resource (415); an explicit zero (`--replicas=0`) kept; `kubectl drain` evicting
# through pods/eviction. Run once per (backend, kubectl) in namespace $NS-pb.

# pb_served RESOURCE [CASE]: whether `kubectl api-resources` lists RESOURCE; prints a SKIP line
# naming CASE (default: protobuf create RESOURCE) when not.
pb_served() {
  if grep -Eq "^$1[[:space:]]" <<<"$PB_RESOURCES"; then return 0; fi
  echo "SKIP: [$LABEL] ${2:-protobuf create $1} (kubectl api-resources does not list $1)"
  return 1
}

# pb_create NAME KIND/OBJECT GETARGS -- CREATE ARGS...: `create --dry-run=server` stores nothing,
# then `create` succeeds.
pb_create() {
  local n=$1 obj=$2; shift 2
  local get=()
  while [ "$1" != "--" ]; do get+=("$1"); shift; done
  shift
  expect_out "protobuf create $n --dry-run=server" "^$obj created \(server dry run\)$" \
    k create --dry-run=server "$@"
  expect_fail "protobuf create $n --dry-run=server stored nothing" "NotFound" k get "${get[@]}"
  expect_out "protobuf create $n" "^$obj created$" k create "$@"
}

# pb_yaml NAME REGEX GETARGS...: the object reads back as YAML matching REGEX.
pb_yaml() {
  local n=$1 re=$2; shift 2
  expect_out "$n (get -o yaml)" "$re" k get "$@" -o yaml
}

# pb_creds: the admin certificate and CA of the kubeconfig, and PB_CURL, a curl that uses them.
pb_creds() {
  PB_DIR="$WORK/pb-creds-$run"
  mkdir -p "$PB_DIR"
  local field
  for field in certificate-authority-data:ca.crt client-certificate-data:admin.crt client-key-data:admin.key; do
    sed -n "s/^ *${field%%:*}: //p" "$KUBECONFIG_FILE" | base64 -d >"$PB_DIR/${field#*:}"
  done
  PB_CURL="$PB_DIR/curl"
  printf '#!/bin/sh\nexec curl -sS --cacert %s --cert %s --key %s "$@"\n' \
    "$PB_DIR/ca.crt" "$PB_DIR/admin.crt" "$PB_DIR/admin.key" >"$PB_CURL"
  chmod +x "$PB_CURL"
  PB_URL="https://127.0.0.1:$KAPI_PORT"
}

run_protobuf_create_cases() {
  local g=(-n "$PNS")
  pb_create "namespace" "namespace/$PNS" namespace "$PNS" -- namespace "$PNS"
  pb_yaml "namespace" "^  name: $PNS$" namespace "$PNS"

  pb_create "configmap" "configmap/pb-cm" configmap pb-cm "${g[@]}" -- \
    configmap pb-cm "${g[@]}" --from-literal=greeting=hello --from-literal=n=1
  pb_yaml "configmap" "^  greeting: hello$" configmap pb-cm "${g[@]}"
  expect_eq "configmap data" 'hello/1' k get configmap pb-cm "${g[@]}" -o 'jsonpath={.data.greeting}/{.data.n}'

  pb_create "secret generic" "secret/pb-generic" secret pb-generic "${g[@]}" -- \
    secret generic pb-generic "${g[@]}" --from-literal=password=s3cret
  pb_yaml "secret generic" "^  password: czNjcmV0$" secret pb-generic "${g[@]}"
  expect_eq "secret generic type" 'Opaque' k get secret pb-generic "${g[@]}" -o 'jsonpath={.type}'

  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=pb.example.com \
    -keyout "$PB_DIR/tls.key" -out "$PB_DIR/tls.crt" >/dev/null 2>&1
  pb_create "secret tls" "secret/pb-tls" secret pb-tls "${g[@]}" -- \
    secret tls pb-tls "${g[@]}" --cert="$PB_DIR/tls.crt" --key="$PB_DIR/tls.key"
  pb_yaml "secret tls" "^type: kubernetes.io/tls$" secret pb-tls "${g[@]}"
  expect_eq "secret tls certificate" "$(base64 -w0 "$PB_DIR/tls.crt")" \
    k get secret pb-tls "${g[@]}" -o 'jsonpath={.data.tls\.crt}'

  pb_create "secret docker-registry" "secret/pb-reg" secret pb-reg "${g[@]}" -- \
    secret docker-registry pb-reg "${g[@]}" --docker-server=reg.example.com \
    --docker-username=u --docker-password=p
  pb_yaml "secret docker-registry" "^type: kubernetes.io/dockerconfigjson$" secret pb-reg "${g[@]}"
  expect_out "secret docker-registry config" '"reg.example.com":\{"username":"u","password":"p"' \
    bash -c "$(printf '%q ' "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$CACHE") get secret pb-reg -n $PNS -o 'jsonpath={.data.\.dockerconfigjson}' | base64 -d"

  pb_create "serviceaccount" "serviceaccount/pb-sa" serviceaccount pb-sa "${g[@]}" -- \
    serviceaccount pb-sa "${g[@]}"
  pb_yaml "serviceaccount" "^  name: pb-sa$" serviceaccount pb-sa "${g[@]}"

  pb_create "service clusterip" "service/pb-svc" service pb-svc "${g[@]}" -- \
    service clusterip pb-svc "${g[@]}" --tcp=80:8080
  pb_yaml "service clusterip" "^  type: ClusterIP$" service pb-svc "${g[@]}"
  expect_eq "service ports" '80/8080/TCP' k get service pb-svc "${g[@]}" \
    -o 'jsonpath={.spec.ports[0].port}/{.spec.ports[0].targetPort}/{.spec.ports[0].protocol}'
  expect_out "service cluster IP allocated" '^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$' \
    k get service pb-svc "${g[@]}" -o 'jsonpath={.spec.clusterIP}'

  pb_create "deployment" "deployment.apps/pb-web" deployment pb-web "${g[@]}" -- \
    deployment pb-web "${g[@]}" --image=nginx:1.25 --replicas=2 --port=80
  pb_yaml "deployment" "^  replicas: 2$" deployment pb-web "${g[@]}"
  expect_eq "deployment template" 'nginx:1.25/80/pb-web' k get deployment pb-web "${g[@]}" \
    -o 'jsonpath={.spec.template.spec.containers[0].image}/{.spec.template.spec.containers[0].ports[0].containerPort}/{.spec.selector.matchLabels.app}'
  expect_eq "deployment defaults" 'RollingUpdate/25%/10' k get deployment pb-web "${g[@]}" \
    -o 'jsonpath={.spec.strategy.type}/{.spec.strategy.rollingUpdate.maxSurge}/{.spec.revisionHistoryLimit}'

  # replicas is a Go pointer: its explicit zero survives the protobuf body.
  expect_out "protobuf create deployment --replicas=0" "^deployment.apps/pb-zero created$" \
    k create deployment pb-zero "${g[@]}" --image=nginx:1.25 --replicas=0
  expect_eq "deployment keeps replicas 0" '0' k get deployment pb-zero "${g[@]}" -o 'jsonpath={.spec.replicas}'

  pb_create "job" "job.batch/pb-job" job pb-job "${g[@]}" -- \
    job pb-job "${g[@]}" --image=busybox:1.36 -- echo hi
  pb_yaml "job" "^        - echo$" job pb-job "${g[@]}"
  expect_eq "job command" 'busybox:1.36 echo hi Never' k get job pb-job "${g[@]}" \
    -o 'jsonpath={.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].command[*]} {.spec.template.spec.restartPolicy}'

  pb_create "cronjob" "cronjob.batch/pb-cron" cronjob pb-cron "${g[@]}" -- \
    cronjob pb-cron "${g[@]}" --image=busybox:1.36 --schedule='*/5 * * * *' -- echo hi
  pb_yaml "cronjob" "^  schedule: '\*/5 \* \* \* \*'$" cronjob pb-cron "${g[@]}"
  expect_eq "cronjob job template" 'busybox:1.36 OnFailure' k get cronjob pb-cron "${g[@]}" \
    -o 'jsonpath={.spec.jobTemplate.spec.template.spec.containers[0].image} {.spec.jobTemplate.spec.template.spec.restartPolicy}'

  pb_create "quota" "resourcequota/pb-quota" resourcequota pb-quota "${g[@]}" -- \
    quota pb-quota "${g[@]}" --hard=pods=10,cpu=2,memory=1Gi
  pb_yaml "quota" "^    memory: 1Gi$" resourcequota pb-quota "${g[@]}"
  expect_eq "quota hard" '10/2/1Gi' k get resourcequota pb-quota "${g[@]}" \
    -o 'jsonpath={.spec.hard.pods}/{.spec.hard.cpu}/{.spec.hard.memory}'

  if pb_served roles; then
    pb_create "role" "role.rbac.authorization.k8s.io/pb-role" role pb-role "${g[@]}" -- \
      role pb-role "${g[@]}" --verb=get,list --resource=pods,configmaps
    pb_yaml "role" "^  - configmaps$" role pb-role "${g[@]}"
    expect_eq "role rules" 'get list/pods configmaps' k get role pb-role "${g[@]}" \
      -o 'jsonpath={.rules[0].verbs[*]}/{.rules[0].resources[*]}'
  fi
  if pb_served rolebindings; then
    pb_create "rolebinding" "rolebinding.rbac.authorization.k8s.io/pb-rb" rolebinding pb-rb "${g[@]}" -- \
      rolebinding pb-rb "${g[@]}" --role=pb-role --user=jane --serviceaccount="$PNS:pb-sa"
    pb_yaml "rolebinding" "^  name: pb-role$" rolebinding pb-rb "${g[@]}"
    expect_eq "rolebinding subjects" "Role/pb-role User/jane/ ServiceAccount/pb-sa/$PNS " \
      k get rolebinding pb-rb "${g[@]}" \
      -o 'jsonpath={.roleRef.kind}/{.roleRef.name} {range .subjects[*]}{.kind}/{.name}/{.namespace} {end}'
  fi
  if pb_served clusterroles; then
    pb_create "clusterrole" "clusterrole.rbac.authorization.k8s.io/pb-cr-$PNS" clusterrole "pb-cr-$PNS" -- \
      clusterrole "pb-cr-$PNS" --verb=get --resource=nodes --non-resource-url=/healthz
    pb_yaml "clusterrole" "^  - /healthz$" clusterrole "pb-cr-$PNS"
  fi
  if pb_served clusterrolebindings; then
    pb_create "clusterrolebinding" "clusterrolebinding.rbac.authorization.k8s.io/pb-crb-$PNS" \
      clusterrolebinding "pb-crb-$PNS" -- \
      clusterrolebinding "pb-crb-$PNS" --clusterrole="pb-cr-$PNS" --group=devs
    expect_eq "clusterrolebinding subjects" "ClusterRole/pb-cr-$PNS Group/devs" \
      k get clusterrolebinding "pb-crb-$PNS" -o 'jsonpath={.roleRef.kind}/{.roleRef.name} {.subjects[0].kind}/{.subjects[0].name}'
  fi
  if pb_served priorityclasses; then
    pb_create "priorityclass" "priorityclass.scheduling.k8s.io/pb-pc-$PNS" priorityclass "pb-pc-$PNS" -- \
      priorityclass "pb-pc-$PNS" --value=1000 --description="protobuf e2e"
    pb_yaml "priorityclass" "^value: 1000$" priorityclass "pb-pc-$PNS"
    expect_eq "priorityclass fields" 'protobuf e2e/PreemptLowerPriority' k get priorityclass "pb-pc-$PNS" \
      -o 'jsonpath={.description}/{.preemptionPolicy}'
  fi
  if pb_served poddisruptionbudgets; then
    pb_create "poddisruptionbudget" "poddisruptionbudget.policy/pb-pdb" poddisruptionbudget pb-pdb "${g[@]}" -- \
      poddisruptionbudget pb-pdb "${g[@]}" --selector=app=pb-web --min-available=1
    pb_yaml "poddisruptionbudget" "^  minAvailable: 1$" poddisruptionbudget pb-pdb "${g[@]}"
    expect_eq "poddisruptionbudget selector" 'pb-web' k get poddisruptionbudget pb-pdb "${g[@]}" \
      -o 'jsonpath={.spec.selector.matchLabels.app}'
  fi
  if pb_served ingresses; then
    pb_create "ingress" "ingress.networking.k8s.io/pb-ing" ingress pb-ing "${g[@]}" -- \
      ingress pb-ing "${g[@]}" --rule="foo.example.com/bar=pb-svc:80"
    pb_yaml "ingress" "^  - host: foo.example.com$" ingress pb-ing "${g[@]}"
    expect_eq "ingress backend" '/bar Exact pb-svc 80' k get ingress pb-ing "${g[@]}" \
      -o 'jsonpath={.spec.rules[0].http.paths[0].path} {.spec.rules[0].http.paths[0].pathType} {.spec.rules[0].http.paths[0].backend.service.name} {.spec.rules[0].http.paths[0].backend.service.port.number}'
  fi
}

run_protobuf_raw_cases() {
  local pb=application/vnd.kubernetes.protobuf base="$PB_URL/api/v1/namespaces/$PNS/configmaps"
  local printable="tr -d '\\r' | tr -c '[:print:]\\n' ' '"
  expect_out "protobuf list: content type" "^content-type: $pb\$" \
    bash -c "'$PB_CURL' -D - -o /dev/null -H 'Accept: $pb, application/json' '$base' | $printable | tr 'A-Z' 'a-z'"
  expect_out "protobuf list: enveloped ConfigMapList carrying pb-cm" '^k8s .*ConfigMapList.*pb-cm' \
    bash -c "'$PB_CURL' -H 'Accept: $pb' '$base' | tr -c '[:print:]' ' '"
  expect_out "protobuf watch: stream content type" "^content-type: $pb;stream=watch\$" \
    bash -c "'$PB_CURL' -D - -o /dev/null -H 'Accept: $pb, application/json' '$base?watch=true&timeoutSeconds=1' | $printable | tr 'A-Z' 'a-z'"
  expect_out "protobuf watch: ADDED frames carry enveloped objects" 'ADDED.*k8s .*ConfigMap.*pb-cm' \
    bash -c "'$PB_CURL' -H 'Accept: $pb, application/json' '$base?watch=true&timeoutSeconds=1' | tr -c '[:print:]' ' '"
  expect_out "protobuf watch: BOOKMARK frame ends the initial events" 'BOOKMARK.*k8s.io/initial-events-end' \
    bash -c "'$PB_CURL' -H 'Accept: $pb, application/json' '$base?watch=true&timeoutSeconds=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true' | tr -c '[:print:]' ' '"
  expect_out "garbage protobuf body is 400 BadRequest" '"reason":"BadRequest","code":400' \
    bash -c "printf 'k8s\\000\\n\\377' | '$PB_CURL' -X POST -H 'Content-Type: $pb' -H 'Accept: application/json' --data-binary @- '$base' | tr -d ' \\n'"
  expect_out "truncated protobuf body is 400 BadRequest" '"reason":"BadRequest","code":400' \
    bash -c "'$PB_CURL' -H 'Accept: $pb' '$base/pb-cm' | head -c 40 | '$PB_CURL' -X POST -H 'Content-Type: $pb' -H 'Accept: application/json' --data-binary @- '$base' | tr -d ' \\n'"

  pb_served customresourcedefinitions "protobuf 415 for a custom resource" || return 0
  cat >"$PB_DIR/crd.yaml" <<Y
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: pbwidgets.pb.e2e.example.com
spec:
  group: pb.e2e.example.com
  scope: Namespaced
  names: {plural: pbwidgets, singular: pbwidget, kind: PbWidget, listKind: PbWidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
Y
  expect_ok "custom resource definition for the 415 case" k apply -f "$PB_DIR/crd.yaml"
  wait_until 30 k get pbwidgets -n "$PNS" >/dev/null 2>&1
  local cr="$PB_URL/apis/pb.e2e.example.com/v1/namespaces/$PNS/pbwidgets"
  expect_out "protobuf body for a custom resource is 415" '"reason":"UnsupportedMediaType","code":415' \
    bash -c "'$PB_CURL' -H 'Accept: $pb' '$base/pb-cm' | '$PB_CURL' -X POST -H 'Content-Type: $pb' -H 'Accept: application/json' --data-binary @- '$cr' | tr -d ' \\n'"
  expect_out "protobuf Accept for a custom resource falls through to JSON" '"kind":"PbWidgetList"' \
    bash -c "'$PB_CURL' -H 'Accept: $pb, application/json' '$cr' | tr -d ' \\n'"
}

# kubectl drain evicts through pods/eviction (found in discovery) with client-go's bodies: a
# PodDisruptionBudget that allows nothing refuses with upstream's 429 message, and without it
# the pod is evicted with drain's --grace-period=0 (an explicit zero) and gone at once.
run_protobuf_eviction_cases() {
  pb_served nodes "kubectl drain through pods/eviction" || return 0
  local g=(-n "$PNS") node="pb-node-$PNS"
  printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s"}}' "$node" >"$PB_DIR/node.json"
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pb-guarded","labels":{"app":"pb-guarded"}},"spec":{"nodeName":"%s","containers":[{"name":"c","image":"nginx:1.25","resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"100m","memory":"64Mi"}}}]}}' \
    "$node" >"$PB_DIR/pod.json"
  expect_ok "node for drain" k create -f "$PB_DIR/node.json"
  # Requests and limits: the namespace's quota (above) counts cpu and memory.
  wait_until 30 k create -f "$PB_DIR/pod.json" "${g[@]}" >/dev/null 2>&1
  expect_ok "running pod on the node" k patch pod pb-guarded "${g[@]}" --subresource=status \
    --type=merge -p '{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}'
  expect_ok "budget over the pod" k create poddisruptionbudget pb-guard "${g[@]}" \
    --selector=app=pb-guarded --min-available=1
  # Its status as the disruption controller would write it: observed, nothing to spare. (An
  # unobserved budget answers 429 with Retry-After 10, which client-go itself waits out.)
  expect_ok "budget status allows no disruption" k patch poddisruptionbudget pb-guard "${g[@]}" \
    --subresource=status --type=merge \
    -p '{"status":{"observedGeneration":1,"disruptionsAllowed":0,"currentHealthy":1,"desiredHealthy":1,"expectedPods":1}}'
  expect_fail "drain refused by the budget (429)" \
    "Cannot evict pod as it would violate the pod's disruption budget." \
    k drain "$node" --force --grace-period=0 --timeout=3s
  expect_eq "the guarded pod stays" 'pb-guarded' k get pod pb-guarded "${g[@]}" -o 'jsonpath={.metadata.name}'
  expect_ok "budget removed" k delete poddisruptionbudget pb-guard "${g[@]}"
  expect_out "drain evicts the pod" "evicting pod $PNS/pb-guarded" \
    k drain "$node" --force --grace-period=0 --timeout=20s
  expect_fail "evicted pod is gone" "NotFound" k get pod pb-guarded "${g[@]}"
  expect_eq "drained node is cordoned" 'true' k get node "$node" -o 'jsonpath={.spec.unschedulable}'
  k delete node "$node" >/dev/null 2>&1
}

run_protobuf_cases() {
  PNS="$NS-pb"
  pb_creds
  PB_RESOURCES="$(k api-resources --no-headers 2>/dev/null)"
  run_protobuf_create_cases
  run_protobuf_raw_cases
  run_protobuf_eviction_cases
}

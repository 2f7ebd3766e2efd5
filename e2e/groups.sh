# API group cases: rbac.authorization.k8s.io, scheduling.k8s.io, policy, networking.k8s.io,
# storage.k8s.io, node.k8s.io, autoscaling and the core replication controllers and pod
# templates: discovery, kubectl create/get columns, defaults and validation messages. Run once
# per (backend, kubectl) in namespace $NS-groups; cluster-scoped names carry $NS so the runs on
# one server do not collide.

run_group_cases() {
  local G="$NS-groups" M="$WORK/manifests-$NS-groups"
  mkdir -p "$M"
  expect_out "groups: namespace" "^namespace/$G created$" k create ns "$G"

  expect_out "api-resources: rbac" '^clusterrolebindings +rbac.authorization.k8s.io/v1 +false +ClusterRoleBinding$' \
    k api-resources --api-group=rbac.authorization.k8s.io
  expect_out "api-resources: short names" '^priorityclasses +pc +scheduling.k8s.io/v1 +false +PriorityClass$' \
    k api-resources --api-group=scheduling.k8s.io
  expect_out "api-resources: pdb namespaced" '^poddisruptionbudgets +pdb +policy/v1 +true +PodDisruptionBudget$' \
    k api-resources --api-group=policy
  expect_out "api-resources: hpa prefers v2" '^horizontalpodautoscalers +hpa +autoscaling/v2 +true +HorizontalPodAutoscaler$' \
    k api-resources --api-group=autoscaling
  expect_out "api-resources: verbs" 'create,delete,deletecollection,get,list,patch,update,watch' \
    k api-resources --api-group=storage.k8s.io -o wide
  expect_out "api-resources: rc in all" '^replicationcontrollers +rc +v1 +true +ReplicationController +.*all' \
    k api-resources -o wide
  expect_out "explain role" 'PolicyRule holds information' k explain role.rules

  # rbac
  expect_out "create role" '^role.rbac.authorization.k8s.io/r created$' \
    k create role r -n "$G" --verb=get --resource=pods
  expect_out "create clusterrole" "^clusterrole.rbac.authorization.k8s.io/cr-$NS created$" \
    k create clusterrole "cr-$NS" --verb=get --non-resource-url=/healthz
  expect_out "create rolebinding" '^rolebinding.rbac.authorization.k8s.io/rb created$' \
    k create rolebinding rb -n "$G" --role=r --user=u --serviceaccount="$G:sa"
  expect_out "create clusterrolebinding" "^clusterrolebinding.rbac.authorization.k8s.io/crb-$NS created$" \
    k create clusterrolebinding "crb-$NS" --clusterrole="cr-$NS" --group=g
  expect_eq "subject apiGroup defaults" 'User=rbac.authorization.k8s.io ServiceAccount= ' \
    k get rolebinding rb -n "$G" -o 'jsonpath={range .subjects[*]}{.kind}={.apiGroup} {end}'
  expect_out "get rolebinding -o wide" '^rb +Role/r +[0-9]+s +u +'"$G"'/sa$' \
    k get rolebinding rb -n "$G" -o wide --no-headers
  expect_out "get clusterrole columns" '^NAME +CREATED AT$' k get clusterrole "cr-$NS"
  expect_fail "roleRef cannot change" 'cannot change roleRef' \
    k patch rolebinding rb -n "$G" --type=merge -p '{"roleRef":{"name":"other"}}'
  cat >"$M/badrole.yaml" <<Y
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: bad, namespace: $G}
rules:
- verbs: []
  nonResourceURLs: ["/x"]
Y
  expect_fail "role rule validation" 'rules[0].nonResourceURLs: Invalid value: []string{"/x"}: namespaced rules cannot apply to non-resource URLs' \
    k create -f "$M/badrole.yaml"

  # scheduling
  expect_out "create priorityclass" "^priorityclass.scheduling.k8s.io/pc-$NS created$" \
    k create priorityclass "pc-$NS" --value=10
  expect_out "get priorityclass" "^pc-$NS +10 +false +[0-9]+s" k get pc "pc-$NS" --no-headers
  expect_eq "preemptionPolicy default" 'PreemptLowerPriority' \
    k get pc "pc-$NS" -o 'jsonpath={.preemptionPolicy}'
  expect_eq "system-node-critical bootstrapped" '2000001000' \
    k get pc system-node-critical -o 'jsonpath={.value}'
  expect_fail "a system priority class cannot be deleted" \
    'Error from server (Forbidden): priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority class and cannot be deleted' \
    k delete pc system-node-critical
  expect_fail "priorityclass value immutable" 'value: Forbidden: may not be changed in an update.' \
    k patch pc "pc-$NS" --type=merge -p '{"value":11}'
  expect_fail "system- prefix reserved" "priority class names with 'system-' prefix are reserved for system use only" \
    k create priorityclass "system-$NS" --value=1

  # policy
  expect_out "create pdb" '^poddisruptionbudget.policy/p created$' \
    k create poddisruptionbudget p -n "$G" --selector=a=b --min-available=1
  expect_out "get pdb" '^p +1 +N/A +0 +[0-9]+s$' k get pdb p -n "$G" --no-headers
  expect_fail "pdb percent" 'must not be greater than 100%' \
    k create poddisruptionbudget q -n "$G" --selector=a=b --min-available=150%

  # networking
  expect_out "create ingress" '^ingress.networking.k8s.io/i created$' \
    k create ingress i -n "$G" --rule="a.com/=svc:80" --rule="b.com/x*=svc2:http,tls=sec"
  expect_out "get ingress" '^i +<none> +a.com,b.com +80, 443 +[0-9]+s$' k get ing i -n "$G" --no-headers
  cat >"$M/net.yaml" <<Y
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny, namespace: $G}
spec:
  podSelector: {}
  egress: [{ports: [{port: 53}]}]
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: ic-$NS}
spec: {controller: k8s.io/ingress-nginx}
Y
  expect_ok "apply networkpolicy and ingressclass" k apply -f "$M/net.yaml"
  expect_eq "networkpolicy defaults" 'Ingress Egress TCP' \
    k get netpol deny -n "$G" -o 'jsonpath={.spec.policyTypes[0]} {.spec.policyTypes[1]} {.spec.egress[0].ports[0].protocol}'
  expect_out "get ingressclass" "^ic-$NS +k8s.io/ingress-nginx +<none> +[0-9]+s$" k get ingressclass "ic-$NS" --no-headers
  printf 'apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: e, namespace: %s}\nspec: {}\n' "$G" >"$M/empty-ing.yaml"
  expect_fail "ingress needs rules or a backend" 'either `defaultBackend` or `rules` must be specified' \
    k create -f "$M/empty-ing.yaml"

  # storage and node
  cat >"$M/storage.yaml" <<Y
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: sc-$NS}
provisioner: example.com/ssd
parameters: {type: ssd}
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: csi-$NS.example.com}
spec: {}
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: rt-$NS}
handler: runsc
Y
  expect_ok "apply storage and node objects" k apply -f "$M/storage.yaml"
  expect_out "get storageclass" "^sc-$NS +example.com/ssd +Delete +Immediate +false +[0-9]+s$" k get sc "sc-$NS" --no-headers
  expect_out "get csidriver" "^csi-$NS.example.com +true +false +false +<unset> +false +Persistent +[0-9]+s$" \
    k get csidriver "csi-$NS.example.com" --no-headers
  expect_out "get runtimeclass" "^rt-$NS +runsc +[0-9]+s$" k get runtimeclass "rt-$NS" --no-headers
  expect_fail "storageclass parameters immutable" 'parameters: Forbidden: updates to parameters are forbidden.' \
    k patch sc "sc-$NS" --type=merge -p '{"parameters":{"type":"hdd"}}'
  expect_fail "runtimeclass handler immutable" 'handler: Invalid value: "kata": field is immutable' \
    k patch runtimeclass "rt-$NS" --type=merge -p '{"handler":"kata"}'

  # core replication controllers and autoscaling
  cat >"$M/rc.yaml" <<Y
apiVersion: v1
kind: ReplicationController
metadata: {name: web, namespace: $G}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
Y
  expect_out "create rc" '^replicationcontroller/web created$' k create -f "$M/rc.yaml"
  expect_eq "rc selector defaults from the template" 'web' \
    k get rc web -n "$G" -o 'jsonpath={.spec.selector.app}'
  expect_out "scale rc" '^replicationcontroller/web scaled$' k scale rc web -n "$G" --replicas=3
  expect_out "get rc -o wide" '^web +3 +0 +0 +[0-9]+s +c +nginx +app=web$' k get rc web -n "$G" -o wide --no-headers
  expect_out "autoscale rc" '^horizontalpodautoscaler.autoscaling/web autoscaled$' \
    k autoscale rc web -n "$G" --max=5 --cpu-percent=70
  expect_out "get hpa" '^web +ReplicationController/web +cpu: <unknown>/70% +1 +5 +0 +[0-9]+s$' \
    k get hpa web -n "$G" --no-headers
  expect_eq "hpa through autoscaling/v1" '70' \
    k get horizontalpodautoscalers.v1.autoscaling web -n "$G" -o 'jsonpath={.spec.targetCPUUtilizationPercentage}'

  run_certificate_cases "$G" "$M"
  run_wording_cases "$G" "$M"

  k delete ns "$G" --wait=false >/dev/null 2>&1
  k delete csr "csr-a-$NS" "csr-d-$NS" >/dev/null 2>&1
  k delete clusterrole "cr-$NS" >/dev/null 2>&1
  k delete clusterrolebinding "crb-$NS" >/dev/null 2>&1
}

# admin_curl CURL_ARGS... PATH: curl as the admin user, for requests kubectl cannot shape
# (an exact Accept header, a raw status body).
admin_curl() {
  local path=${*: -1} pki server
  pki="$(dirname "$KUBECONFIG_FILE")/pki"
  server=$(k config view --minify -o 'jsonpath={.clusters[0].cluster.server}')
  curl -s --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "${@:1:$#-1}" "$server$path"
}

# csr_manifest NAME FILE [REQUEST_B64] [EXPIRATION]: a CertificateSigningRequest for a fresh
# ECDSA key (or the given request bytes).
csr_manifest() {
  local name=$1 file=$2 request=${3:-} expiration=${4:-86400}
  if [ -z "$request" ]; then
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout "$file.key" -subj "/CN=$name" -out "$file.csr" 2>/dev/null
    request=$(base64 -w0 "$file.csr")
  fi
  cat >"$file" <<Y
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: $name}
spec:
  request: $request
  signerName: kubernetes.io/kube-apiserver-client
  expirationSeconds: $expiration
  usages: [client auth]
Y
}

# certificates.k8s.io CSRs (approve, deny, validation) and apps/v1 controller revisions: the
# two resources kube-controller-manager lists.
run_certificate_cases() {
  local G=$1 M=$2
  expect_out "api-resources: csr" '^certificatesigningrequests +csr +certificates.k8s.io/v1 +false +CertificateSigningRequest$' \
    k api-resources --api-group=certificates.k8s.io
  expect_out "api-resources: controllerrevisions" '^controllerrevisions +apps/v1 +true +ControllerRevision$' \
    k api-resources --api-group=apps
  csr_manifest "csr-a-$NS" "$M/csr-a.yaml"
  csr_manifest "csr-d-$NS" "$M/csr-d.yaml"
  expect_out "create csr" "^certificatesigningrequest.certificates.k8s.io/csr-a-$NS created$" k create -f "$M/csr-a.yaml"
  expect_ok "create second csr" k create -f "$M/csr-d.yaml"
  expect_out "get csr pending" "^csr-a-$NS +[0-9]+s +kubernetes.io/kube-apiserver-client +kubernetes-admin +24h +Pending$" \
    k get csr "csr-a-$NS" --no-headers
  expect_eq "csr requester groups from the request's user" '["system:masters","system:authenticated"]' \
    k get csr "csr-a-$NS" -o 'jsonpath={.spec.groups}'
  expect_out "certificate approve" "^certificatesigningrequest.certificates.k8s.io/csr-a-$NS approved$" \
    k certificate approve "csr-a-$NS"
  expect_out "certificate deny" "^certificatesigningrequest.certificates.k8s.io/csr-d-$NS denied$" \
    k certificate deny "csr-d-$NS"
  expect_out "get csr approved" "^csr-a-$NS +[0-9]+s +kubernetes.io/kube-apiserver-client +kubernetes-admin +24h +Approved$" \
    k get csr "csr-a-$NS" --no-headers
  expect_eq "denied condition" 'Denied/True' \
    k get csr "csr-d-$NS" -o 'jsonpath={.status.conditions[0].type}/{.status.conditions[0].status}'
  expect_out "describe csr" '^Requesting User: +kubernetes-admin$' k describe csr "csr-a-$NS"
  expect_eq "csr field selector spec.signerName" "csr-a-$NS" \
    k get csr --field-selector "metadata.name=csr-a-$NS,spec.signerName=kubernetes.io/kube-apiserver-client" -o 'jsonpath={.items[*].metadata.name}'
  csr_manifest "csr-bad-$NS" "$M/csr-bad.yaml" "aGVsbG8=" 60
  expect_fail "invalid csr 422: request" \
    '* spec.request: Invalid value: []byte{0x68, 0x65, 0x6c, 0x6c, 0x6f}: PEM block type must be CERTIFICATE REQUEST' \
    k create -f "$M/csr-bad.yaml"
  expect_fail "invalid csr 422: expirationSeconds" \
    '* spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 600 seconds (10 minutes)' \
    k create -f "$M/csr-bad.yaml"
  k create --dry-run=client -o json -f "$M/csr-bad.yaml" >"$M/csr-bad.json"
  expect_out "invalid csr is 422 Invalid" '"code": 422' \
    admin_curl -H 'Content-Type: application/json' --data-binary "@$M/csr-bad.json" \
    "/apis/certificates.k8s.io/v1/certificatesigningrequests"
  expect_out "explain csr" 'signerName indicates the requested signer' k explain csr.spec.signerName

  cat >"$M/cr.yaml" <<Y
apiVersion: apps/v1
kind: ControllerRevision
metadata: {name: web-1, namespace: $G}
data: {spec: {replicas: 1}}
revision: 1
Y
  expect_out "create controllerrevision" '^controllerrevision.apps/web-1 created$' k create -f "$M/cr.yaml"
  expect_out "get controllerrevision" '^web-1 +<none> +1 +[0-9]+s$' k get controllerrevisions -n "$G" --no-headers
  expect_fail "controllerrevision data immutable" 'data: Invalid value: map[string]interface {}{"spec":map[string]interface {}{"replicas":2}}: field is immutable' \
    k patch controllerrevision web-1 -n "$G" --type=merge -p '{"data":{"spec":{"replicas":2}}}'
  expect_fail "controllerrevision revision non-negative" 'revision: Invalid value: -1: must be greater than or equal to 0' \
    k patch controllerrevision web-1 -n "$G" --type=merge -p '{"revision":-1}'
}

# Upstream's wording for field selectors, Go-printed invalid values and as=Table on a storage
# without a table convertor.
run_wording_cases() {
  local G=$1 M=$2
  expect_fail "field selector: default metav1 conversion" \
    '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"' \
    k get configmaps -n "$G" --field-selector data.x=1
  expect_fail "field selector: a kind's own conversion" 'field label not supported: spec.foo' \
    k get pods -n "$G" --field-selector spec.foo=1
  expect_fail "field selector: namespaces take no metadata.namespace" 'field label not supported: metadata.namespace' \
    k get namespaces --field-selector metadata.namespace=x
  cat >"$M/deploy-mismatch.yaml" <<Y
apiVersion: apps/v1
kind: Deployment
metadata: {name: mismatch, namespace: $G}
spec:
  selector: {matchLabels: {app: web-x}}
  template:
    metadata: {labels: {app: web-y}}
    spec: {containers: [{name: c, image: nginx}]}
Y
  expect_fail "invalid value printed as Go prints a map" \
    'spec.template.metadata.labels: Invalid value: map[string]string{"app":"web-y"}: `selector` does not match template `labels`' \
    k create -f "$M/deploy-mismatch.yaml"
  local ssar='{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}'
  local review=/apis/authorization.k8s.io/v1/selfsubjectaccessreviews
  expect_out "as=Table without a table convertor is 406" '"reason": "NotAcceptable"' \
    admin_curl -H 'Accept: application/json;as=Table;v=v1;g=meta.k8s.io' \
    -H 'Content-Type: application/json' -d "$ssar" "$review"
  expect_out "as=Table falls back to the next Accept range" '"kind": "SelfSubjectAccessReview"' \
    admin_curl -H 'Accept: application/json;as=Table;v=v1;g=meta.k8s.io, application/json' \
    -H 'Content-Type: application/json' -d "$ssar" "$review"
}

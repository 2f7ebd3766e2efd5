#!/usr/bin/env bash
# Node authorization and NodeRestriction end-to-end, on the embedded store and on etcd: kapi
# with `--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction`, two
# kubelet identities (client certificates `system:node:n1` / `system:node:n2` in
# `O=system:nodes`, signed by kapi's CA) driven by real kubectl (and curl for status patches,
# which kubectl would read first). A kubelet reads the secrets and config maps of pods bound to
# it and nothing else, writes its own Node, Lease and pods' status and not another node's, gets
# tokens only for its pods; every refusal is kube-apiserver's (1.33) wording and changes
# nothing. The answers were compared with kube-apiserver v1.28.7 run the same way (see
# docs/auth.md); where 1.33's AuthorizeNodeWithSelectors differs from 1.28 the gate is also
# switched off and 1.28's answer checked. Also the CSR admission checks (CertificateApproval,
# CertificateSigning, CertificateSubjectRestriction) with an impersonated approver.
#
#   KAPI_BIN=path/to/kapi-apiserver e2e/node-authz.sh   (default: builds the debug binary)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=e2e/lib.sh
. "$ROOT/e2e/lib.sh"

e2e_init node-authz
e2e_start_etcd

# node_certs NAME: client certificates and kubeconfigs for kubelets n1 and n2, signed by the CA
# of kapi NAME (its cert dir holds ca.crt and ca.key).
node_certs() {
  local pki="$WORK/kapi-$1/pki" n
  for n in n1 n2; do
    openssl req -newkey rsa:2048 -nodes -keyout "$WORK/$n.key" -out "$WORK/$n.csr" \
      -subj "/O=system:nodes/CN=system:node:$n" 2>/dev/null
    openssl x509 -req -in "$WORK/$n.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
      -out "$WORK/$n.crt" -days 1 -extfile <(printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n') 2>/dev/null
    cp "$KUBECONFIG_FILE" "$WORK/$n.kubeconfig"
    "$KUBECTL" --kubeconfig "$WORK/$n.kubeconfig" config set-credentials "$n" --embed-certs \
      --client-certificate="$WORK/$n.crt" --client-key="$WORK/$n.key" >/dev/null
    "$KUBECTL" --kubeconfig "$WORK/$n.kubeconfig" config set-context \
      "$("$KUBECTL" --kubeconfig "$WORK/$n.kubeconfig" config current-context)" --user="$n" >/dev/null
  done
}
k1() { "$KUBECTL" --kubeconfig "$WORK/n1.kubeconfig" --cache-dir "$CACHE" "$@"; }
k2() { "$KUBECTL" --kubeconfig "$WORK/n2.kubeconfig" --cache-dir "$CACHE" "$@"; }
# patch1 PATH BODY: a merge patch as n1; prints the answer's code and message.
patch1() {
  curl -s --cacert "$CA" --cert "$WORK/n1.crt" --key "$WORK/n1.key" -X PATCH \
    -H 'Content-Type: application/merge-patch+json' "https://127.0.0.1:$PORT$1" -d "$2" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("code", 200), d.get("message", d.get("kind")))'
}

pod_yaml() { # NAME NODE SECRET
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  nodeName: $2
  automountServiceAccountToken: false
  containers: [{name: c, image: x, envFrom: [{secretRef: {name: $3}}, {configMapRef: {name: c1}}]}]
EOF
}
lease_yaml() { # NAME NAMESPACE
  printf 'apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: %s, namespace: %s}\nspec: {holderIdentity: %s}\n' "$1" "$2" "$1"
}
# csr_yaml NAME SUBJECT SIGNER: a CertificateSigningRequest for a fresh EC key.
csr_yaml() {
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout /dev/null \
    -subj "$2" -out "$WORK/$1.csr" 2>/dev/null
  printf 'apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {name: %s}\nspec: {signerName: %s, usages: [client auth], request: %s}\n' \
    "$1" "$3" "$(base64 -w0 "$WORK/$1.csr")" >"$WORK/$1.yaml"
}

# The CSR admission checks (CertificateSubjectRestriction, CertificateApproval,
# CertificateSigning; on by default), with bob impersonated by the admin.
csr_suite() {
  csr_yaml masters "/O=system:masters/CN=eve" kubernetes.io/kube-apiserver-client
  csr_yaml other "/O=system:masters/CN=eve" example.com/signer
  csr_yaml fine "/O=devs/CN=bob" kubernetes.io/kube-apiserver-client
  expect_fail "no system:masters from the client signer" \
    'certificatesigningrequests.certificates.k8s.io "masters" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed' \
    k create -f "$WORK/masters.yaml"
  expect_ok "system:masters from another signer" k create -f "$WORK/other.yaml"
  expect_ok "a CSR for another group" k create -f "$WORK/fine.yaml"
  k create clusterrole csr-approver --verb=get,list,update \
    --resource=certificatesigningrequests,certificatesigningrequests/approval,certificatesigningrequests/status >/dev/null
  k create clusterrolebinding csr-approver --clusterrole=csr-approver --user=bob >/dev/null
  printf 'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: signer-approver}\nrules: [{apiGroups: [certificates.k8s.io], resources: [signers], resourceNames: ["kubernetes.io/*"], verbs: [approve]}]\n' |
    k create -f - >/dev/null
  expect_fail "approving needs approve on the signer" \
    'certificatesigningrequests.certificates.k8s.io "fine" is forbidden: user not permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client"' \
    k --as=bob certificate approve fine
  expect_eq "the CSR is still pending" '' k get csr fine -o 'jsonpath={.status.conditions}'
  k create clusterrolebinding signer-approver --clusterrole=signer-approver --user=bob >/dev/null
  approve_fine() { k --as=bob certificate approve fine >/dev/null 2>&1; }
  if wait_until 10 approve_fine; then pass "approve on kubernetes.io/* approves"; else fail "approve on kubernetes.io/* approves"; fi
  expect_fail "but not another domain's signer" \
    'certificatesigningrequests.certificates.k8s.io "other" is forbidden: user not permitted to approve requests with signerName "example.com/signer"' \
    k --as=bob certificate approve other
  k get csr fine -o json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); d["status"]["conditions"].append({"type":"Failed","status":"True","reason":"x","message":"m"}); print(json.dumps(d))' >"$WORK/fine-status.json"
  expect_fail "writing the status needs sign on the signer" \
    'certificatesigningrequests.certificates.k8s.io "fine" is forbidden: user not permitted to sign requests with signerName "kubernetes.io/kube-apiserver-client"' \
    k --as=bob replace --subresource=status -f "$WORK/fine-status.json"
}

FORBID='is forbidden: User "system:node:n1" cannot'
NO_REL="no relationship found between node 'n1' and this object"

run_suite() {
  LABEL="node-authz-$1"
  # The objects an administrator makes: node n2, secrets, a config map, a pod on each node.
  wait_until 30 k get serviceaccount default >/dev/null 2>&1
  k create namespace kube-node-lease >/dev/null 2>&1
  printf 'apiVersion: v1\nkind: Node\nmetadata: {name: n2}\n' | k create -f - >/dev/null
  k create secret generic s1 --from-literal=k=v >/dev/null
  k create secret generic s2 --from-literal=k=v >/dev/null
  k create configmap c1 --from-literal=k=v >/dev/null
  pod_yaml p1 n1 s1 | k create -f - >/dev/null
  pod_yaml p2 n2 s2 | k create -f - >/dev/null

  # Nodes: a kubelet registers its own Node and no other.
  printf 'apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {kubernetes.io/hostname: n1}}\n' >"$WORK/n1.yaml"
  expect_fail "a kubelet cannot register another node" \
    'nodes "n3" is forbidden: node "n1" is not allowed to modify node "n3"' \
    bash -c "sed 's/name: n1,/name: n3,/' '$WORK/n1.yaml' | $KUBECTL --kubeconfig '$WORK/n1.kubeconfig' create -f -"
  expect_ok "a kubelet registers its own node" k1 create -f "$WORK/n1.yaml"

  # Secrets and config maps through the graph.
  expect_eq "n1 reads the secret of its pod" "secret/s1" k1 get secret s1 -o name
  expect_eq "n1 reads the config map of its pod" "configmap/c1" k1 get configmap c1 -o name
  expect_fail "n1 cannot read the secret of a pod on n2" \
    "secrets \"s2\" $FORBID get resource \"secrets\" in API group \"\" in the namespace \"default\": $NO_REL" \
    k1 get secret s2
  expect_eq "n2 reads the secret of its pod" "secret/s2" k2 get secret s2 -o name
  expect_fail "n1 cannot list secrets" \
    "secrets $FORBID list resource \"secrets\" in API group \"\" in the namespace \"default\": No Object name found" \
    k1 get secrets
  expect_fail "n1 cannot delete its pod's secret" \
    "secrets \"s1\" $FORBID delete resource \"secrets\" in API group \"\" in the namespace \"default\": can only read resources of this type" \
    k1 delete secret s1
  expect_fail "can-i says why" "no - No Object name found" k1 auth can-i get secrets

  # Node and node status writes: only its own.
  expect_eq "n1 cannot write n2's status" '403 nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"' \
    patch1 /api/v1/nodes/n2/status '{"status":{"conditions":[{"type":"Ready","status":"True"}]}}'
  expect_eq "n1 writes its own status" '200 Node' \
    patch1 /api/v1/nodes/n1/status '{"status":{"conditions":[{"type":"Ready","status":"True"}]}}'
  expect_eq "n2's status is unchanged" '' k get node n2 -o 'jsonpath={.status.conditions}'
  expect_ok "n1 labels its node" k1 label node n1 foo=bar
  expect_fail "n1 cannot set a node-restriction label" \
    'nodes "n1" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/x' \
    k1 label node n1 node-restriction.kubernetes.io/x=y
  expect_fail "n1 cannot set other k8s.io labels" \
    'nodes "n1" is forbidden: is not allowed to modify labels: foo.k8s.io/x' k1 label node n1 foo.k8s.io/x=y
  expect_fail "n1 cannot taint itself" 'nodes "n1" is forbidden: node "n1" is not allowed to modify taints' \
    k1 taint node n1 k=v:NoSchedule
  expect_fail "n1 cannot delete its node" \
    "nodes \"n1\" $FORBID delete resource \"nodes\" in API group \"\" at the cluster scope" k1 delete node n1
  expect_fail "n1 cannot read another node (1.33 AuthorizeNodeWithSelectors)" \
    "nodes \"n2\" $FORBID get resource \"nodes\" in API group \"\" at the cluster scope: node 'n1' cannot read 'n2', only its own Node object" \
    k1 get node n2
  expect_fail "n1 cannot list all nodes" \
    "nodes $FORBID list resource \"nodes\" in API group \"\" at the cluster scope: node 'n1' cannot read all nodes, only its own Node object" \
    k1 get nodes
  expect_eq "n1 lists its own node by name" "node/n1" k1 get nodes --field-selector metadata.name=n1 -o name

  # Pods: its own by field selector; status, eviction and delete only of its pods.
  expect_eq "n1 lists its pods" "pod/p1" k1 get pods -A --field-selector spec.nodeName=n1 -o name
  expect_fail "n1 cannot list every pod" \
    "pods $FORBID list resource \"pods\" in API group \"\" at the cluster scope: can only list/watch pods with spec.nodeName field selector" \
    k1 get pods -A
  expect_fail "n1 cannot read a pod on n2" \
    "pods \"p2\" $FORBID get resource \"pods\" in API group \"\" in the namespace \"default\": $NO_REL" k1 get pod p2
  expect_eq "n1 cannot write the status of a pod on n2" \
    '403 pods "p2" is forbidden: node "n1" can only update pod status for pods with spec.nodeName set to itself' \
    patch1 /api/v1/namespaces/default/pods/p2/status '{"status":{"message":"hi"}}'
  expect_eq "p2's status is unchanged" '' k get pod p2 -o 'jsonpath={.status.message}'
  expect_eq "n1 writes its pod's status" '200 Pod' \
    patch1 /api/v1/namespaces/default/pods/p1/status '{"status":{"message":"hi"}}'
  expect_eq "n1 cannot relabel through pod status" \
    '403 pods "p1" is forbidden: node "n1" cannot update labels through pod status' \
    patch1 /api/v1/namespaces/default/pods/p1/status '{"metadata":{"labels":{"a":"b"}}}'
  expect_fail "n1 cannot delete a pod on n2" \
    'pods "p2" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself' k1 delete pod p2
  echo '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p2","namespace":"default"}}' >"$WORK/ev.json"
  expect_fail "n1 cannot evict a pod on n2" \
    'pods "p2" is forbidden: node n1 can only evict pods with spec.nodeName set to itself' \
    k1 create --raw /api/v1/namespaces/default/pods/p2/eviction -f "$WORK/ev.json"
  expect_eq "p2 is still there" "pod/p2" k get pod p2 -o name
  expect_fail "n1 creates only mirror pods" \
    'pods "m1" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods' \
    bash -c "$(declare -f pod_yaml); pod_yaml m1 n1 s1 | $KUBECTL --kubeconfig '$WORK/n1.kubeconfig' create -f -"

  # Service-account tokens: only bound to its pods.
  local uid1 uid2
  uid1=$(k get pod p1 -o 'jsonpath={.metadata.uid}')
  uid2=$(k get pod p2 -o 'jsonpath={.metadata.uid}')
  expect_ok "n1 gets a token bound to its pod" \
    k1 create token default --bound-object-kind Pod --bound-object-name p1 --bound-object-uid "$uid1"
  expect_fail "n1 cannot get a token bound to a pod on n2" \
    'serviceaccounts "default" is forbidden: node requested token bound to a pod scheduled on a different node' \
    k1 create token default --bound-object-kind Pod --bound-object-name p2 --bound-object-uid "$uid2"
  expect_fail "n1 cannot get an unbound token" \
    'serviceaccounts "default" is forbidden: node requested token not bound to a pod' k1 create token default
  expect_fail "n1 cannot get a token of an account none of its pods uses" \
    "serviceaccounts \"other\" $FORBID create resource \"serviceaccounts/token\" in API group \"\" in the namespace \"default\": $NO_REL" \
    k1 create token other

  # Leases: its own, in kube-node-lease.
  expect_ok "n1 creates its lease" bash -c "$(declare -f lease_yaml); lease_yaml n1 kube-node-lease | $KUBECTL --kubeconfig '$WORK/n1.kubeconfig' create -f -"
  expect_fail "n1 cannot create n2's lease" \
    'leases.coordination.k8s.io "n2" is forbidden: can only access node lease with the same name as the requesting node' \
    bash -c "$(declare -f lease_yaml); lease_yaml n2 kube-node-lease | $KUBECTL --kubeconfig '$WORK/n1.kubeconfig' create -f -"
  expect_fail "n1 cannot create a lease elsewhere" \
    "leases.coordination.k8s.io $FORBID create resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"default\": can only access leases in the \"kube-node-lease\" system namespace" \
    bash -c "$(declare -f lease_yaml); lease_yaml n1 default | $KUBECTL --kubeconfig '$WORK/n1.kubeconfig' create -f -"
  expect_fail "n2's lease does not exist" 'not found' k get lease -n kube-node-lease n2

  # The graph is rebuilt from storage at start: after a restart n1 still reads s1.
  start_kapi_again
  expect_eq "after a restart n1 still reads its pod's secret" "secret/s1" k1 get secret s1 -o name
  expect_fail "after a restart n1 still cannot read s2" "$NO_REL" k1 get secret s2

  # The pod goes: so does n1's access to its secret, which itself stays.
  k delete pod p1 --grace-period=0 --force >/dev/null 2>&1
  if wait_until 10 bash -c "! $KUBECTL --kubeconfig '$WORK/n1.kubeconfig' get secret s1 >/dev/null 2>&1"; then
    pass "the pod deleted, n1 no longer reads its secret"
  else
    fail "the pod deleted, n1 no longer reads its secret"
  fi
  expect_fail "the refusal names no relationship" "$NO_REL" k1 get secret s1
  expect_eq "the secret itself is untouched" "secret/s1" k get secret s1 -o name

  csr_suite

  # 1.28's node and pod reads with AuthorizeNodeWithSelectors off.
  start_kapi_again --feature-gates=AuthorizeNodeWithSelectors=false
  expect_eq "without AuthorizeNodeWithSelectors n1 reads another node (as 1.28)" "node/n2" k1 get node n2 -o name
  expect_eq "without AuthorizeNodeWithSelectors n1 lists every pod (as 1.28)" "pod/p2" k1 get pods -A -o name
  expect_fail "without AuthorizeNodeWithSelectors n1 still cannot write n2" \
    'nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"' k1 label node n2 x=y
}

FLAGS=(--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction)

E2E_KAPI_PORT=$(free_port)
start_kapi_again() { start_kapi_embedded embedded "${FLAGS[@]}" "$@"; }
start_kapi_again
node_certs embedded
run_suite embedded

E2E_KAPI_PORT=$(free_port)
start_kapi_again() { start_kapi_on_etcd etcd "${FLAGS[@]}" "$@"; }
start_kapi_again
node_certs etcd
run_suite etcd

summary

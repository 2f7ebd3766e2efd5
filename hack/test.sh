#!/usr/bin/env bash
# Runs every test kapi has: formatting and lints, the unit and integration tests of every crate
# (the storage conformance suite against a real etcd and the embedded store, the in-process
# server tests with the kube crate, the check that the generated protobuf table is current),
# then the end-to-end suites: kubectl (e2e/run.sh against both backends, admission, dynamic
# admission, mutating admission policy, rbac, node authorization, auth, audit, validate, envtest)
# and the official Python and JavaScript clients (e2e/clients.sh, both backends),
# the kubelet-facing subresources through a kubelet stand-in (e2e/kubelet-proxy.sh, both backends),
# a cluster of upstream's scheduler, controller manager and hollow kubelets on kapi (e2e/cluster.sh,
# both backends; skipped with one line when the upstream binaries are absent),
# then security (file modes, encryption at rest, refusals over HTTP/2) and faults (kill -9, etcd restarts, full disk).
# Installs what it needs first: etcd and protoc from Debian, the Python client into a virtual
# environment and the JavaScript client into a folder, both under ${KAPI_E2E_CACHE:-/var/tmp/kapi-e2e-cache}.
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/kapi-target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

if [ ! -x /usr/bin/kubectl ] && ! command -v kubectl >/dev/null 2>&1; then
  echo "hack/test.sh: kubectl not found (expected /usr/bin/kubectl): the e2e suite drives a real kubectl" >&2
  exit 1
fi

hack/install-etcd.sh

# Each step's duration, printed as it ends and as a table at the end, so a slow step shows up.
step_name="" step_began=$SECONDS suite_began=$SECONDS timings=""
end_step() {
  if [ -n "$step_name" ]; then
    timings+="$(printf '%6d s  %s' "$((SECONDS - step_began))" "${step_name%% (*}")"$'\n'
    printf '=== %d s: %s (disk free: %s)\n' "$((SECONDS - step_began))" "${step_name%% (*}" \
      "$(df -h --output=avail "$CARGO_TARGET_DIR" 2>/dev/null | tail -n 1 | tr -d ' ')"
  fi
}
step() { end_step; step_name="$*" step_began=$SECONDS; printf '\n=== %s\n' "$*"; }
summary() {
  local rc=$?
  end_step
  step_name=""
  printf '\n=== hack/test.sh step durations (exit %d, %d s in all)\n%s' "$rc" "$((SECONDS - suite_began))" "$timings"
}
trap summary EXIT

step "cargo fmt --check"
cargo fmt --all -- --check

step "architecture (no import circle across two ideas inside a crate: hack/import-graph.py)"
python3 hack/import-graph.py

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo test (unit, conformance, integration)"
cargo test --workspace --locked --no-fail-fast

step "fuzz (every decoder of untrusted bytes, ${KAPI_FUZZ_SECONDS:-15} s per target, kept inputs first)"
cargo run --locked -q -p kapi-fuzz -- --seconds "${KAPI_FUZZ_SECONDS:-15}" --seed "${KAPI_FUZZ_SEED:-1}"

step "e2e (kubectl against kapi on etcd and on the embedded store)"
cargo build --locked -p kapi-apiserver
KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver" e2e/run.sh

step "e2e admission (kapi restarted with admission flags, on etcd)"
KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver" e2e/admission.sh

step "e2e dynamic admission (webhooks with a test webhook server, ValidatingAdmissionPolicy; on etcd and on the embedded store)"
KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver" e2e/admission-dynamic.sh

step "e2e mutating admission policy (v1alpha1 MutatingAdmissionPolicy served and enforced; on etcd and on the embedded store)"
KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver" e2e/mutating-policy.sh

step "e2e rbac (kapi with the default RBAC authorization, service-account and token users, on etcd)"
KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver" e2e/rbac.sh

step "e2e node authorization (Node,RBAC and NodeRestriction with kubelet client certificates, on both backends)"
KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver" e2e/node-authz.sh

step "e2e auth (service-account and static tokens, TokenReview, impersonation, on etcd)"
KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver" e2e/auth.sh

step "e2e audit (kapi with an audit policy and log, on etcd)"
KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver" e2e/audit.sh

step "e2e validate (kubectl's client-side validation of a kind: List over /openapi/v2, create --raw, on both backends)"
KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver" e2e/validate.sh

step "e2e controllers (namespace deletion, garbage collection, --controllers, on both backends)"
KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver" e2e/controllers.sh

step "e2e envtest (controller-runtime envtest's kube-apiserver start-up replayed against kapi from hack/envtest-assets.sh, on a fresh etcd; then CRD, custom objects, RBAC and tokens through kubectl)"
KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver" e2e/envtest.sh

step "e2e clients (the official Python and JavaScript clients, on etcd and on the embedded store)"
KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver" e2e/clients.sh

step "e2e kubelet proxy (pods/log, exec, attach, port-forward, nodes/pods/services proxy, ephemeral containers through a kubelet stand-in; both backends)"
cargo build --locked -p kapi-testing --bin kubelet-standin
KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver" STANDIN_BIN="$CARGO_TARGET_DIR/debug/kubelet-standin" e2e/kubelet-proxy.sh

step "e2e aggregation (apiregistration.k8s.io: local APIServices, CRD APIServices, validation, discovery; both backends)"
KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver" e2e/aggregation.sh

step "e2e cluster (hack/local-cluster.sh: upstream's kube-scheduler, kube-controller-manager and hollow kubelets on kapi; rollouts, DaemonSet, StatefulSet, taints, drain through a PDB, a lost node; both backends)"
KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver" e2e/cluster.sh

step "e2e security (file modes, encryption at rest on both backends, refusals over HTTP/2)"
KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver" e2e/security.sh

step "e2e faults (kill -9 under writers, etcd restarted under load, a second kapi on one data dir, a full disk)"
KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver" e2e/faults.sh

step "e2e ha (3 kapi replicas on a 3-member etcd cluster: load, kill -9 of a replica and a member, quorum loss)"
KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver" timeout 600 e2e/ha.sh

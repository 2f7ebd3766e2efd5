#!/usr/bin/env bash
# Runs every test kapi has: formatting, the import-graph check and lints; one build of every
# target; the unit and integration tests of every crate (the storage conformance suite against a
# real etcd and the embedded store, the in-process server tests with the kube crate, the
# architecture invariants, the check that the generated protobuf table is current); the fuzzers;
# then the end-to-end suites against the release server hack/local-up.sh builds, several at
# once: kubectl (e2e/run.sh against both backends, admission, dynamic admission, mutating
# admission policy, rbac, node authorization, auth, audit, validate, envtest), the official
# Python and JavaScript clients (e2e/clients.sh), the kubelet-facing subresources through a
# kubelet stand-in, the aggregation layer with upstream's sample-apiserver, a cluster of
# upstream's scheduler, controller manager and hollow kubelets on kapi (e2e/cluster.sh; skipped
# with one line when the upstream binaries are absent), security, faults (kill -9, etcd
# restarts, full disk), HA, and consistency under faults (recorded histories checked for
# linearizability, lost updates, stale LISTs and watch gaps, hack/consistency/run.sh). Installs
# what it needs first: etcd and protoc from Debian, the Python client into a virtual environment
# and the JavaScript client into a folder, both under
# ${KAPI_E2E_CACHE:-/var/tmp/kapi-e2e-cache}. Prints each step's duration, and a table of them
# at the end. Exits non-zero on any failure.
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

# The e2e suites run the binary users run: hack/local-up.sh's release build, made here with the
# same command (so after local-up.sh it is already there), or KAPI_BIN when given (.ci/run passes
# the one its command 1 built). As a debug build the server took 556 of the suites' 1,319 CPU
# seconds, optimized 110 of 764; the crates' own tests still run with debug assertions.
if [ -z "${KAPI_BIN:-}" ]; then
  step "cargo build --release -p kapi-apiserver (the binary hack/local-up.sh runs, for the e2e suites)"
  cargo build --release --locked -p kapi-apiserver
  KAPI_BIN="$CARGO_TARGET_DIR/release/kapi-apiserver"
fi

step "cargo build with clippy's lints (every target in one build: the tests, the server and the tools share one set of compiled dependencies)"
# Lints and code in one pass: clippy's driver compiles the workspace's own crates, exactly as
# `cargo clippy` runs it but with code generation, so the dependencies are not compiled twice
# (once checked for clippy, once built). Every cargo command below runs with the same wrapper and
# arguments, which are part of each crate's fingerprint, so nothing is rebuilt after this step.
# The Python client's environment, which several suites share, is made meanwhile: it is mostly
# downloads, and the build mostly CPU.
PY_ENV_LOG="$(mktemp /tmp/kapi-py-env.XXXXXX)"
(ROOT="$PWD"; . e2e/lib.sh; py_env >/dev/null) >"$PY_ENV_LOG" 2>&1 &
py_env_pid=$!
export RUSTC_WORKSPACE_WRAPPER="$(rustc --print sysroot)/bin/clippy-driver"
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
# One build resolves features once (with the tests' dev-dependencies), so `cargo test` below
# and the binaries the suites run are all fresh after it; a separate `cargo build -p` would
# resolve features again and rebuild every crate above a dependency whose features differ.
cargo build --workspace --all-targets --locked

BIN="$CARGO_TARGET_DIR/debug"
export KAPI_BIN STANDIN_BIN="$BIN/kubelet-standin"
# What runs after the build: the crates' tests, the fuzzers and the end-to-end suites, taken
# from this list in order by ${KAPI_TEST_JOBS:-4} workers at once (longest first, so the short
# ones fill the gaps at the end). Each e2e suite starts its own etcd and kapi on free loopback
# ports in its own work folder, so none waits for another; on 2 cores most of a suite's time is
# spent waiting on processes it started. Each entry's output is kept and printed whole, in this
# order, once all are done. The figures in the comments are a warm run's (2026-11-30, 4 workers), in seconds.
SUITES=(
  "e2e cluster (hack/local-cluster.sh: upstream's kube-scheduler, kube-controller-manager and hollow kubelets on kapi; rollouts, DaemonSet, StatefulSet, taints, drain through a PDB, a lost node; both backends)|e2e/cluster.sh" # 229
  "e2e faults: consistency on etcd (3 replicas on a 3-member etcd, each in a network namespace: recorded clients for 150 s under kill -9 of replicas and members and partitions; then the planted watch-cache fault must be caught)|export CONSISTENCY_LOAD_BIN=\"\$BIN/kapi-consistency-load\" CONSISTENCY_CHECK_BIN=\"\$BIN/kapi-consistency-check\"; CONSISTENCY_SECONDS=150 CONSISTENCY_PAUSE_MS=100 hack/consistency/run.sh etcd && hack/consistency/run.sh --planted etcd" # 178
  "cargo test (unit, conformance, integration)|cargo test --workspace --locked --no-fail-fast" # 158
  "e2e on etcd (kubectl against kapi on etcd)|E2E_BACKENDS=etcd e2e/run.sh" # 152
  "e2e on the embedded store (kubectl against kapi on the embedded store)|E2E_BACKENDS=embedded e2e/run.sh" # 151
  "e2e faults: consistency on the embedded store (recorded clients for 120 s under kill -9 of kapi; then the planted watch-cache fault must be caught)|export CONSISTENCY_LOAD_BIN=\"\$BIN/kapi-consistency-load\" CONSISTENCY_CHECK_BIN=\"\$BIN/kapi-consistency-check\"; CONSISTENCY_SECONDS=120 CONSISTENCY_PAUSE_MS=100 hack/consistency/run.sh embedded && hack/consistency/run.sh --planted embedded" # 135
  "e2e aggregation (apiregistration.k8s.io: local APIServices, the proxy to upstream's sample-apiserver, merged discovery and OpenAPI, bad input; both backends)|e2e/aggregation.sh" # 92
  "fuzz (every decoder of untrusted bytes, ${KAPI_FUZZ_SECONDS:-7} s per target, kept inputs first)|\"\$BIN/kapi-fuzz\" --seconds ${KAPI_FUZZ_SECONDS:-7} --seed ${KAPI_FUZZ_SEED:-1}" # 91
  "e2e ha (3 kapi replicas on a 3-member etcd cluster: load, kill -9 of a replica and a member, quorum loss)|timeout 600 e2e/ha.sh" # 91
  "e2e faults (etcd restarted under load, a second kapi on one data dir, a full disk, overload)|e2e/faults.sh" # 72
  "e2e dynamic admission (webhooks with a test webhook server, ValidatingAdmissionPolicy; on etcd and on the embedded store)|e2e/admission-dynamic.sh" # 67
  "e2e kubelet proxy (pods/log, exec, attach, port-forward, nodes/pods/services proxy, ephemeral containers through a kubelet stand-in; both backends)|e2e/kubelet-proxy.sh" # 62
  "e2e flowcontrol (API Priority and Fairness: bootstrap objects, classification headers, 429 from a user's level, Dangling, kubectl and the Python client; both backends)|e2e/flowcontrol.sh" # 43
  "e2e controllers (namespace deletion, garbage collection, --controllers, on both backends)|e2e/controllers.sh" # 33
  "e2e node authorization (Node,RBAC and NodeRestriction with kubelet client certificates, on both backends)|e2e/node-authz.sh" # 29
  "e2e clients (the official Python and JavaScript clients, on etcd and on the embedded store)|e2e/clients.sh" # 28
  "e2e mutating admission policy (v1alpha1 MutatingAdmissionPolicy served and enforced; on etcd and on the embedded store)|e2e/mutating-policy.sh" # 27
  "e2e validate (kubectl's client-side validation of a kind: List over /openapi/v2, create --raw, on both backends)|e2e/validate.sh" # 27
  "e2e admission (kapi restarted with admission flags, on etcd)|e2e/admission.sh" # 20
  "e2e rbac (kapi with the default RBAC authorization, service-account and token users, on etcd)|e2e/rbac.sh" # 20
  "e2e envtest (controller-runtime envtest's kube-apiserver start-up replayed against kapi from hack/envtest-assets.sh, on a fresh etcd; then CRD, custom objects, RBAC and tokens through kubectl)|e2e/envtest.sh" # 19
  "e2e auth (service-account and static tokens, TokenReview, impersonation, on etcd)|e2e/auth.sh" # 17
  "e2e audit (kapi with an audit policy and log, on etcd)|e2e/audit.sh" # 15
  "e2e security (file modes, encryption at rest on both backends, refusals over HTTP/2)|e2e/security.sh" # 11
)

step "tests, fuzzers and e2e suites (${KAPI_TEST_JOBS:-4} at once)"
if ! wait "$py_env_pid"; then
  cat "$PY_ENV_LOG" >&2; echo "hack/test.sh: the Python client's environment could not be made" >&2; exit 1
fi
rm -f "$PY_ENV_LOG"
LANE_LOGS="$(mktemp -d /tmp/kapi-test-logs.XXXXXX)"
for i in "${!SUITES[@]}"; do printf '%s\n' "${SUITES[$i]#*|}" >"$LANE_LOGS/$i.cmd"; done
# xargs starts the next entry as soon as a worker is free; each writes its log and result.
# shellcheck disable=SC2016
seq 0 $((${#SUITES[@]} - 1)) | BIN="$BIN" xargs -P "${KAPI_TEST_JOBS:-4}" -I{} bash -c '
  began=$SECONDS
  if bash "$0/{}.cmd" >"$0/{}.log" 2>&1; then status=passed; else status=FAILED; fi
  echo "$((SECONDS - began))|$status" >"$0/{}.result"' "$LANE_LOGS" || true
failed=0
for i in "${!SUITES[@]}"; do
  name=${SUITES[$i]%%|*}
  IFS='|' read -r took status <"$LANE_LOGS/$i.result" || { took=0 status="FAILED (no result)"; }
  printf '\n=== %s\n' "$name"
  cat "$LANE_LOGS/$i.log" 2>/dev/null || true
  printf '=== %d s: %s: %s\n' "$took" "${name%% (*}" "$status"
  timings+="$(printf '%6d s    %s (%s)' "$took" "${name%% (*}" "$status")"$'\n'
  [ "$status" = passed ] || failed=1
done
rm -rf "$LANE_LOGS"
[ "$failed" = 0 ] || { echo "hack/test.sh: a test step failed (above)" >&2; exit 1; }

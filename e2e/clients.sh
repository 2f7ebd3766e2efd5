#!/usr/bin/env bash
# The official client libraries end to end: the Python client (`kubernetes` from PyPI, pinned in
# e2e/python/requirements.txt, in a virtual environment made once per requirements file) and the
# JavaScript client (`@kubernetes/client-node`, pinned in e2e/js/package-lock.json), each against
# kapi on etcd and on the embedded store. Prints PASS/FAIL per case and a final count; exits
# non-zero on any failure.
#
#   KAPI_BIN=path/to/kapi-apiserver e2e/clients.sh   (default: builds the debug binary)
#   E2E_BACKENDS="embedded" e2e/clients.sh           (only one backend)
#   KAPI_E2E_CACHE=dir                              (where the client installs are kept)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=e2e/lib.sh
. "$ROOT/e2e/lib.sh"
# shellcheck source=e2e/js/setup.sh
. "$ROOT/e2e/js/setup.sh"

# run_suite NAME CMD...: runs one client suite, echoing its PASS/FAIL lines and adding them to
# the totals; a suite that fails without naming a case counts as one failure.
run_suite() {
  local name=$1 log status passed failed; shift
  log="$WORK/$name-${LABEL//\//-}.out"
  "$@" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  passed=$(grep -c '^PASS:' "$log")
  failed=$(grep -c '^FAIL:' "$log")
  PASSED=$((PASSED + passed))
  FAILED=$((FAILED + failed))
  if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
    OUT="$(cat "$log")"
    fail "$name suite exited with $status"
  fi
}

e2e_init clients
PY_ENV=$(py_env) || { echo "e2e: could not install the Python client" >&2; exit 1; }
# Installed before any server starts, so a failed install is reported as such.
js_modules >/dev/null || { echo "e2e: could not install the JavaScript client" >&2; exit 1; }

BACKENDS="${E2E_BACKENDS:-etcd embedded}"
case "$BACKENDS" in *etcd*) e2e_start_etcd ;; esac
for backend in $BACKENDS; do
  LABEL="clients/$backend"
  echo "--- $LABEL"
  if [ "$backend" = etcd ]; then start_kapi_on_etcd clients; else start_kapi_embedded clients-embedded; fi
  run_suite python env KUBECONFIG="$KUBECONFIG_FILE" "$PY_ENV/bin/python" "$ROOT/e2e/python/test_client.py" "$LABEL"
  run_suite js run_js_suite "$KUBECONFIG_FILE" "$LABEL"
done
summary

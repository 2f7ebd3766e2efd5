# Sourced by e2e/clients.sh. js_modules: prints a folder holding node_modules with the
# official JavaScript client at the version package-lock.json pins, installed with `npm ci`
# once per lock file under ${KAPI_E2E_CACHE:-/var/tmp/kapi-e2e-cache}.
js_modules() {
  local here lock_hash dir
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  lock_hash=$(sha256sum "$here/package-lock.json" | cut -c1-16)
  dir="${KAPI_E2E_CACHE:-/var/tmp/kapi-e2e-cache}/js-$lock_hash"
  if [ ! -f "$dir/.installed" ]; then
    rm -rf "$dir" && mkdir -p "$dir"
    cp "$here/package.json" "$here/package-lock.json" "$dir/"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2) || return 1
    touch "$dir/.installed"
  fi
  echo "$dir"
}

# run_js_suite KUBECONFIG LABEL: the JavaScript client's cases against the server KUBECONFIG names.
run_js_suite() {
  local here modules
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  modules=$(js_modules) || { echo "FAIL: [$2] npm ci of @kubernetes/client-node"; return 1; }
  KUBECONFIG="$1" KAPI_JS_MODULES="$modules" node "$here/client.test.mjs" "$2"
}

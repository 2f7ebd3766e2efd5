# shellcheck shell=bash
# Helpers for the e2e suite: free ports, polling, and PASS/FAIL bookkeeping.
PASSED=0
FAILED=0
OUT=""

# shellcheck source=hack/lib/servers.sh
. "$(dirname "${BASH_SOURCE[0]}")/../hack/lib/servers.sh"

# k ARGS...: the kubectl under test, on the server under test, with a fresh cache per run.
k() { "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$CACHE" "$@"; }

# The kubectl users run is /usr/bin/kubectl, the Google Cloud SDK's dispatcher: before each
# command it asks the server's /version and then runs the bundled kubectl.1.<minor> of the
# minor the server reports (docs/compatibility.md). That second process and TLS handshake doubled
# kubectl's CPU, a third of the suites' CPU. So a suite lets the dispatcher choose once, on the
# server under test, and runs the binary it chose from then on.
DISPATCHER=/usr/bin/kubectl

# dispatched_kubectl KUBECONFIG: the kubectl the dispatcher runs for that server: the path of the
# bundled binary whose version it reports, or the dispatcher itself when it is a plain kubectl.
dispatched_kubectl() {
  local minor chosen
  minor=$("$DISPATCHER" --kubeconfig "$1" version -o json 2>/dev/null \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["clientVersion"]["minor"].rstrip("+"))' 2>/dev/null)
  chosen="$(dirname "$(readlink -f "$DISPATCHER")")/kubectl.1.$minor"
  if [ -n "$minor" ] && [ -x "$chosen" ]; then echo "$chosen"; else echo "$DISPATCHER"; fi
}

# use_dispatched_kubectl: while KUBECTL is the dispatcher, makes it the binary the dispatcher
# chooses for the server of KUBECONFIG_FILE.
use_dispatched_kubectl() {
  if [ "$KUBECTL" = "$DISPATCHER" ]; then KUBECTL=$(dispatched_kubectl "$KUBECONFIG_FILE"); fi
}

pass() { PASSED=$((PASSED + 1)); echo "PASS: [$LABEL] $1"; }
fail() {
  FAILED=$((FAILED + 1)); echo "FAIL: [$LABEL] $1"
  printf '%s\n' "$OUT" | tail -n 15 | sed 's/^/      | /'
}

# run_cmd CMD...: runs CMD, capturing stdout+stderr into OUT; returns its status.
run_cmd() { OUT="$("$@" 2>&1)"; }

# expect_ok NAME CMD...: passes when CMD succeeds.
expect_ok() { local n=$1; shift; if run_cmd "$@"; then pass "$n"; else fail "$n"; fi; }

# expect_out NAME REGEX CMD...: passes when CMD succeeds and its output matches REGEX (grep -E).
expect_out() {
  local n=$1 re=$2; shift 2
  if run_cmd "$@" && grep -Eq -- "$re" <<<"$OUT"; then pass "$n"; else fail "$n (want /$re/)"; fi
}

# expect_fail NAME TEXT CMD...: passes when CMD fails and its output contains TEXT literally.
expect_fail() {
  local n=$1 text=$2; shift 2
  if ! run_cmd "$@" && grep -Fq -- "$text" <<<"$OUT"; then pass "$n"; else fail "$n (want failure with: $text)"; fi
}

# expect_eq NAME WANT CMD...: passes when CMD succeeds and prints exactly WANT.
expect_eq() {
  local n=$1 want=$2; shift 2
  if run_cmd "$@" && [ "$OUT" = "$want" ]; then pass "$n"; else fail "$n (want: $want)"; fi
}

summary() {
  echo
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}

# e2e_init LABEL: the set-up shared by the standalone e2e scripts: the kapi binary (built unless
# KAPI_BIN is given), a work directory removed at exit (kept with E2E_KEEP=1), and every process
# the script started stopped at exit.
e2e_init() {
  LABEL=$1
  if [ -z "${KAPI_BIN:-}" ]; then
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/kapi-target}"
    cargo build -q -p kapi-apiserver || { echo "e2e: build failed" >&2; exit 1; }
    KAPI_BIN="$CARGO_TARGET_DIR/debug/kapi-apiserver"
  fi
  KUBECTL=$DISPATCHER
  WORK="$(mktemp -d "/tmp/kapi-e2e-$LABEL.XXXXXX")"
  CACHE="$WORK/cache"
  PIDS=()
  KAPI_PID=""
  trap e2e_cleanup EXIT INT TERM
}

e2e_cleanup() {
  [ -n "$KAPI_PID" ] && kill "$KAPI_PID" 2>/dev/null
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  if [ "${E2E_KEEP:-}" = "" ]; then rm -rf "$WORK"; else echo "e2e: kept $WORK"; fi
}

# e2e_start_etcd: a fresh etcd on free loopback ports, data under $WORK; sets ETCD_PORT.
e2e_start_etcd() {
  ETCD_PORT=$(free_port); local peer; peer=$(free_port)
  etcd --name "$LABEL" --data-dir "$WORK/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "$LABEL=http://127.0.0.1:$peer" >"$WORK/etcd.log" 2>&1 &
  PIDS+=($!)
  wait_until 30 curl -sf -o /dev/null "http://127.0.0.1:$ETCD_PORT/health" || { echo "e2e: etcd did not start"; exit 1; }
}

# start_kapi_process NAME FLAGS...: (re)starts kapi with FLAGS; a NAME keeps its data dir
# ($WORK/kapi-NAME) across restarts; stdout goes to $WORK/kapi-NAME.out and the log to
# $WORK/kapi-NAME.log (both appended). The port is E2E_KAPI_PORT when set, else a free one.
# Returns once kapi is ready. Sets KAPI_PID, PORT, KUBECONFIG_FILE and CA.
start_kapi_process() {
  local name=$1; shift
  [ -n "$KAPI_PID" ] && { kill "$KAPI_PID" 2>/dev/null; wait "$KAPI_PID" 2>/dev/null; }
  PORT="${E2E_KAPI_PORT:-$(free_port)}"
  local dir="$WORK/kapi-$name"
  "$KAPI_BIN" --secure-port "$PORT" --data-dir "$dir" "$@" \
    >>"$WORK/kapi-$name.out" 2>>"$WORK/kapi-$name.log" &
  KAPI_PID=$!
  KUBECONFIG_FILE="$dir/admin.kubeconfig"
  CA="$dir/pki/ca.crt"
  wait_until 30 curl -s -o /dev/null --cacert "$CA" "https://127.0.0.1:$PORT/livez" \
    || { echo "e2e: kapi ($name) not serving"; tail -20 "$WORK/kapi-$name.log"; exit 1; }
  wait_until 30 k get --raw /readyz >/dev/null 2>&1 \
    || { echo "e2e: kapi ($name) not ready"; tail -20 "$WORK/kapi-$name.log"; exit 1; }
  use_dispatched_kubectl
}

# start_kapi_on_etcd NAME FLAGS...: start_kapi_process on the script's etcd, under the key
# prefix /registry-NAME (kept across restarts).
start_kapi_on_etcd() {
  local name=$1; shift
  start_kapi_process "$name" --etcd-servers "http://127.0.0.1:$ETCD_PORT" --etcd-prefix "/registry-$name" "$@"
}

# start_kapi_embedded NAME FLAGS...: start_kapi_process on kapi's embedded store in its data dir.
start_kapi_embedded() { start_kapi_process "$@"; }

# py_env: prints a virtual environment holding the pinned Python client
# (e2e/python/requirements.txt) under ${KAPI_E2E_CACHE:-/var/tmp/kapi-e2e-cache}, made once per
# requirements file (a half-made one is made again). Needs ROOT.
py_env() {
  local req="$ROOT/e2e/python/requirements.txt" cache="${KAPI_E2E_CACHE:-/var/tmp/kapi-e2e-cache}" hash dir
  hash=$(sha256sum "$req" | cut -c1-16)
  dir="$cache/py-$hash"
  if [ ! -f "$dir/.installed" ]; then
    rm -rf "$dir" && mkdir -p "$cache"
    python3 -m venv "$dir" >&2 || return 1
    "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$req" >&2 || return 1
    touch "$dir/.installed"
  fi
  echo "$dir"
}

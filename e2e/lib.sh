# Helpers for the e2e suite: free ports, polling, and PASS/FAIL bookkeeping.
PASSED=0
FAILED=0
OUT=""

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# wait_until SECONDS CMD...: runs CMD until it succeeds or the deadline passes.
wait_until() {
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    [ "$SECONDS" -ge "$deadline" ] && return 1
    sleep 0.2
  done
}

# k ARGS...: the kubectl under test, on the server under test, with a fresh cache per run.
k() { "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$CACHE" "$@"; }

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

#!/usr/bin/env bash
# Runs the README's first command, `hack/local-up.sh`, in the background with its data under DIR
# and a free port, waits until the kubeconfig it writes lets kubectl list namespaces, then stops
# it. Used by .ci/run to prove the command works on a fresh machine.
#   hack/ci-local-up-smoke.sh DIR
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: hack/ci-local-up-smoke.sh DIR}
mkdir -p "$dir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
log="$dir/local-up.log"

setsid hack/local-up.sh --data-dir "$dir/data" --secure-port "$port" >"$log" 2>&1 &
pid=$!
stop() { kill -- "-$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
trap stop EXIT

# The release build runs first: allow it the time a cold build takes on two cores.
deadline=$((SECONDS + 2400))
until grep -q "try: kubectl --kubeconfig" "$log" 2>/dev/null; do
  if ! kill -0 "$pid" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
    echo "local-up smoke: the server did not start" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
  sleep 1
done
kubeconfig="$dir/data/admin.kubeconfig"
out=$(kubectl --kubeconfig "$kubeconfig" --cache-dir "$dir/kube-cache" get namespaces -o name)
echo "$out"
grep -qx "namespace/default" <<<"$out" || { echo "local-up smoke: no default namespace" >&2; exit 1; }
grep -q "try: kubectl --kubeconfig $kubeconfig get ns" "$log" \
  || { echo "local-up smoke: the server did not print how to use kubectl" >&2; exit 1; }
echo "local-up smoke: hack/local-up.sh serves kubectl with $kubeconfig"

#!/usr/bin/env bash
# API Priority and Fairness under a flood, kapi (embedded store and etcd) beside upstream's
# kube-apiserver v1.28.7 (on its own fresh etcd) in the same run. Each server is started with
# the same static token file and --authorization-mode=AlwaysAllow (kapi with --controllers=-*:
# kube-apiserver runs no controllers either), then `kapi-bench-apiserver --fairness` (see
# hack/bench/apiserver/src/fairness.rs) runs against it: one user (flooder) LISTs 1,000
# ConfigMaps at 64 concurrent requests and creates ConfigMaps in a loop while a second (reader)
# GETs one ConfigMap and a third (system:node:bench-node, group system:nodes) renews its Lease
# every second; each user's rate and p50/p99 latency alone and during the flood. None of the
# three is in system:masters (exempt from APF). Prints one table for all servers, the ratios
# the targets are about, and the CPU per phase.
#
#   hack/bench/fairness.sh <kapi-apiserver release binary>
#   BENCH_PHASE (s, default 20): length of each phase; BENCH_SETTLE (s, default 65): the flood
#   starts no earlier than this after the set-up (the servers count stored objects once a
#   minute, and a LIST's APF width comes from that count); BENCH_SERVERS (default
#   "kapi-embedded kapi-etcd reference"); BENCH_DRIVER (default: kapi-bench-apiserver beside
#   the binary); BENCH_SERVER_ARGS: flags given to every server as well, e.g.
#   "--max-requests-inflight=20 --max-mutating-requests-inflight=10" (APF's seats are the sum of
#   the two). kube-apiserver comes from KAPI_UPSTREAM_BIN, else ../shared/upstream.
# Everything listens on 127.0.0.1 only.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
bin=${1:?usage: hack/bench/fairness.sh <kapi-apiserver binary>}
bin=$(realpath "$bin")
driver=${BENCH_DRIVER:-$(dirname "$bin")/kapi-bench-apiserver}
[ -x "$driver" ] || { echo "fairness: no $driver (cargo build --release -p kapi-bench-apiserver)" >&2; exit 2; }
phase=${BENCH_PHASE:-20} settle=${BENCH_SETTLE:-65}
read -r -a server_args <<<"${BENCH_SERVER_ARGS:-}"
ETCD=${ETCD:-$(command -v etcd || echo /usr/bin/etcd)}

# shellcheck source=hack/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_servers fairness
# shellcheck source=hack/reference-pki.sh
. "$ROOT/hack/reference-pki.sh"
upstream_or_kapi_only fairness
bench_dir fairness
token() { python3 -c 'import secrets; print(secrets.token_hex(16))'; }

tokens="$base/tokens.csv"
cat >"$tokens" <<EOF
$(token),flooder,uid-flooder
$(token),reader,uid-reader
$(token),system:node:bench-node,uid-bench-node,"system:nodes"
EOF

for server in $servers; do
  dir="$base/$server"; mkdir -p "$dir"
  port=$(free_port)
  etcd_url=""
  if [ "$server" != kapi-embedded ]; then
    start_etcd "$dir"
    etcd_url=$ETCD_URL
  fi
  if [ "$server" = reference ]; then
    # As hack/local-cluster.sh (CLUSTER_APISERVER=reference).
    P="$dir/pki"
    kubeconfig="$dir/admin.kubeconfig"
    reference_pki "$P" "https://127.0.0.1:$port" "$kubeconfig"
    reference_apiserver "$P" "$etcd_url" "$port" --token-auth-file="$tokens" \
      --authorization-mode=AlwaysAllow "${server_args[@]}" >"$dir/server.log" 2>&1 &
  else
    kubeconfig="$dir/data/admin.kubeconfig"
    args=(--data-dir "$dir/data" --secure-port "$port" --bind-address 127.0.0.1 --controllers=-*
      --token-auth-file "$tokens" --authorization-mode AlwaysAllow)
    [ -n "$etcd_url" ] && args+=(--etcd-servers "$etcd_url")
    "$bin" "${args[@]}" "${server_args[@]}" >"$dir/server.log" 2>&1 &
  fi
  server_pid=$!
  # As admin: kube-apiserver turns anonymous requests off under AlwaysAllow.
  ready() { [ -f "$kubeconfig" ] && kubectl --kubeconfig "$kubeconfig" get --raw /readyz >/dev/null 2>&1; }
  for _ in $(seq 1 300); do
    ready && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.2
  done
  ready || { echo "fairness: $server did not become ready:" >&2; tail -20 "$dir/server.log" >&2; exit 1; }
  pids=(--server-pid "$server_pid")
  [ -n "$etcd_pid" ] && pids+=(--etcd-pid "$etcd_pid")
  "$driver" --fairness "$kubeconfig" --tokens "$tokens" --label "$server" \
    --phase-seconds "$phase" --settle-seconds "$settle" "${pids[@]}" | tee -a "$rows"
  stop_all
done

echo
echo "fairness: $(date -u +%Y-%m-%d), phases of $phase s, $(nproc) cores, server flags: ${BENCH_SERVER_ARGS:-(defaults)}"
python3 - "$rows" <<'PY'
import sys
rows, cpu = [], []
for line in open(sys.argv[1]):
    c = [x.strip() for x in line.strip().strip('|').split('|')]
    if len(c) < 9 or c[0] == 'server' or c[0].startswith('---'):
        continue
    (cpu if c[2] == 'CPU' else rows).append(c)
servers = list(dict.fromkeys(r[0] for r in rows))
by = {(r[0], r[2], r[1]): r for r in rows}
users = list(dict.fromkeys(r[2] for r in rows))
print()
print("| server | user | phase | 2xx/s | p50 ms | p99 ms | not 2xx | FlowSchema / priority level |")
print("|---|---|---|---|---|---|---|---|")
for s in servers:
    for u in users:
        for p in ("alone", "flood"):
            r = by.get((s, u, p))
            if r:
                print(f"| {s} | {u} | {p} | {r[4]} | {r[5]} | {r[6]} | {r[7]} | {r[8]} |")
def f(s, u, p, i):
    r = by.get((s, u, p))
    try:
        return float(r[i]) if r else None
    except ValueError:
        return None
def ratio(a, b):
    return f"{a / b:.2f}×" if a is not None and b else "–"
ref = "reference" if "reference" in servers else None
print()
print("| server | reader p99 flood/alone | node p99 flood/alone | Lease renewals not 2xx | flooder LIST/s (× reference) | flooder POST/s (× reference) |")
print("|---|---|---|---|---|---|")
for s in servers:
    node_bad = ", ".join(x for x in (by[(s, "node Lease PUT", p)][7] for p in ("alone", "flood") if (s, "node Lease PUT", p) in by) if x != "0") or "0"
    cells = [s, ratio(f(s, "reader GET", "flood", 6), f(s, "reader GET", "alone", 6)),
             ratio(f(s, "node Lease PUT", "flood", 6), f(s, "node Lease PUT", "alone", 6)), node_bad]
    for u in ("flooder LIST 1,000", "flooder POST"):
        v = f(s, u, "flood", 4)
        rv = f(ref, u, "flood", 4) if ref else None
        cells.append(f"{v:.1f} ({ratio(v, rv)})" if v is not None else "–")
    print("| " + " | ".join(cells) + " |")
if cpu:
    print()
    print("| server | phase | server CPU | etcd CPU | benchmark CPU | machine busy |")
    print("|---|---|---|---|---|---|")
    for c in cpu:
        print(f"| {c[0]} | {c[1]} | {c[3].split()[-1]} | {c[4].split()[-1]} | {c[5].split()[-1]} | {c[6].split()[-1]} |")
PY

#!/usr/bin/env bash
# What a cluster of hollow nodes costs its API server: hack/local-cluster.sh N (upstream's
# kube-scheduler, kube-controller-manager and N hollow kubelets) on kapi (embedded store and
# etcd) and on upstream's kube-apiserver (etcd), side by side for each N. Once every node is
# Ready and the cluster has settled, it measures over a window:
#   - the API server's CPU (and etcd's, where there is one) from /proc/<pid>/stat,
#   - the heartbeats it served: node Lease updates (PUT leases) and node status patches
#     (PATCH nodes/status), from apiserver_request_total on /metrics,
#   - the server's RSS, the whole machine's CPU, and how many nodes are still Ready at the end.
# Prints one line per (server, N) and the server CPU per heartbeat. "Nodes per 2 cores" is the
# server-side figure, 2 cores divided by the server's (+ etcd's) CPU per node: the hollow kubelets
# themselves run on the same machine here, so the machine-wide CPU is printed beside it.
#
#   hack/bench/cluster.sh <kapi-apiserver release binary> [N ...]   (default N: 10 40)
#   BENCH_SETTLE (s, default 30), BENCH_WINDOW (s, default 60), BENCH_SERVERS (default
#   "kapi-embedded kapi-etcd reference"); upstream binaries as hack/local-cluster.sh finds them.
set -euo pipefail
bin=${1:?usage: hack/bench/cluster.sh <kapi-apiserver binary> [N ...]}
bin=$(realpath "$bin")
shift
sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(10 40)
settle=${BENCH_SETTLE:-30} window=${BENCH_WINDOW:-60}
ETCD=${ETCD:-$(command -v etcd || echo /usr/bin/etcd)}
HZ=$(getconf CLK_TCK)
# shellcheck source=hack/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_servers cluster
bench_dir cluster
machine_busy() { awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat; }
heartbeats() {
  kubectl --kubeconfig "$1" get --raw /metrics 2>/dev/null | awk '
    /^apiserver_request_total\{/ {
      if ($0 ~ /resource="leases"/ && $0 ~ /verb="PUT"/) n += $NF
      if ($0 ~ /resource="nodes"/ && $0 ~ /subresource="status"/ && $0 ~ /verb="PATCH"/) n += $NF
    }
    END { printf "%d\n", n }'
}

printf '%-14s %5s %6s %9s %8s %8s %11s %10s %9s %12s\n' server nodes ready "server%" "etcd%" "hb/s" "ms/hb" "RSS MB" "machine%" "nodes/2cores"
for n in "${sizes[@]}"; do
  for server in $servers; do
    dir="$base/$server-$n"; mkdir -p "$dir"
    start_server_cluster "$server" "$dir" "$n" "$bin" || true
    kubeconfig="$dir/cluster/data/admin.kubeconfig"
    server_pid=$(pid_of "$dir" kapi)
    sleep "$settle"
    c0=$(cpu_ticks "$server_pid"); e0=0; [ -n "$etcd_pid" ] && e0=$(cpu_ticks "$etcd_pid")
    h0=$(heartbeats "$kubeconfig"); read -r busy0 all0 < <(machine_busy)
    sleep "$window"
    c1=$(cpu_ticks "$server_pid"); e1=0; [ -n "$etcd_pid" ] && e1=$(cpu_ticks "$etcd_pid")
    h1=$(heartbeats "$kubeconfig"); read -r busy1 all1 < <(machine_busy)
    ready=$(kubectl --kubeconfig "$kubeconfig" get nodes --no-headers 2>/dev/null | grep -c ' Ready ' || true)
    rss=$(awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' "/proc/$server_pid/status" 2>/dev/null || echo 0)
    python3 - "$server" "$n" "$ready" "$((c1 - c0))" "$((e1 - e0))" "$((h1 - h0))" "$HZ" "$window" "$rss" \
      "$((busy1 - busy0))" "$((all1 - all0))" <<'PY'
import sys
server, n, ready, cpu, etcd, hb, hz, window, rss, busy, total = sys.argv[1:]
n, ready, cpu, etcd, hb, hz, window, busy, total = map(int, (n, ready, cpu, etcd, hb, hz, window, busy, total))
server_s, etcd_s = cpu / hz, etcd / hz
per_node = (server_s + etcd_s) / window / n if n else 0
print(f"{server:<14} {n:5d} {ready:6d} {100 * server_s / window:8.1f}% {100 * etcd_s / window:7.1f}% "
      f"{hb / window:8.2f} {1000 * server_s / hb if hb else 0:11.2f} {rss:>10} "
      f"{100 * busy / total if total else 0:8.1f}% {2 / per_node if per_node else 0:12.0f}")
PY
    stop_all
  done
done

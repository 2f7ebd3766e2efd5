# shellcheck shell=bash
# Sourced by the benchmark scripts that start servers side by side (cluster.sh, cluster-load.sh,
# data-scale.sh, fairness.sh, list-stall.sh): the run's directory, the upstream binaries, a
# fresh etcd, a server (kapi or the reference), an upstream-components cluster from
# hack/local-cluster.sh, and what they read from /proc. Each caller sets ETCD (the etcd binary)
# first; stop_all stops what these started (and the caller's server_pid, if it set one).

# shellcheck source=hack/lib/servers.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/servers.sh"

cluster_pid="" etcd_pid="" server_pid=""

# bench_dir NAME: the run's directory, base (/var/tmp/kapi-bench-NAME.*), with rows (its
# rows.txt, empty); on exit stop_all, and the directory is removed unless BENCH_KEEP=1.
bench_dir() {
  bench_name=$1
  base=$(mktemp -d "/var/tmp/kapi-bench-$1.XXXXXX")
  rows="$base/rows.txt"; : >"$rows"
  trap bench_exit EXIT
}
bench_exit() {
  stop_all
  if [ "${BENCH_KEEP:-0}" = 1 ]; then echo "$bench_name: kept $base"; else rm -rf "$base"; fi
}

# bench_servers NAME: sets servers from BENCH_SERVERS (default "kapi-embedded kapi-etcd
# reference"). Only `reference` runs upstream's kube-apiserver; any other name would otherwise
# fall through to a kapi server and be reported under the wrong label, so an unknown name stops
# the run.
bench_servers() {
  servers=${BENCH_SERVERS:-kapi-embedded kapi-etcd reference}
  local s
  for s in $servers; do
    case $s in
      kapi-embedded | kapi-etcd | reference) ;;
      *) echo "$1: unknown server '$s' in BENCH_SERVERS (kapi-embedded, kapi-etcd or reference)" >&2; exit 2 ;;
    esac
  done
}

# upstream_or_kapi_only NAME: sets UP to the folder of upstream's binaries (upstream_bin);
# without a kube-apiserver there, says so in one line and drops reference from the caller's
# servers.
upstream_or_kapi_only() {
  UP=$(upstream_bin 2>/dev/null || true)
  if [ -z "$UP" ] || [ ! -x "$UP/kube-apiserver" ]; then
    echo "$1: no upstream kube-apiserver (set KAPI_UPSTREAM_BIN); running kapi only"
    servers=$(echo "$servers" | tr ' ' '\n' | { grep -vx reference || true; } | tr '\n' ' ')
  fi
}

# start_etcd DIR: a single-member etcd with its data and log under DIR, on free ports, with the
# caller's ETCD_EXTRA_ARGS (words) if set; sets etcd_pid and ETCD_URL and waits until it
# answers /health.
start_etcd() {
  local dir=$1 cport pport extra
  cport=$(free_port); pport=$(free_port)
  read -r -a extra <<<"${ETCD_EXTRA_ARGS:-}"
  "$ETCD" "${extra[@]}" --data-dir "$dir/etcd" --listen-client-urls "http://127.0.0.1:$cport" \
    --advertise-client-urls "http://127.0.0.1:$cport" --listen-peer-urls "http://127.0.0.1:$pport" \
    --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
    --initial-cluster "default=http://127.0.0.1:$pport" >"$dir/etcd.log" 2>&1 &
  etcd_pid=$!
  ETCD_URL="http://127.0.0.1:$cport"
  etcd_healthy() { curl -s "$ETCD_URL/health" 2>/dev/null | grep -q '"health":"true"'; }
  wait_until 30 etcd_healthy || { echo "bench: etcd did not start:" >&2; tail -20 "$dir/etcd.log" >&2; return 1; }
}

# etcd_work URL: what a server asked of the etcd at URL so far, as key=value words from its
# /metrics: the requests by gRPC method (Range, Txn, Put, DeleteRange, Compact, LeaseGrant;
# `etcd_requests_<method>`), the keys put and their bytes (puts inside transactions count),
# the watch events it sent, the bytes received and sent over gRPC, the backend's size, and
# how etcd fared: applies over 100 ms, time spent compacting, the mean WAL fsync and backend
# commit.
# Two servers doing the same cluster's work are compared by these, beside etcd's CPU.
etcd_work() {
  curl -s "$1/metrics" 2>/dev/null | python3 -c '
import re, sys
metric, by_method = {}, {}
for line in sys.stdin:
    if line.startswith("#"):
        continue
    name, _, value = line.rpartition(" ")
    method = re.search(r"^grpc_server_handled_total.*grpc_method=.([A-Za-z]+)", name)
    if method:
        by_method[method[1]] = by_method.get(method[1], 0) + float(value)
    else:
        metric[name] = float(value)
count = lambda name: "%.0f" % metric.get(name, 0)
mb = lambda name: "%.1f" % (metric.get(name, 0) / 1e6)
words = ["etcd_puts=" + count("etcd_debugging_mvcc_put_total"),
         "etcd_put_mb=" + mb("etcd_debugging_mvcc_total_put_size_in_bytes"),
         "etcd_watch_events=" + count("etcd_debugging_mvcc_events_total"),
         "etcd_rx_mb=" + mb("etcd_network_client_grpc_received_bytes_total"),
         "etcd_tx_mb=" + mb("etcd_network_client_grpc_sent_bytes_total"),
         "etcd_db_mb=" + mb("etcd_mvcc_db_total_size_in_bytes"),
         "etcd_slow_applies=" + count("etcd_server_slow_apply_total"),
         "etcd_compaction_s=%.1f" % (metric.get("etcd_debugging_mvcc_db_compaction_total_duration_milliseconds_sum", 0) / 1e3)]
mean_ms = lambda name: "%.2f" % (1e3 * metric.get(name + "_sum", 0) / max(metric.get(name + "_count", 0), 1))
words += ["etcd_fsync_ms=" + mean_ms("etcd_disk_wal_fsync_duration_seconds"),
          "etcd_commit_ms=" + mean_ms("etcd_disk_backend_commit_duration_seconds")]
for method in ("Range", "Txn", "Put", "DeleteRange", "Compact", "LeaseGrant"):
    words.append("etcd_requests_%s=%.0f" % (method, by_method.get(method, 0)))
print(" ".join(words))
'
}

# start_server SERVER DIR PORT ETCD_URL: starts kapi (the caller's $bin, its data in DIR/data,
# on etcd when ETCD_URL is set) or, for SERVER=reference, kube-apiserver with the certificates
# reference_pki made in DIR/pki (the caller sources hack/reference-pki.sh), in the background,
# its output appended to DIR/server.log; sets server_pid and started_ms (the start, in ms since
# the epoch).
start_server() {
  local server=$1 dir=$2 port=$3 etcd_url=$4
  started_ms=$(date +%s%3N)
  if [ "$server" = reference ]; then
    reference_apiserver "$dir/pki" "$etcd_url" "$port" --authorization-mode=Node,RBAC >>"$dir/server.log" 2>&1 &
  else
    local args=(--data-dir "$dir/data" --secure-port "$port" --bind-address 127.0.0.1)
    [ -n "$etcd_url" ] && args+=(--etcd-servers "$etcd_url")
    "$bin" "${args[@]}" >>"$dir/server.log" 2>&1 &
  fi
  server_pid=$!
}

# start_ready_server NAME SERVER DIR: start_server for one of the benchmarks' servers on a free
# port (kapi-embedded, kapi-etcd or reference; the last two on a fresh etcd, the reference with
# reference_pki's certificates) and waits until its /readyz answers (NAME prefixes the failure);
# sets port, etcd_url and kubeconfig (the admin's), for a restart with start_server.
start_ready_server() {
  local name=$1 server=$2 dir=$3
  port=$(free_port) etcd_url=""
  if [ "$server" != kapi-embedded ]; then start_etcd "$dir" || exit 1; etcd_url=$ETCD_URL; fi
  if [ "$server" = reference ]; then
    kubeconfig="$dir/admin.kubeconfig"
    reference_pki "$dir/pki" "https://127.0.0.1:$port" "$kubeconfig"
  else
    kubeconfig="$dir/data/admin.kubeconfig"
  fi
  start_server "$server" "$dir" "$port" "$etcd_url"
  ready() { [ -f "$kubeconfig" ] && kubectl --kubeconfig "$kubeconfig" get --raw /readyz >/dev/null 2>&1; }
  wait_until 120 ready || { echo "$name: $server did not become ready:" >&2; tail -20 "$dir/server.log" >&2; exit 1; }
}

# start_local_cluster DIR N [VAR=VALUE ...]: hack/local-cluster.sh N (the server, upstream's
# kube-scheduler and kube-controller-manager, N hollow kubelets) in a session of its own, with
# its state under DIR/cluster and its output in DIR/local-cluster.out; sets cluster_pid and
# returns once it says it is running (1 if it ended first).
start_local_cluster() {
  local dir=$1 n=$2; shift 2
  setsid env CLUSTER_DIR="$dir/cluster" "$@" "$(dirname "${BASH_SOURCE[0]}")/../local-cluster.sh" "$n" \
    >"$dir/local-cluster.out" 2>&1 &
  cluster_pid=$!
  cluster_running() {
    grep -q "running; Ctrl-C" "$dir/local-cluster.out" 2>/dev/null || ! kill -0 "$cluster_pid" 2>/dev/null
  }
  wait_until 300 cluster_running
  grep -q "running; Ctrl-C" "$dir/local-cluster.out"
}

# start_server_cluster SERVER DIR N KAPI_BIN: start_local_cluster for one of the benchmarks'
# servers: kapi-embedded (kapi on its embedded store), kapi-etcd (kapi on a fresh etcd) or
# reference (upstream's kube-apiserver on a fresh etcd).
start_server_cluster() {
  local server=$1 dir=$2 n=$3 env_args=(KAPI_BIN="$4")
  if [ "$server" != kapi-embedded ]; then
    start_etcd "$dir" || exit 1
    env_args+=(KAPI_ETCD="$ETCD_URL")
    [ "$server" = reference ] && env_args+=(CLUSTER_APISERVER=reference)
  fi
  start_local_cluster "$dir" "$n" "${env_args[@]}"
}

# pid_of DIR NAME: the pid local-cluster.sh wrote for component NAME (kapi, kube-scheduler,
# kube-controller-manager, hollow-<i>) under DIR/cluster; 0 if none.
pid_of() { cat "$1/cluster/pids/$2" 2>/dev/null || echo 0; }

# stop_all: stops the local cluster (its whole session), the server and etcd, if started.
stop_all() {
  [ -n "$cluster_pid" ] && { kill -TERM -- "-$cluster_pid" 2>/dev/null || true; wait "$cluster_pid" 2>/dev/null || true; }
  [ -n "$server_pid" ] && { kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; }
  [ -n "$etcd_pid" ] && { kill "$etcd_pid" 2>/dev/null || true; wait "$etcd_pid" 2>/dev/null || true; }
  cluster_pid="" server_pid="" etcd_pid=""
}

# cpu_ticks PID: the process's user + system CPU so far, in clock ticks (getconf CLK_TCK).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# peak_mb PID: the process's peak RSS (VmHWM), in MB.
peak_mb() { awk '/^VmHWM:/ {printf "%.0f", $2 / 1024}' "/proc/$1/status" 2>/dev/null || echo 0; }

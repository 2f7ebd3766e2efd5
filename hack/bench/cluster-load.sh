#!/usr/bin/env bash
# A cluster's API load against SIG Scalability's SLOs, kapi (embedded store and etcd) beside
# upstream's kube-apiserver v1.28.7 (on its own fresh etcd). For each server and each N:
# hack/local-cluster.sh 0 starts the server with upstream's real kube-scheduler and
# kube-controller-manager (their own certificate identities, Node,RBAC authorization; no
# hollow kubelets), then `kapi-bench-apiserver --cluster-load` (see
# hack/bench/apiserver/src/cluster/mod.rs) simulates N nodes in one process (kwok-style: Node,
# Lease renewals every 10 s, status every 60 s, a pod watch per node that marks bound pods
# Running and finishes their deletion) and runs ClusterLoader2's "load" shape (Deployments of
# 5/30/250 pods with a Service, ConfigMap and Secret each: create, scale, delete at a pod rate)
# while the scheduler binds and the controller manager runs Deployments → ReplicaSets → Pods.
# Prints the generator's own output (per-class latencies, server-side histogram, pod start-up,
# watch order) and one table line per (server, N): each SLO's worst p99 (client side), pod
# start-up p50/p99, out-of-order watch events, and the server's (and etcd's) CPU seconds and
# peak RSS (VmHWM) over the run, from /proc; for a server on etcd, a second table of what it
# asked of etcd and how etcd fared (lib.sh's etcd_work: requests by method, keys and bytes put,
# watch events, bytes each way, the backend's size, slow applies, compaction, fsync and commit).
#
#   hack/bench/cluster-load.sh <kapi-apiserver release binary> [N ...]   (default N: 20)
#   BENCH_PODS_PER_NODE (default 3; ClusterLoader2's is 30), BENCH_POD_CHURN (pods/s, default
#   20), BENCH_SERVERS (default "kapi-embedded kapi-etcd reference"; reference is upstream's
#   kube-apiserver, and any other name stops the run), BENCH_DRIVER (default:
#   kapi-bench-apiserver beside the binary), BENCH_LOAD_ARGS (more flags for the generator),
#   BENCH_SCHEDULER=simulated runs no kube-scheduler: the generator binds the pods itself
#   (`--simulate-scheduler`: the scheduler's node and pod watches, a Binding and an event per
#   pod, without its per-pod CPU; the "scheduler + KCM" CPU is then the controller manager's),
#   BENCH_KEEP=1 keeps the run's directory (logs of every component, the server's /metrics at
#   the end in server-metrics.txt), BENCH_PROFILE=DIR
#   samples the server in windows of 15 s (`perf record -F 49`) every BENCH_PROFILE_EVERY
#   seconds (default 300; the first 60 s in) and writes each window's top symbols by self time
#   to DIR/<server>-<N>-<seconds into the run>.txt (one `perf record` over a whole run kept a
#   core of this machine busy by itself); BENCH_PROFILE_CALLERS=1 also records each window's
#   call stacks (`--call-graph dwarf`) and keeps its perf.data beside the .txt, for
#   `perf report -i <file> --no-children --stdio -S <symbol> -G` after the run (callers of a
#   hot symbol; unwinding is left until then so the run is not disturbed); upstream binaries as
#   hack/local-cluster.sh finds them (KAPI_UPSTREAM_BIN, else ../shared/upstream).
# The scheduler serves its /metrics on loopback; at the end of each run the script prints its own
# view of scheduling (scheduler_pod_scheduling_duration_seconds: from the pod's first entering
# its queue to bound; the time of each attempt; attempts by result; its costliest extension
# points per pod) beside the generator's start-up split, and keeps the metrics
# (scheduler-metrics.txt). On etcd it prints the server's mean etcd round trips too.
# Everything listens on and dials 127.0.0.1 only; simulated nodes have 127.0.0.0/8 addresses and
# pods 10.128.0.0/9 ones (Endpoints refuse loopback addresses), which nothing connects to.
set -euo pipefail
bin=${1:?usage: hack/bench/cluster-load.sh <kapi-apiserver binary> [N ...]}
bin=$(realpath "$bin")
shift
sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(20)
driver=${BENCH_DRIVER:-$(dirname "$bin")/kapi-bench-apiserver}
[ -x "$driver" ] || { echo "cluster-load: no $driver (cargo build --release -p kapi-bench-apiserver)" >&2; exit 2; }
ppn=${BENCH_PODS_PER_NODE:-3} churn=${BENCH_POD_CHURN:-20}
read -r -a load_args <<<"${BENCH_LOAD_ARGS:-}"
scheduler_words="upstream kube-scheduler and kube-controller-manager v1.28.7"
case "${BENCH_SCHEDULER:-upstream}" in
  upstream) ;;
  simulated)
    export CLUSTER_SCHEDULER=none; load_args+=(--simulate-scheduler)
    scheduler_words="scheduling simulated by the generator, upstream kube-controller-manager v1.28.7" ;;
  *) echo "cluster-load: BENCH_SCHEDULER is upstream or simulated" >&2; exit 2 ;;
esac
ETCD=${ETCD:-$(command -v etcd || echo /usr/bin/etcd)}
HZ=$(getconf CLK_TCK)
# shellcheck source=hack/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_servers cluster-load
bench_dir cluster-load

# flat_profile X.perf.data: its top symbols by self time in X.txt (`-g none`: a window recorded
# with call stacks is reported flat, without unwinding them).
flat_profile() {
  perf report -i "$1" --no-children --sort dso,symbol --stdio -g none 2>/dev/null \
    | grep -E '^ +[0-9.]+%' | head -60 >"${1%.perf.data}.txt" || true
}

# profile_windows PID PREFIX EVERY: a 15 s `perf record -F 49` of PID 60 s in and then every
# EVERY seconds, each window's top symbols by self time in PREFIX-<seconds into the run>.txt.
profile_windows() {
  local pid=$1 prefix=$2 every=$3 start=$SECONDS at stacks=()
  [ -n "${BENCH_PROFILE_CALLERS:-}" ] && stacks=(--call-graph dwarf,16384)
  sleep 60
  while kill -0 "$pid" 2>/dev/null; do
    at=$((SECONDS - start))
    perf record -F 49 "${stacks[@]}" -p "$pid" -o "$prefix-$at.perf.data" -- sleep 15 >/dev/null 2>&1 || return 0
    # Without stacks the report is cheap; with them it would unwind every sample now, so it
    # waits for the run's end.
    if [ ${#stacks[@]} -eq 0 ]; then
      flat_profile "$prefix-$at.perf.data"
      rm -f "$prefix-$at.perf.data"
    fi
    sleep "$every"
  done
}

# scheduler_work FILE: from kube-scheduler's /metrics, a pod's first entering its queue →
# bound (p50/p99 interpolated in buckets), the mean time of one scheduling attempt, attempts
# by result, and the mean time per pod of its costliest extension points (its own work, the
# same whichever server it talks to; Bind is its API call).
scheduler_work() {
  python3 - "$1" <<'PY'
import re, sys, collections
buckets, sums, counts, attempts = collections.defaultdict(dict), collections.Counter(), collections.Counter(), collections.Counter()
point_sums, point_counts = collections.Counter(), collections.Counter()
for line in open(sys.argv[1]):
    m = re.match(r'^(scheduler_[a-z_]+?)(_bucket|_sum|_count)?\{(.*)\} (\S+)$', line)
    if not m:
        continue
    name, part, labels, value = m.group(1), m.group(2), dict(re.findall(r'(\w+)="([^"]*)"', m.group(3))), float(m.group(4))
    if name == "scheduler_schedule_attempts_total":
        attempts[labels.get("result", "")] += value
    elif name == "scheduler_framework_extension_point_duration_seconds" and part in ("_sum", "_count"):
        if labels.get("status") == "Success":
            (point_sums if part == "_sum" else point_counts)[labels.get("extension_point", "")] += value
    elif part == "_bucket":
        le = float("inf") if labels["le"] == "+Inf" else float(labels["le"])
        buckets[name][le] = buckets[name].get(le, 0) + value
    elif part == "_sum":
        sums[name] += value
    elif part == "_count":
        counts[name] += value
def quantile(name, q):
    b = sorted(buckets[name].items())
    if not b or b[-1][1] == 0:
        return float("nan")
    rank, lo, below = q * b[-1][1], 0.0, 0.0
    for le, n in b:
        if n >= rank:
            return lo if le == float("inf") else lo + (le - lo) * (rank - below) / max(n - below, 1e-9)
        lo, below = le, n
# 1.28 names it scheduler_pod_scheduling_duration_seconds; later releases add the _sli_ one.
sli = next((n for n in ("scheduler_pod_scheduling_sli_duration_seconds", "scheduler_pod_scheduling_duration_seconds") if buckets[n]), "scheduler_pod_scheduling_duration_seconds")
att = "scheduler_scheduling_attempt_duration_seconds"
print(f"queue → bound p50 {quantile(sli, 0.5):.2f} s, p99 {quantile(sli, 0.99):.2f} s ({counts[sli]:.0f} pods); "
      f"one attempt mean {1000 * sums[att] / max(counts[att], 1):.1f} ms; attempts "
      + ", ".join(f"{k} {v:.0f}" for k, v in sorted(attempts.items()))
      + "; per pod " + ", ".join(f"{p} {1000 * point_sums[p] / point_counts[p]:.1f} ms"
                                 for p in ("PreScore", "Score", "Filter", "Bind") if point_counts[p]))
PY
}

# etcd_round_trips FILE: from a server's /metrics, the mean of its most frequent etcd requests
# (etcd_request_duration_seconds by operation and type, kapi's and kube-apiserver's alike): what
# one round trip cost the server, beside etcd's own fsync and commit times in etcd_work.
etcd_round_trips() {
  python3 - "$1" <<'PY'
import re, sys, collections
sums, counts = collections.Counter(), collections.Counter()
for line in open(sys.argv[1]):
    m = re.match(r'^etcd_request_duration_seconds_(sum|count)\{(.*)\} (\S+)$', line)
    if m:
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        key = f"{labels.get('operation', '')} {labels.get('type', '').split('.')[0]}"
        (sums if m.group(1) == "sum" else counts)[key] += float(m.group(3))
top = sorted(counts, key=lambda k: -counts[k])[:5]
print(", ".join(f"{k} {1000 * sums[k] / counts[k]:.1f} ms ({counts[k]:.0f})" for k in top) or "none reported")
PY
}

for n in "${sizes[@]}"; do
  for server in $servers; do
    dir="$base/$server-$n"; mkdir -p "$dir"
    CLUSTER_SCHEDULER_METRICS_PORT=$(free_port); export CLUSTER_SCHEDULER_METRICS_PORT
    # No hollow kubelets: the generator's simulated nodes stand in for them.
    start_server_cluster "$server" "$dir" 0 "$bin" \
      || { echo "cluster-load: $server did not start:" >&2; tail -20 "$dir/local-cluster.out" >&2; exit 1; }
    kubeconfig="$dir/cluster/data/admin.kubeconfig"
    server_pid=$(pid_of "$dir" kapi)
    ctl_pids=("$(pid_of "$dir" kube-scheduler)" "$(pid_of "$dir" kube-controller-manager)")
    c0=$(cpu_ticks "$server_pid"); e0=0; [ -n "$etcd_pid" ] && e0=$(cpu_ticks "$etcd_pid")
    k0=$(( $(cpu_ticks "${ctl_pids[0]}") + $(cpu_ticks "${ctl_pids[1]}") ))
    t0=$(date +%s)
    echo "== $server, N=$n, $ppn pods per node, $churn pods/s ($scheduler_words against it)"
    perf_pid=""
    if [ -n "${BENCH_PROFILE:-}" ]; then
      mkdir -p "$BENCH_PROFILE"
      profile_windows "$server_pid" "$BENCH_PROFILE/$server-$n" "${BENCH_PROFILE_EVERY:-300}" &
      perf_pid=$!
    fi
    "$driver" --cluster-load "$kubeconfig" --label "$server" --nodes "$n" --pods-per-node "$ppn" \
      --pod-churn "$churn" "${load_args[@]}" 2>&1 | tee "$dir/driver.out"
    t1=$(date +%s)
    if [ -n "$perf_pid" ]; then
      kill "$perf_pid" 2>/dev/null; wait "$perf_pid" 2>/dev/null || true
      for data in "$BENCH_PROFILE/$server-$n"-*.perf.data; do
        [ -e "$data" ] || continue
        flat_profile "$data"
      done
      echo "cluster-load: profiles of $server at N=$n: $(ls "$BENCH_PROFILE/$server-$n"-*.txt 2>/dev/null | tr '\n' ' ')"
    fi
    c1=$(cpu_ticks "$server_pid"); e1=0; [ -n "$etcd_pid" ] && e1=$(cpu_ticks "$etcd_pid")
    k1=$(( $(cpu_ticks "${ctl_pids[0]}") + $(cpu_ticks "${ctl_pids[1]}") ))
    rss=$(peak_mb "$server_pid"); erss=0; [ -n "$etcd_pid" ] && erss=$(peak_mb "$etcd_pid")
    # The server's own view of the run, kept with the run's directory (BENCH_KEEP=1).
    kubectl --kubeconfig "$kubeconfig" get --raw /metrics >"$dir/server-metrics.txt" 2>/dev/null || true
    if curl -sfk "https://127.0.0.1:$CLUSTER_SCHEDULER_METRICS_PORT/metrics" >"$dir/scheduler-metrics.txt"; then
      echo "cluster-load: the scheduler's view of $server: $(scheduler_work "$dir/scheduler-metrics.txt")"
    fi
    etcd_words=""
    if [ -n "$etcd_pid" ]; then
      if [ -s "$dir/server-metrics.txt" ]; then
        echo "cluster-load: $server's etcd round trips, mean (count): $(etcd_round_trips "$dir/server-metrics.txt")"
      fi
      etcd_words=$(etcd_work "$ETCD_URL")
      echo "cluster-load: what $server asked of etcd: $etcd_words"
    fi
    echo "$(grep '^summary ' "$dir/driver.out" | tail -1) seconds=$((t1 - t0)) server_cpu=$((c1 - c0)) etcd_cpu=$((e1 - e0)) ctl_cpu=$((k1 - k0)) hz=$HZ server_rss=$rss etcd_rss=$erss $etcd_words" >>"$rows"
    grep -iE 'error|panic' "$dir/cluster/logs/kapi.log" 2>/dev/null | tail -5 | sed "s/^/cluster-load: $server log: /" || true
    stop_all
  done
done

echo
echo "cluster-load: $(date -u +%Y-%m-%d), $(nproc) cores, $ppn pods per node, $churn pods/s; p99 client side (ms), SLOs 1000/1000/5000/30000 ms and start-up 5 s"
python3 - "$rows" <<'PY'
import sys
print("| server | nodes | pods | mutating p99 | GET p99 | LIST ns p99 | LIST cluster p99 | start-up p50 / p99 s | watch out of order | SLOs | run s | server CPU s | etcd CPU s | scheduler + KCM CPU s | generator CPU s | machine busy | server peak RSS MB | etcd peak RSS MB |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for line in open(sys.argv[1]):
    f = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
    if "label" not in f:
        continue
    hz = float(f["hz"])
    cpu = lambda k: f"{int(f[k]) / hz:.1f}"
    print(f"| {f['label']} | {f['nodes']} | {f['pods']} | {f['mutating_p99_ms']} | {f['read_p99_ms']} | {f['list_ns_p99_ms']} | "
          f"{f['list_cluster_p99_ms']} | {f['startup_p50_s']} / {f['startup_p99_s']} | {f['out_of_order']} | {f['slo']} | {f['seconds']} | "
          f"{cpu('server_cpu')} | {cpu('etcd_cpu') if f['etcd_rss'] != '0' else '–'} | {cpu('ctl_cpu')} | {f.get('generator_cpu_s', '–')} | {f.get('machine_busy_pct', '–')}% | {f['server_rss']} | {f['etcd_rss'] if f['etcd_rss'] != '0' else '–'} |")
rows = [dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv) for line in open(sys.argv[1])]
rows = [f for f in rows if "etcd_puts" in f]
if rows:
    print()
    print("What each server asked of its etcd over the run (etcd's /metrics; puts include those inside transactions):")
    print("| server | nodes | etcd CPU s | Range | Txn | DeleteRange | keys put | MB put | watch events | MB received | MB sent | db MB | applies over 100 ms | compacting s | WAL fsync mean ms | backend commit mean ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for f in rows:
        print(f"| {f['label']} | {f['nodes']} | {int(f['etcd_cpu']) / float(f['hz']):.1f} | {f['etcd_requests_Range']} | {f['etcd_requests_Txn']} | "
              f"{f['etcd_requests_DeleteRange']} | {f['etcd_puts']} | {f['etcd_put_mb']} | {f['etcd_watch_events']} | {f['etcd_rx_mb']} | {f['etcd_tx_mb']} | {f['etcd_db_mb']} | "
              f"{f.get('etcd_slow_applies', '–')} | {f.get('etcd_compaction_s', '–')} | {f.get('etcd_fsync_ms', '–')} | {f.get('etcd_commit_ms', '–')} |")
PY

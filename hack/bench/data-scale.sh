#!/usr/bin/env bash
# Data at scale: N ConfigMaps stored (default 1,000,000) on kapi (embedded store and etcd)
# beside upstream's kube-apiserver v1.28.7 (on its own fresh etcd), one server at a time. For
# each: start it, `kapi-bench-apiserver --data-scale` creates the objects and prints the
# server's memory per object against their encoded size, a paged walk of all (limit=500) and a
# watch from a recent resourceVersion; then the server is stopped and started again on the
# same data and the driver times /readyz, the first consistent LIST and the first LIST from
# the watch cache, and repeats the walk and the watch (see
# hack/bench/apiserver/src/data_scale.rs). Prints one table at the end.
#
#   hack/bench/data-scale.sh <kapi-apiserver release binary> [N]
#   BENCH_SERVERS (default "kapi-embedded kapi-etcd reference"), BENCH_DRIVER (default:
#   kapi-bench-apiserver beside the binary), BENCH_CONCURRENCY (creates in flight, default 16),
#   BENCH_KEEP=1 keeps the run's directory. kube-apiserver comes from KAPI_UPSTREAM_BIN, else
#   ../shared/upstream. Each etcd gets an 8 GiB quota (a million objects outgrow the default
#   2 GiB before a compaction). Everything listens on 127.0.0.1 only.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
bin=${1:?usage: hack/bench/data-scale.sh <kapi-apiserver binary> [N]}
bin=$(realpath "$bin")
n=${2:-1000000}
driver=${BENCH_DRIVER:-$(dirname "$bin")/kapi-bench-apiserver}
[ -x "$driver" ] || { echo "data-scale: no $driver (cargo build --release -p kapi-bench-apiserver)" >&2; exit 2; }
concurrency=${BENCH_CONCURRENCY:-16}
ETCD=${ETCD:-$(command -v etcd || echo /usr/bin/etcd)}
ETCD_EXTRA_ARGS="--quota-backend-bytes=8589934592"

# shellcheck source=hack/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_servers data-scale
# shellcheck source=hack/reference-pki.sh
. "$ROOT/hack/reference-pki.sh"
upstream_or_kapi_only data-scale
bench_dir data-scale

for server in $servers; do
  dir="$base/$server"; mkdir -p "$dir"
  start_ready_server data-scale "$server" "$dir"
  # What start-up allocated and freed (the OpenAPI documents) is returned before the idle read.
  sleep 30
  pids=(--server-pid "$server_pid")
  [ -n "$etcd_pid" ] && pids+=(--etcd-pid "$etcd_pid")
  echo "== $server: $n ConfigMaps"
  "$driver" --data-scale "$kubeconfig" --data-scale-stage load --label "$server" --objects "$n" \
    --concurrency "$concurrency" "${pids[@]}" | tee -a "$rows"
  # A clean stop, then a start on the same data.
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
  start_server "$server" "$dir" "$port" "$etcd_url"
  "$driver" --data-scale "$kubeconfig" --data-scale-stage restart --label "$server" --objects "$n" \
    --started-ms "$started_ms" --server-pid "$server_pid" | tee -a "$rows"
  [ -n "$etcd_pid" ] && echo "data-scale: $server: etcd peak RSS $(peak_mb "$etcd_pid") MB, its data $(du -sm "$dir/etcd" | cut -f1) MB" | tee -a "$rows"
  [ "$server" = kapi-embedded ] && echo "data-scale: $server: its data $(du -sm "$dir/data" | cut -f1) MB" | tee -a "$rows"
  stop_all
done

echo
echo "data-scale: $(date -u +%Y-%m-%d), $(nproc) cores, $n ConfigMaps, $concurrency creates in flight"
python3 - "$rows" <<'PY'
import sys
load, restart = {}, {}
for line in open(sys.argv[1]):
    if not line.startswith("data-scale "):
        continue
    f = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
    (load if f.get("stage") == "load" else restart)[f["label"]] = f
print("| server | creates/s | RSS idle → loaded MB | RssAnon / PSS / Private_Dirty MB | RSS per object / encoded bytes | ratio | paged walk s (pages) | watch from recent rv ms | restart: ready / first LIST / cache loaded s | RSS after restart MB | walk / watch after restart |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for label, l in load.items():
    r = restart.get(label, {})
    print(f"| {label} | {l['create_per_s']} | {l['idle_rss_mb']} → {l['rss_mb']} | {l['anon_mb']} / {l['pss_mb']} / {l['private_dirty_mb']} | "
          f"{l['per_object_b']} / {l['encoded_b']} | {l['ratio']}× | {l['walk_s']} ({l['pages']}) | {l['watch_ms']} | "
          f"{r.get('ready_s', '–')} / {r.get('first_list_s', '–')} / {r.get('cache_s', '–')} | {r.get('rss_mb', '–')} | "
          f"{r.get('walk_s', '–')} s / {r.get('watch_ms', '–')} ms |")
PY

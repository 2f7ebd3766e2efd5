#!/usr/bin/env bash
# Small requests beside large LISTs, kapi (embedded store and etcd) beside upstream's
# kube-apiserver v1.28.7 (on its own fresh etcd), one server at a time: N ConfigMaps of ~3 KB
# (default 30,000, ~93 MB as a list), then a GET of a Namespace from the cache every 10 ms,
# alone and beside two loops of curl LISTing all ConfigMaps (hack/bench/list_stall.py). A
# server whose LIST encoding holds its workers queues the GETs behind it.
#
#   hack/bench/list-stall.sh <kapi-apiserver release binary> [N]
#   BENCH_SERVERS (default "kapi-embedded kapi-etcd reference"), BENCH_LIST_MODE (pretty: curl's
#   User-Agent, which both servers pretty-print, the general path; json: JSON asked for by
#   another User-Agent, written from the cache's encoded items; default "pretty json"),
#   BENCH_ALONE_S / BENCH_BESIDE_S (default 20 / 40), BENCH_KEEP=1 keeps the run's directory.
#   kube-apiserver comes from KAPI_UPSTREAM_BIN, else ../shared/upstream. Loopback only.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
bin=${1:?usage: hack/bench/list-stall.sh <kapi-apiserver binary> [N]}
bin=$(realpath "$bin")
n=${2:-30000}
modes=${BENCH_LIST_MODE:-pretty json}
ETCD=${ETCD:-$(command -v etcd || echo /usr/bin/etcd)}
# shellcheck source=hack/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_servers list-stall
# shellcheck source=hack/reference-pki.sh
. "$ROOT/hack/reference-pki.sh"
upstream_or_kapi_only list-stall
bench_dir list-stall

for mode in $modes; do
  for server in $servers; do
    dir="$base/$server-$mode"; mkdir -p "$dir"
    start_ready_server list-stall "$server" "$dir"
    echo "== $server, $mode LISTs"
    python3 "$ROOT/hack/bench/list_stall.py" "$kubeconfig" "$n" "${BENCH_ALONE_S:-20}" "${BENCH_BESIDE_S:-40}" "$mode" \
      | tee "$dir/driver.out"
    echo "$server $mode $(grep '^summary ' "$dir/driver.out" | cut -d' ' -f2-)" >>"$rows"
    stop_all
  done
done

echo
echo "list-stall: $(date -u +%Y-%m-%d), $(nproc) cores, $n ConfigMaps of ~3 KB; GET of a Namespace (resourceVersion=0) every 10 ms"
python3 - "$rows" <<'PY'
import sys
print("| server | LISTs | GET p50 / p99 alone ms | GET p50 / p99 / max beside two LIST loops ms | LISTs answered (failed) | LIST mean s |")
print("|---|---|---|---|---|---|")
for line in open(sys.argv[1]):
    server, mode, *kv = line.split()
    f = dict(x.split("=", 1) for x in kv)
    print(f"| {server} | {mode} | {f['alone_p50_ms']} / {f['alone_p99_ms']} | {f['beside_p50_ms']} / {f['beside_p99_ms']} / {f['beside_max_ms']} | {f['lists']} ({f['lists_failed']}) | {f['list_mean_s']} |")
PY

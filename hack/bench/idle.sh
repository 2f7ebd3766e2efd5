#!/usr/bin/env bash
# Idle memory of kapi servers started side by side, each on a fresh data directory (embedded
# store): for each server, RSS (RssAnon + RssFile), PSS and Private_Dirty at /readyz and 3, 5,
# 15 and 30 s later, then its peak: VmHWM (the kernel's high-water mark of RSS) and the highest
# RssAnon seen every 50 ms over its first 15 s (the OpenAPI documents are built right after
# /readyz). PSS shares each page among the processes that map it, so with N servers the
# binary's clean pages count 1/N in each: what one more server costs is about its PSS.
#
#   hack/bench/idle.sh <kapi-apiserver binary> [servers, default 1]
set -euo pipefail
bin=${1:?usage: idle.sh <kapi-apiserver binary> [servers]}
n=${2:-1}
base=$(mktemp -d)
pids=()
samplers=()
cleanup() {
  kill "${pids[@]}" "${samplers[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$base"
}
trap cleanup EXIT
# shellcheck source=hack/lib/servers.sh
. "$(dirname "$0")/../lib/servers.sh"
# sample_anon PID FILE: the highest RssAnon (kB) of PID over 15 s, read every 50 ms, into FILE.
# Read with builtins, so that a reading starts no process but its sleep.
sample_anon() {
  local pid=$1 out=$2 max=0 key value
  for _ in $(seq 300); do
    while read -r key value _; do
      if [ "$key" = RssAnon: ] && [ "$value" -gt "$max" ]; then max=$value; fi
    done <"/proc/$pid/status" 2>/dev/null || break
    sleep 0.05
  done
  echo "$max" >"$out"
}
# The kernel maps code pages around each fault only where they are in the page cache, so the
# binary's RssFile depends on how much of it is cached: read it all first, for the same
# figure from run to run.
cat "$bin" >/dev/null
ports=()
for i in $(seq "$n"); do
  port=$(free_port)
  ports+=("$port")
  mkdir "$base/$i"
  "$bin" --secure-port "$port" --data-dir "$base/$i" >"$base/$i.log" 2>&1 &
  pids+=($!)
  sample_anon "$!" "$base/$i.anon-peak" &
  samplers+=($!)
done
for port in "${ports[@]}"; do
  for _ in $(seq 400); do
    curl -sk "https://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
    sleep 0.025
  done
done
report() {
  for pid in "${pids[@]}"; do
    awk -v when="$1" -v pid="$pid" '
      FILENAME ~ /status$/ && /^(RssAnon|RssFile):/ { v[$1] = $2 }
      FILENAME ~ /smaps_rollup$/ && /^(Pss|Private_Dirty):/ { v[$1] = $2 }
      END { printf "%-6s pid %-8s RSS %5.1f MB (anon %4.1f + file %4.1f)  PSS %5.1f MB  Private_Dirty %4.1f MB\n",
            when, pid, (v["RssAnon:"] + v["RssFile:"]) / 1024, v["RssAnon:"] / 1024, v["RssFile:"] / 1024,
            v["Pss:"] / 1024, v["Private_Dirty:"] / 1024 }' "/proc/$pid/status" "/proc/$pid/smaps_rollup"
  done
}
report ready
sleep 3; report +3s
sleep 2; report +5s
sleep 10; report +15s
sleep 15; report +30s
wait "${samplers[@]}"
for i in $(seq "$n"); do
  pid=${pids[$((i - 1))]}
  awk -v pid="$pid" -v anon="$(cat "$base/$i.anon-peak")" '
    /^VmHWM:/ { hwm = $2 }
    END { printf "peak   pid %-8s VmHWM %5.1f MB  RssAnon %4.1f MB (highest of the first 15 s, every 50 ms)\n",
          pid, hwm / 1024, anon / 1024 }' "/proc/$pid/status"
done

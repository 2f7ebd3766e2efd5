#!/usr/bin/env bash
# A bounded consistency-under-faults run: starts kapi, runs the load client
# (kapi-consistency-load, concurrent clients recording a history of operations and watches) in
# the background for S seconds while faults are injected, then runs the checker
# (kapi-consistency-check) on the history and prints one summary line.
#
#   hack/consistency/run.sh [--planted] embedded|etcd
#
#   embedded  one replica on the embedded store, on 127.0.0.1; every 15-25 s it is killed (-9)
#             and restarted on the same data dir and port.
#   etcd      three replicas over a three-member etcd, each process in a network namespace of
#             its own on a loopback address (etcd 127.1.0.1-3, kapi 127.1.0.11-13) behind one
#             bridge, the whole run inside a fresh network namespace (unshare -n) so the
#             machine's own network is never touched. Faults in turn, each held ~6-12 s and
#             followed by recovery and calm: kill -9 of a replica, kill -9 of an etcd member, a
#             partition of one etcd member from the other two, of one replica from every etcd
#             member, of the etcd leader from everything else. Needs root and `ip netns`;
#             without them it prints why and exits 0.
#   --planted kapi started with KAPI_PLANTED_FAULT_DROP_WATCH_EVENT=/configmaps/consistency- (its
#             watch cache drops one event of the load's ConfigMaps), a short load and no faults:
#             passes only when the checker reports a watch violation, i.e. proves the harness
#             catches a real hole.
#
# env: KAPI_BIN, CONSISTENCY_LOAD_BIN, CONSISTENCY_CHECK_BIN (default
#      ${CARGO_TARGET_DIR:-target}/debug/<name>), CONSISTENCY_SECONDS (default 120, 10 with
#      --planted), CONSISTENCY_PAUSE_MS (the load client's --pause-ms, default 0: a pause
#      before each of its requests, to bound its CPU beside other suites), CONSISTENCY_KEEP=1
#      keeps the work dir (it is kept anyway on failure).
# Exit: 0 when the checker found no violation (with --planted: when it found the planted one),
#       1 otherwise. Every process's log, the fault log (faults.log) and the history are in a
#       work dir under ${TMPDIR:-/tmp}, removed after a pass (unless CONSISTENCY_KEEP=1).

# Most functions run through wait_until, the trap or the table of faults, which shellcheck
# cannot follow.
# shellcheck disable=SC2317
set -uo pipefail
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
ARGS=("$@")
# shellcheck source=hack/lib/servers.sh
. "$ROOT/hack/lib/servers.sh"

usage() { echo "usage: $0 [--planted] embedded|etcd" >&2; exit 2; }
PLANTED=""
CONFIG=""
for a in "$@"; do
  case "$a" in
    --planted) PLANTED=1 ;;
    embedded | etcd) [ -z "$CONFIG" ] || usage; CONFIG=$a ;;
    *) usage ;;
  esac
done
[ -n "$CONFIG" ] || usage
LABEL="consistency [$CONFIG${PLANTED:+, planted}]"

TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
KAPI_BIN="${KAPI_BIN:-$TARGET/debug/kapi-apiserver}"
LOAD_BIN="${CONSISTENCY_LOAD_BIN:-$TARGET/debug/kapi-consistency-load}"
CHECK_BIN="${CONSISTENCY_CHECK_BIN:-$TARGET/debug/kapi-consistency-check}"
if [ -n "$PLANTED" ]; then DURATION="${CONSISTENCY_SECONDS:-10}"; else DURATION="${CONSISTENCY_SECONDS:-120}"; fi

# --- the etcd configuration: check what it needs, then go into a fresh network namespace ----
if [ "$CONFIG" = etcd ] && [ -z "${KAPI_CONSISTENCY_IN_NETNS:-}" ]; then
  # A user's machine without these cannot run this configuration: say so, and do not fail.
  if [ "$(id -u)" != 0 ]; then echo "$LABEL: skipped: needs root (network namespaces and partitions)"; exit 0; fi
  for tool in ip unshare etcd curl; do
    command -v "$tool" >/dev/null 2>&1 || { echo "$LABEL: skipped: needs $tool"; exit 0; }
  done
  # Root in a container may still lack what namespaces need: try both for real.
  unshare -n true 2>/dev/null || { echo "$LABEL: skipped: cannot make a network namespace (unshare -n)"; exit 0; }
  if ! { ip netns add "kc$$-probe" && ip netns del "kc$$-probe"; } 2>/dev/null; then
    echo "$LABEL: skipped: 'ip netns add' does not work here"; exit 0
  fi
  # Everything below (bridge, servers, load client, checker) lives in this namespace, so the
  # machine's routes and addresses stay as they are and the bridge goes away with the run.
  exec unshare -n -- env KAPI_CONSISTENCY_IN_NETNS=1 bash "$SELF" "${ARGS[@]}"
fi

for bin in "$KAPI_BIN" "$LOAD_BIN" "$CHECK_BIN"; do
  [ -x "$bin" ] || { echo "$LABEL: $bin not found (build it with cargo, or set KAPI_BIN / CONSISTENCY_LOAD_BIN / CONSISTENCY_CHECK_BIN)" >&2; exit 1; }
done

WORK="$(mktemp -d "${TMPDIR:-/tmp}/kapi-consistency-$CONFIG.XXXXXX")"
RUN="kc$$"            # prefix of this run's netns names: `ip netns add` names are machine-wide
PASSED=""             # set once the run's verdict is a pass; otherwise the work dir is kept
declare -A KAPI_PID=() ETCD_PID=() NS=() ADDR=() FAULTS=()
NETNS=()              # every netns this run added (deleted at exit, whatever happens)
LOAD_PID=""
ERRORS=()             # what went wrong in the orchestration itself (a server that did not come back)

# log TEXT: a timestamped line in the run's log (faults, restarts, recoveries).
T0=$SECONDS
log() { printf '%s +%ss %s\n' "$(date -u +%H:%M:%S.%3N)" "$((SECONDS - T0))" "$*" >>"$WORK/faults.log"; }

# stop PID: kills a process this script started and reaps it, so its PID is never reused
# under us.
stop() { [ -n "$1" ] && { kill -9 "$1" 2>/dev/null; wait "$1" 2>/dev/null; }; return 0; }

cleanup() {
  local p n
  [ -n "$LOAD_PID" ] && kill "$LOAD_PID" 2>/dev/null && { sleep 1; stop "$LOAD_PID"; }
  for p in "${KAPI_PID[@]}" "${ETCD_PID[@]}"; do stop "$p"; done
  for n in "${NETNS[@]}"; do ip netns del "$n" 2>/dev/null; done
  if [ -n "$PASSED" ] && [ -z "${CONSISTENCY_KEEP:-}" ]; then
    rm -rf "$WORK"
  else
    echo "$LABEL: logs kept in $WORK"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# --- servers ----------------------------------------------------------------------------------
KAPI_CMD=("$KAPI_BIN")
# The test-only switch in kapi's watch cache: it drops one event (the 200th) sent to a watcher of
# a key containing the text. The load's namespaces are consistency-<n>: with just /configmaps/
# the controllers' cluster-wide ConfigMap watchers count too, and the dropped event may be one
# of theirs, which no history records (seen: a planted run with no violation).
[ -n "$PLANTED" ] && KAPI_CMD=(env KAPI_PLANTED_FAULT_DROP_WATCH_EVENT=/configmaps/consistency- "$KAPI_BIN")

if [ "$CONFIG" = embedded ]; then
  REPLICAS=(1)
  MEMBERS=()
  PORT=$(free_port)
  CA="$WORK/kapi-1/pki/ca.crt"
  replica_url() { echo "https://127.0.0.1:$PORT"; }
  start_replica() {
    "${KAPI_CMD[@]}" --secure-port "$PORT" --bind-address 127.0.0.1 --data-dir "$WORK/kapi-$1" \
      >>"$WORK/kapi-$1.out" 2>>"$WORK/kapi-$1.log" &
    KAPI_PID[$1]=$!
  }
else
  REPLICAS=(1 2 3)
  MEMBERS=(1 2 3)
  # Each process has a network namespace of its own, so fixed ports cannot collide.
  PORT=6443
  CA="$WORK/pki/ca.crt"
  # A MAC address no interface has: a neighbour entry pointing at it makes the bridge flood the
  # frames to ports that all discard them, so the peer is cut off silently (see cut()).
  BLACKHOLE_MAC=02:00:00:00:00:01

  # The fresh namespace's loopback keeps only 127.0.0.1 as local, so the 127.1.0.0/16 addresses
  # can be routed to the bridge; route_localnet lets 127/8 packets cross real interfaces.
  ip link set lo up
  ip route del local 127.0.0.0/8 dev lo table local
  ip route add local 127.0.0.1 dev lo table local 2>/dev/null
  if ! { ip link add kcbr type bridge && ip link set kcbr up && ip addr add 127.1.0.254/16 dev kcbr; }; then
    echo "$LABEL: cannot make the bridge" >&2; exit 1
  fi
  sysctl -qw net.ipv4.conf.all.route_localnet=1 net.ipv4.conf.kcbr.route_localnet=1

  # add_node NAME ADDRESS: a network namespace with eth0 on the bridge at ADDRESS.
  add_node() {
    local node=$1 addr=$2 ns="$RUN-$1" veth="$RUN$1"
    NETNS+=("$ns")
    ip netns add "$ns" || return 1
    NS[$node]=$ns
    ADDR[$node]=$addr
    ip link add "$veth" type veth peer name eth0 netns "$ns" && ip link set "$veth" master kcbr up \
      && ip netns exec "$ns" ip link set lo up && ip netns exec "$ns" ip link set eth0 up \
      && ip netns exec "$ns" ip route del local 127.0.0.0/8 dev lo table local \
      && { ip netns exec "$ns" ip route add local 127.0.0.1 dev lo table local 2>/dev/null; true; } \
      && ip netns exec "$ns" ip addr add "$addr/16" dev eth0 \
      && ip netns exec "$ns" sysctl -qw net.ipv4.conf.all.route_localnet=1 net.ipv4.conf.eth0.route_localnet=1
  }
  for i in 1 2 3; do
    if ! { add_node "e$i" "127.1.0.$i" && add_node "k$i" "127.1.0.1$i"; }; then
      echo "$LABEL: cannot set up the network namespaces" >&2; exit 1
    fi
  done
  NODES=(e1 e2 e3 k1 k2 k3)

  # cut A... -- B...: drops every packet between the nodes A and the nodes B, both ways,
  # silently: each side's neighbour entry for the other points at BLACKHOLE_MAC, so packets
  # leave (the sender sees no error, no RST, no ICMP) and nobody takes them, as in a real
  # partition; established connections stall. (tc filters would do too, but need the
  # kernel's tc action modules, which not every kernel has.)
  cut() {
    local side=left a b
    local -a left=() right=()
    for a in "$@"; do
      if [ "$a" = -- ]; then side=right; elif [ "$side" = left ]; then left+=("$a"); else right+=("$a"); fi
    done
    for a in "${left[@]}"; do
      for b in "${right[@]}"; do
        ip netns exec "${NS[$a]}" ip neigh replace "${ADDR[$b]}" lladdr "$BLACKHOLE_MAC" dev eth0 nud permanent
        ip netns exec "${NS[$b]}" ip neigh replace "${ADDR[$a]}" lladdr "$BLACKHOLE_MAC" dev eth0 nud permanent
      done
    done
  }
  # heal_all: removes every cut; the next packet resolves the real address again.
  heal_all() {
    local n
    for n in "${NODES[@]}"; do ip netns exec "${NS[$n]}" ip -4 neigh flush dev eth0 nud permanent 2>/dev/null; done
  }

  ETCD_SERVERS="http://127.1.0.1:2379,http://127.1.0.2:2379,http://127.1.0.3:2379"
  CLUSTER="e1=http://127.1.0.1:2380,e2=http://127.1.0.2:2380,e3=http://127.1.0.3:2380"
  # start_member I: starts (or restarts, on its data) etcd member I in its namespace. On
  # existing data --initial-cluster-state is ignored, so "new" is right for a restart too.
  start_member() {
    local a="${ADDR[e$1]}"
    ip netns exec "${NS[e$1]}" etcd --name "e$1" --data-dir "$WORK/etcd-$1" \
      --listen-client-urls "http://$a:2379" --advertise-client-urls "http://$a:2379" \
      --listen-peer-urls "http://$a:2380" --initial-advertise-peer-urls "http://$a:2380" \
      --initial-cluster "$CLUSTER" --initial-cluster-state new --initial-cluster-token "$RUN" \
      >>"$WORK/etcd-$1.log" 2>&1 &
    ETCD_PID[$1]=$!
  }
  member_healthy() { curl -sf --max-time 2 "http://${ADDR[e$1]}:2379/health" | grep -q '"health":"true"'; }
  all_members_healthy() { member_healthy 1 && member_healthy 2 && member_healthy 3; }
  # etcd_leader: prints the member that says it is the leader (etcd's JSON gateway, no etcdctl).
  etcd_leader() {
    local i st id leader
    for i in "${MEMBERS[@]}"; do
      st=$(curl -s --max-time 2 -X POST -d '{}' "http://${ADDR[e$i]}:2379/v3/maintenance/status") || continue
      id=$(grep -o '"member_id":"[0-9]*"' <<<"$st" | grep -o '[0-9][0-9]*')
      leader=$(grep -o '"leader":"[0-9]*"' <<<"$st" | grep -o '[0-9][0-9]*')
      [ -n "$id" ] && [ "$id" = "$leader" ] && { echo "$i"; return 0; }
    done
    return 1
  }

  replica_url() { echo "https://${ADDR[k$1]}:$PORT"; }
  # start_replica I: kapi replica I in its namespace; the replicas share one certificate
  # directory (one CA, a serving certificate for all three addresses).
  start_replica() {
    ip netns exec "${NS[k$1]}" "${KAPI_CMD[@]}" --secure-port "$PORT" --bind-address "${ADDR[k$1]}" \
      --data-dir "$WORK/kapi-$1" --cert-dir "$WORK/pki" --tls-sans 127.1.0.11,127.1.0.12,127.1.0.13 \
      --etcd-servers "$ETCD_SERVERS" --service-cluster-ip-range 10.96.0.0/16 \
      >>"$WORK/kapi-$1.out" 2>>"$WORK/kapi-$1.log" &
    KAPI_PID[$1]=$!
  }

  for i in "${MEMBERS[@]}"; do start_member "$i"; done
  for i in "${MEMBERS[@]}"; do
    wait_until 60 member_healthy "$i" || { echo "$LABEL: etcd member $i not healthy" >&2; tail -20 "$WORK/etcd-$i.log" >&2; exit 1; }
  done

  # Prove the cut works on this kernel before relying on it: from k1, e1's client port answers,
  # does not (a timeout, not a refusal) once the two are cut, and answers again once healed.
  probe() { ip netns exec "${NS[k1]}" curl -s -o /dev/null --max-time "$1" "http://${ADDR[e1]}:2379/health"; }
  wait_until 10 probe 1; before=$?
  cut k1 -- e1; probe 2; during=$?
  heal_all; wait_until 10 probe 1; after=$?
  if [ "$before" != 0 ] || [ "$during" != 28 ] || [ "$after" != 0 ]; then
    echo "$LABEL: the partition mechanism does not work here (curl exit codes: $before before, $during cut (want 28, a timeout), $after healed)" >&2
    exit 1
  fi
fi

replica_ready() { curl -sf -o /dev/null --max-time 3 --cacert "$CA" "$(replica_url "$1")/readyz"; }
# The first replica makes the shared PKI, so the replicas start one after the other.
for i in "${REPLICAS[@]}"; do
  start_replica "$i"
  wait_until 90 replica_ready "$i" || { echo "$LABEL: kapi replica $i not ready" >&2; tail -20 "$WORK/kapi-$i.log" >&2; exit 1; }
done
KUBECONFIG_FILE="$WORK/kapi-1/admin.kubeconfig"

# --- load -------------------------------------------------------------------------------------
SERVER_ARGS=()
for i in "${REPLICAS[@]}"; do SERVER_ARGS+=(--server "$(replica_url "$i")"); done
HISTORY="$WORK/history.jsonl"
log "load: $DURATION s against ${SERVER_ARGS[*]}"
"$LOAD_BIN" --kubeconfig "$KUBECONFIG_FILE" "${SERVER_ARGS[@]}" --seconds "$DURATION" --history "$HISTORY" \
  --pause-ms "${CONSISTENCY_PAUSE_MS:-0}" \
  >"$WORK/load.out" 2>"$WORK/load.log" &
LOAD_PID=$!
# The load client is meant to stop by itself after DURATION; past this it is stuck.
LOAD_DEADLINE=$((SECONDS + DURATION + 120))

load_running() { kill -0 "$LOAD_PID" 2>/dev/null && [ "$SECONDS" -lt "$LOAD_DEADLINE" ]; }
# pause SECONDS: sleeps while the load runs; fails as soon as it has ended.
pause() {
  local until=$((SECONDS + $1))
  while [ "$SECONDS" -lt "$until" ]; do load_running || return 1; sleep 0.5; done
  load_running
}
between() { echo $(($1 + RANDOM % ($2 - $1 + 1))); }
pick() { between 1 3; }
fault() { FAULTS[$1]=$((${FAULTS[$1]:-0} + 1)); log "fault $1: $2"; }
error() { ERRORS+=("$1"); log "ERROR: $1"; }

# alive: every server that should be up is; one that exited by itself is an error.
alive() {
  local i
  for i in "${REPLICAS[@]}"; do kill -0 "${KAPI_PID[$i]}" 2>/dev/null || { error "kapi replica $i exited by itself (kapi-$i.log)"; return 1; }; done
  for i in "${MEMBERS[@]}"; do kill -0 "${ETCD_PID[$i]}" 2>/dev/null || { error "etcd member $i exited by itself (etcd-$i.log)"; return 1; }; done
}

# kill_replica: kill -9 of a replica; restarted on the same data dir and port, back once ready.
kill_replica() {
  local i; i=$(pick); [ "$CONFIG" = embedded ] && i=1
  stop "${KAPI_PID[$i]}"
  fault kill-replica "kill -9 of kapi replica $i"
  [ "$CONFIG" = embedded ] || pause "$(between 2 5)"
  start_replica "$i"
  wait_until 90 replica_ready "$i" || { error "kapi replica $i not ready 90 s after its restart (kapi-$i.log)"; return 1; }
  log "kapi replica $i ready again"
}

kill_member() {
  local i; i=$(pick)
  stop "${ETCD_PID[$i]}"
  fault kill-member "kill -9 of etcd member $i"
  pause "$(between 3 8)"
  start_member "$i"
  wait_until 60 all_members_healthy || { error "etcd member $i not healthy 60 s after its restart (etcd-$i.log)"; return 1; }
  log "etcd member $i healthy again"
}

# heal: removes the cuts, then waits for etcd (and replica I, if given) to be well again.
heal() {
  heal_all
  log "healed"
  wait_until 60 all_members_healthy || { error "etcd not healthy 60 s after healing a partition"; return 1; }
  if [ -n "${1:-}" ]; then
    wait_until 90 replica_ready "$1" || { error "kapi replica $1 not ready 90 s after healing its partition"; return 1; }
  fi
}

partition_member() {
  local i j others=(); i=$(pick)
  for j in "${MEMBERS[@]}"; do [ "$j" != "$i" ] && others+=("e$j"); done
  cut "e$i" -- "${others[@]}"
  fault partition-member "etcd member $i cut from ${others[*]}"
  pause "$(between 6 12)"
  heal
}

partition_replica() {
  local i; i=$(pick)
  cut "k$i" -- e1 e2 e3
  fault partition-replica "kapi replica $i cut from e1 e2 e3"
  pause "$(between 6 12)"
  heal "$i"
}

partition_leader() {
  local l n rest=()
  l=$(etcd_leader) || { log "no etcd leader found: partition of the leader skipped"; return 0; }
  for n in "${NODES[@]}"; do [ "$n" != "e$l" ] && rest+=("$n"); done
  cut "e$l" -- "${rest[@]}"
  fault partition-leader "etcd leader e$l cut from ${rest[*]}"
  pause "$(between 6 12)"
  heal
}

if [ -n "$PLANTED" ]; then
  log "planted mode: no faults"
elif [ "$CONFIG" = embedded ]; then
  while pause "$(between 15 25)" && alive; do kill_replica || break; done
else
  KINDS=(kill_replica kill_member partition_member partition_replica partition_leader)
  n=0
  # Calm before the first fault and after each one, so every fault hits a cluster that is well.
  while pause "$(between 3 6)" && alive; do
    "${KINDS[n % ${#KINDS[@]}]}" || break
    n=$((n + 1))
  done
fi

# Past the load's end (or after an error): let it finish on a healed cluster.
[ "$CONFIG" = etcd ] && heal_all
[ "${#ERRORS[@]}" = 0 ] && alive
while kill -0 "$LOAD_PID" 2>/dev/null && [ "$SECONDS" -lt "$LOAD_DEADLINE" ]; do sleep 0.5; done
if kill -0 "$LOAD_PID" 2>/dev/null; then
  error "the load client was still running 120 s past its $DURATION s; killed"
  stop "$LOAD_PID"
fi
wait "$LOAD_PID"; LOAD_RC=$?
LOAD_PID=""
log "load ended (exit $LOAD_RC): $(head -1 "$WORK/load.out")"

# --- verdict ----------------------------------------------------------------------------------
"$CHECK_BIN" "$HISTORY" >"$WORK/check.out" 2>&1; CHECK_RC=$?
CHECK_OUT="$(cat "$WORK/check.out")"

# Counts from the checker's first line ("history: N operations on K keys, W watches with E
# events"), else from the load client's ("load: N operations (...), W watches with E events").
if [[ "$CHECK_OUT" =~ history:\ ([0-9]+)\ operations\ on\ [0-9]+\ keys,\ ([0-9]+)\ watches\ with\ ([0-9]+)\ events ]]; then
  OPS=${BASH_REMATCH[1]} WATCHES=${BASH_REMATCH[2]} EVENTS=${BASH_REMATCH[3]}
elif [[ "$(cat "$WORK/load.out")" =~ ([0-9]+)\ operations.*\ ([0-9]+)\ watches(,|\ with)\ ([0-9]+)\ (watch\ )?events ]]; then
  OPS=${BASH_REMATCH[1]} WATCHES=${BASH_REMATCH[2]} EVENTS=${BASH_REMATCH[4]}
else
  OPS="?" WATCHES="?" EVENTS="?"
fi
if [[ "$CHECK_OUT" =~ ([0-9]+)\ violation\(s\) ]]; then VIOLATIONS=${BASH_REMATCH[1]}
elif grep -q '^no violation found' <<<"$CHECK_OUT"; then VIOLATIONS=0
else VIOLATIONS="?"; fi
VIOLATIONS+=" violations"
# Exit 2: a key's search ran out of budget, or the history was unreadable: not a pass.
[ "$CHECK_RC" = 2 ] && VIOLATIONS+=", inconclusive (checker exit 2)"

TOTAL=0 PARTS=()
# describe KIND SINGULAR PLURAL
describe() {
  local n=${FAULTS[$1]:-0}
  [ "$n" = 0 ] && return
  TOTAL=$((TOTAL + n))
  if [ "$n" = 1 ]; then PARTS+=("1 $2"); else PARTS+=("$n $3"); fi
}
describe kill-replica "kill -9 of a replica" "kill -9 of a replica"
describe kill-member "kill -9 of an etcd member" "kill -9 of an etcd member"
describe partition-member "partition of an etcd member from the other two" "partitions of an etcd member from the other two"
describe partition-replica "partition of a replica from etcd" "partitions of a replica from etcd"
describe partition-leader "partition of the etcd leader from the rest" "partitions of the etcd leader from the rest"
FAULT_TEXT="$TOTAL faults"
if [ "${#PARTS[@]}" -gt 0 ]; then
  FAULT_TEXT+=" (${PARTS[0]}"
  for p in "${PARTS[@]:1}"; do FAULT_TEXT+=", $p"; done
  FAULT_TEXT+=")"
fi

echo "$LABEL: $OPS operations, $WATCHES watches with $EVENTS events, $FAULT_TEXT, $VIOLATIONS"

fail_details() {
  local e
  for e in "${ERRORS[@]}"; do echo "  run error: $e"; done
  [ "$LOAD_RC" = 0 ] || { echo "  the load client exited $LOAD_RC:"; tail -n 20 "$WORK/load.log" | sed 's/^/    /'; }
  echo "  checker (exit $CHECK_RC):"
  sed 's/^/    /' "$WORK/check.out"
}

if [ -n "$PLANTED" ]; then
  # The checker names the check of each violation: "the first (watches):" or "[watches]".
  if [ "$CHECK_RC" = 1 ] && [ "$LOAD_RC" = 0 ] && grep -Eq '\(watches\):|\[watches\]' <<<"$CHECK_OUT"; then
    echo "$LABEL: the planted fault was caught: $(grep -Em1 'watch [0-9]+ from rv=' <<<"$CHECK_OUT" | sed 's/^ *//; s/^\[watches\] //')"
    PASSED=1
    exit 0
  fi
  echo "$LABEL: the planted fault was NOT caught"
  fail_details
  exit 1
fi

if [ "$CHECK_RC" = 0 ] && [ "$LOAD_RC" = 0 ] && [ "${#ERRORS[@]}" = 0 ]; then
  PASSED=1
  exit 0
fi
fail_details
exit 1

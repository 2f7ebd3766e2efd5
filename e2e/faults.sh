#!/usr/bin/env bash
# Fault tests, bounded (a few minutes), loopback only, free ports. (kill -9 of kapi under
# concurrent writers, on both backends, is hack/consistency/run.sh's: a recorded history of
# every request, checked for lost or duplicated writes, stale reads, LISTs and watch gaps.)
#  1. etcd killed (-9) and restarted under 8 writers and a watcher: clients see only success,
#     409 (a retried create that had landed), 429 or 5xx/no answer (never a wrong answer); a
#     write and a read while etcd is down get upstream's 504 Timeout wording; no
#     acknowledged write is lost, resourceVersions only grow within each watch, and a watcher
#     that re-lists when its watch ends has seen every acknowledged object.
#  2. A second kapi on the same --data-dir (embedded store) exits at once naming the directory;
#     the first keeps serving.
#  3. A full disk under the embedded store (a 24 MiB tmpfs as the data dir, as root): writes
#     fail with a 500 InternalError naming the full disk, reads keep working, nothing acknowledged is lost, and writes
#     resume once space is freed.
#  4. Overload: with in-flight limits of 10 reads and 5 writes, 100 readers and 50 writers (10x)
#     for 15 s: every request is answered (success or 429) within the request timeout, some
#     are 429, and kapi's peak RSS stays under 10x its idle RSS. (A request on a kept-alive
#     connection the server closed as it went out is counted as retried and sent again on a
#     new one, as Go's client does.)
#
#   KAPI_BIN=path/to/kapi-apiserver e2e/faults.sh   (default: builds the debug binary)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=e2e/lib.sh
. "$ROOT/e2e/lib.sh"

e2e_init faults
LOAD="$ROOT/e2e/faults/load.py"
MOUNTED=""
faults_cleanup() {
  [ -n "$KAPI_PID" ] && kill -9 "$KAPI_PID" 2>/dev/null && wait "$KAPI_PID" 2>/dev/null
  KAPI_PID=""
  [ -n "$MOUNTED" ] && umount "$MOUNTED" 2>/dev/null
  e2e_cleanup
}
trap faults_cleanup EXIT INT TERM

# auth_files NAME: the admin client certificate, key and CA of kapi NAME, for load.py.
auth_files() {
  local dir="$WORK/kapi-$1" out="$WORK/auth-$1"
  mkdir -p "$out"
  cp "$dir/pki/ca.crt" "$out/ca.crt"
  grep client-certificate-data "$dir/admin.kubeconfig" | awk '{print $2}' | base64 -d >"$out/client.crt"
  grep client-key-data "$dir/admin.kubeconfig" | awk '{print $2}' | base64 -d >"$out/client.key"
  AUTH="$out"
}

# json_field JSON EXPR: a field of a JSON summary (python expression on d).
json_field() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); print($2)" "$1"; }

# etcd on fixed (free) ports so it can be restarted at the same address.
ETCD_PORT=$(free_port); ETCD_PEER=$(free_port); ETCD_PID=""
start_etcd() {
  etcd --name faults --data-dir "$WORK/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
    --initial-cluster "faults=http://127.0.0.1:$ETCD_PEER" >>"$WORK/etcd.log" 2>&1 &
  ETCD_PID=$!
  PIDS+=("$ETCD_PID")
  wait_until 30 curl -sf -o /dev/null "http://127.0.0.1:$ETCD_PORT/health" || { echo "faults: etcd did not start"; exit 1; }
}
start_etcd

# ---- 1. etcd killed and restarted under load -----------------------------------------------
LABEL=faults-etcd
start_kapi_on_etcd ek --request-timeout 10s
auth_files ek
python3 "$LOAD" watch --server "https://127.0.0.1:$PORT" --auth "$AUTH" --seconds 24 \
  --out "$WORK/ek.seen" >"$WORK/ek.watch.json" &
WATCHER=$!
sleep 1
python3 "$LOAD" write --server "https://127.0.0.1:$PORT" --auth "$AUTH" --name ek \
  --threads 8 --seconds 16 --out "$WORK/ek.acked" >"$WORK/ek.write.json" &
WRITER=$!
sleep 4
kill -9 "$ETCD_PID"; wait "$ETCD_PID" 2>/dev/null
DOWN_AT=$SECONDS
# One write and one read while etcd is down, each with ?timeout=2s: kube-apiserver's etcd
# client holds a request until its deadline, so the client reads the timeout filter's 504 (the
# filter answers before the handler can, for a write as for a read).
OUTAGE="$(python3 - "$PORT" "$AUTH" <<'PY' 2>&1
import json, ssl, sys, http.client, os
port, auth = sys.argv[1:3]
ctx = ssl.create_default_context(cafile=os.path.join(auth, "ca.crt"))
ctx.load_cert_chain(os.path.join(auth, "client.crt"), os.path.join(auth, "client.key"))
def call(method, path, body=None):
    c = http.client.HTTPSConnection("127.0.0.1", int(port), context=ctx, timeout=30)
    c.request(method, path, body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse(); b = r.read()
    try:
        s = json.loads(b)
    except ValueError:
        s = {}
    return {"code": r.status, "reason": s.get("reason"), "message": s.get("message")}
cm = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "during-outage"}})
print(json.dumps({
    "write": call("POST", "/api/v1/namespaces/default/configmaps?timeout=2s", cm),
    "read": call("GET", "/api/v1/namespaces/default/configmaps?timeout=2s"),
}))
PY
)"
echo "      while etcd is down: $OUTAGE"
if json_field "$OUTAGE" 'd["write"] == {"code": 504, "reason": "Timeout", "message": "Timeout: request did not complete within the allotted timeout"}' | grep -qx True; then
  pass "a write while etcd is down: 504 Timeout, upstream's wording"
else fail "a write while etcd is down: 504 Timeout, upstream's wording"; fi
if json_field "$OUTAGE" 'd["read"] == {"code": 504, "reason": "Timeout", "message": "Timeout: request did not complete within the allotted timeout"}' | grep -qx True; then
  pass "a read while etcd is down: 504 Timeout, upstream's wording"
else fail "a read while etcd is down: 504 Timeout, upstream's wording"; fi
sleep $(( DOWN_AT + 4 > SECONDS ? DOWN_AT + 4 - SECONDS : 0 ))
start_etcd
wait "$WRITER"
wait "$WATCHER"
OUT="$(cat "$WORK/ek.write.json")"
echo "      writers: $OUT"
if json_field "$OUT" 'all(int(c) in (0, 201, 409, 429, 500, 503, 504) for c in d["codes"])' | grep -qx True; then
  pass "writers saw only success, 409, 429, 5xx or no answer while etcd was down"
else fail "a wrong answer while etcd was down"; fi
OUT="$(cat "$WORK/ek.watch.json")"
echo "      watcher: $OUT"
if [ "$(json_field "$OUT" 'len(d["violations"])')" = 0 ]; then pass "resourceVersions only grow within each watch"; else fail "a watch went back in time"; fi
run_cmd python3 "$LOAD" check --server "https://127.0.0.1:$PORT" --auth "$AUTH" --acked "$WORK/ek.acked" --seen "$WORK/ek.seen"
if [ "$(json_field "$OUT" 'd["lost_count"]')" = 0 ]; then pass "no acknowledged write lost across the etcd restart"; else fail "acknowledged writes lost"; fi
if [ "$(json_field "$OUT" 'd["watch_missed"]')" = 0 ]; then pass "the watcher (re-listing when its watch ended) saw every acknowledged write"; else fail "the watcher missed acknowledged writes"; fi
kill "$KAPI_PID"; wait "$KAPI_PID" 2>/dev/null; KAPI_PID=""

# ---- 2. a second kapi on the same data directory --------------------------------------------
LABEL=faults-lock
start_kapi_embedded one
k create configmap before-second --from-literal=a=b >/dev/null
SECOND_LOG="$WORK/second.log"
files_state() { stat -c '%n %Y %s' "$WORK/kapi-one/admin.kubeconfig" "$WORK/kapi-one/pki/"*; }
BEFORE="$(files_state)"
timeout 30 "$KAPI_BIN" --secure-port "$(free_port)" --data-dir "$WORK/kapi-one" >/dev/null 2>"$SECOND_LOG"
RC=$?
OUT="$(cat "$SECOND_LOG")"
if [ "$RC" -ne 0 ] && [ "$RC" -ne 124 ]; then pass "a second kapi on the same --data-dir exits at once (status $RC)"; else fail "the second kapi did not exit with an error (status $RC)"; fi
if grep -Fq "the data directory $WORK/kapi-one/store is in use by another kapi process (pid $KAPI_PID)" "$SECOND_LOG"; then
  pass "its error names the directory and the holder"; else fail "its error names the directory and the holder"; fi
expect_eq "the second left the first's kubeconfig and certificates alone" "$BEFORE" files_state
expect_eq "the first keeps serving, its data untouched" "before-second" k get configmap before-second -o 'jsonpath={.metadata.name}'
kill "$KAPI_PID"; wait "$KAPI_PID" 2>/dev/null; KAPI_PID=""

# ---- 3. a full disk under the embedded store ------------------------------------------------
LABEL=faults-disk
DISK="$WORK/kapi-disk"
mkdir -p "$DISK"
if mount -t tmpfs -o size=24m tmpfs "$DISK" 2>"$WORK/mount.err"; then
  MOUNTED="$DISK"
  start_kapi_embedded disk
  auth_files disk
  for i in $(seq 1 20); do k create configmap "kept-$i" --from-literal=a=b >/dev/null || fail "create kept-$i"; done
  # Fill the file system, then write 900 KiB objects until one is refused.
  dd if=/dev/zero of="$DISK/filler" bs=1M status=none 2>/dev/null
  OUT="$(python3 - "$PORT" "$AUTH" <<'PY' 2>&1
import json, ssl, sys, http.client, os
port, auth = sys.argv[1:3]
ctx = ssl.create_default_context(cafile=os.path.join(auth, "ca.crt"))
ctx.load_cert_chain(os.path.join(auth, "client.crt"), os.path.join(auth, "client.key"))
codes, status, acked = [], None, []
for i in range(40):
    c = http.client.HTTPSConnection("127.0.0.1", int(port), context=ctx, timeout=30)
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"fill-{i}"},
                       "data": {"a": "x" * 900 * 1024}})
    c.request("POST", "/api/v1/namespaces/default/configmaps", body=body,
              headers={"Content-Type": "application/json"})
    r = c.getresponse(); b = r.read()
    codes.append(r.status)
    if r.status == 201:
        acked.append(f"fill-{i}")
    if r.status >= 500:
        status = json.loads(b)
        break
print(json.dumps({"codes": codes, "status": status, "acked": acked}))
PY
)"
  echo "      writes on a full disk: $(json_field "$OUT" 'd["codes"]') $(json_field "$OUT" 'd["status"] and d["status"]["message"]')"
  # No upstream twin (etcd refuses writes with its own NOSPACE alarm): a 500 InternalError
  # carrying SQLite's error, as upstream's NewInternalError words a storage failure.
  if json_field "$OUT" 'd["status"] is not None and d["status"]["kind"] == "Status" and d["status"]["code"] == 500 and d["status"]["reason"] == "InternalError" and d["status"]["message"].startswith("Internal error occurred: ") and "database or disk is full" in d["status"]["message"] and all(c == 201 for c in d["codes"][:-1])' | grep -qx True; then
    pass "a write on a full disk fails with a 500 InternalError naming the full disk"
  else fail "a write on a full disk fails with a 500 InternalError naming the full disk"; fi
  FILLED="$(json_field "$OUT" '" ".join(d["acked"])')"
  count_kept() { k get configmaps -o name | grep -c '/kept-'; }
  expect_eq "reads keep working on a full disk" 20 count_kept
  rm -f "$DISK/filler"
  RESUMED=""
  if run_cmd k create configmap after-space --from-literal=a=b; then RESUMED=after-space; pass "writes resume once space is freed"
  else fail "writes resume once space is freed"; fi
  kill "$KAPI_PID"; wait "$KAPI_PID" 2>/dev/null; KAPI_PID=""
  start_kapi_embedded disk
  WANT="$RESUMED"; for i in $(seq 1 20); do WANT="$WANT kept-$i"; done; WANT="$WANT $FILLED"
  MISSING=""
  for n in $WANT; do k get configmap "$n" -o name >/dev/null 2>&1 || MISSING="$MISSING $n"; done
  OUT="missing:$MISSING"
  if [ -z "$MISSING" ]; then pass "nothing acknowledged was lost to the full disk (after a restart)"; else fail "acknowledged objects lost to the full disk"; fi
  kill "$KAPI_PID"; wait "$KAPI_PID" 2>/dev/null; KAPI_PID=""
  umount "$DISK" && MOUNTED=""
else
  echo "SKIP: [faults-disk] cannot mount a tmpfs: $(cat "$WORK/mount.err")"
fi

# ---- 4. overload at 10x the in-flight limits ------------------------------------------------
LABEL=faults-overload
# Anonymous clients (system:masters is exempt from the limits), allowed everything. The
# max-in-flight limits themselves (priority and fairness off): under APF the same flood is
# queued fairly instead (e2e/flowcontrol.sh, the flowcontrol server tests).
start_kapi_embedded flood --max-requests-inflight 10 --max-mutating-requests-inflight 5 --request-timeout 20s \
  --authorization-mode AlwaysAllow --enable-priority-and-fairness=false
auth_files flood
OUT="$(python3 "$LOAD" flood --server "https://127.0.0.1:$PORT" --auth "$AUTH" --name flood \
  --readers 100 --writers 50 --seconds 15 --timeout 30 --pid "$KAPI_PID" 2>&1)"
echo "      overload: $OUT"
if json_field "$OUT" 'd["unanswered"] == 0 and sum(d["codes"].values()) > 0' | grep -qx True; then
  pass "at 10x the in-flight limits every request is answered within the request timeout"
else fail "requests went unanswered under overload"; fi
if json_field "$OUT" 'set(d["codes"]) <= {"200", "201", "429", "retried"}' | grep -qx True; then
  pass "the answers are successes or 429"
else fail "answers other than success or 429 under overload"; fi
if json_field "$OUT" 'd["codes"].get("429", 0) > 0' | grep -qx True; then
  pass "the in-flight limits refused the excess with 429 ($(json_field "$OUT" 'd["codes"].get("429", 0)') of $(json_field "$OUT" 'sum(d["codes"].values())'))"
else fail "no 429 at 10x the in-flight limits"; fi
# A generous ceiling, relative to the idle server measured in the same run: 10x its RSS.
if [ "$(json_field "$OUT" 'd["rss_peak_kib"] < 10 * d["rss_start_kib"]')" = True ]; then
  pass "RSS stays bounded (peak $(json_field "$OUT" 'd["rss_peak_kib"] // 1024') MiB < 10x idle $(json_field "$OUT" 'd["rss_start_kib"] // 1024') MiB)"
else fail "RSS grew past 10x idle ($(json_field "$OUT" 'd["rss_peak_kib"] // 1024') MiB, idle $(json_field "$OUT" 'd["rss_start_kib"] // 1024') MiB)"; fi
expect_ok "kapi is ready after the overload" k get --raw /readyz
kill "$KAPI_PID"; wait "$KAPI_PID" 2>/dev/null; KAPI_PID=""

summary

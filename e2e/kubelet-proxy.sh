#!/usr/bin/env bash
# The kubelet-facing subresources end to end: kapi (on etcd, then on the embedded store) with
# --kubelet-client-certificate/-key and --kubelet-certificate-authority, a kubelet stand-in
# (crates/testing, `kubelet-standin`, requiring kapi's client certificate) behind a Node on
# 127.0.0.1, a small HTTP server on loopback as the "pod", driven by real kubectl: the
# dispatcher (1.33 for kapi: WebSocket first for exec, attach and port-forward) and kubectl 1.28
# (SPDY only), and the official Python client's `kubernetes.stream` exec. Covers `kubectl logs` (-c, --tail, --since, --since-time, --limit-bytes,
# --timestamps, -f, --previous), `kubectl exec` (stdout, stderr, stdin, exit codes, errors),
# `kubectl attach`, `kubectl port-forward` (bytes through, both protocols), `kubectl get --raw`
# of nodes/proxy, pods/proxy and services/proxy, `kubectl debug` (pods/ephemeralcontainers),
# discovery, and upstream's Status for a pod without a node, a node without an address, a node
# that does not exist and an unreachable kubelet. Network: loopback only.
#
#   KAPI_BIN=path/to/kapi-apiserver STANDIN_BIN=path/to/kubelet-standin e2e/kubelet-proxy.sh
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=e2e/lib.sh
. "$ROOT/e2e/lib.sh"

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/kapi-target}"
if [ -z "${STANDIN_BIN:-}" ]; then
  cargo build -q -p kapi-testing --bin kubelet-standin || { echo "e2e: build failed" >&2; exit 1; }
  STANDIN_BIN="$CARGO_TARGET_DIR/debug/kubelet-standin"
fi

e2e_init kubelet-proxy
PY_ENV=$(py_env) || { echo "e2e: could not install the Python client" >&2; exit 1; }
e2e_start_etcd
KUBECTL_128=/usr/lib/google-cloud-sdk/bin/kubectl.1.28
k128() { "$KUBECTL_128" --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$CACHE" "$@"; }

# The stand-in kubelet, requiring kapi's client certificate.
"$STANDIN_BIN" --address 127.0.0.1 --port 0 --dir "$WORK/kubelet" --require-client-cert \
  >"$WORK/kubelet.log" 2>&1 &
PIDS+=($!)
wait_until 20 test -s "$WORK/kubelet/port" || { echo "e2e: the kubelet stand-in did not start"; exit 1; }
KUBELET_PORT=$(cat "$WORK/kubelet/port")
# The "pod": an HTTP server on loopback.
mkdir -p "$WORK/www" && echo "hello from the pod" >"$WORK/www/index.html"
POD_PORT=$(free_port)
(cd "$WORK/www" && exec python3 -m http.server "$POD_PORT" --bind 127.0.0.1) >/dev/null 2>&1 &
PIDS+=($!)
wait_until 20 curl -sf -o /dev/null "http://127.0.0.1:$POD_PORT/" || { echo "e2e: the pod server did not start"; exit 1; }
# A port that refuses connections for the whole run: bound but never listening, so that no
# server the other suites start at the same time can take it (a free port could be).
python3 -c 'import socket, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True)
time.sleep(86400)' >"$WORK/dead-port" &
PIDS+=($!)
wait_until 10 test -s "$WORK/dead-port" || { echo "e2e: could not hold a refusing port"; exit 1; }
DEAD_PORT=$(cat "$WORK/dead-port")

KFLAGS=(--kubelet-certificate-authority "$WORK/kubelet/ca.crt"
  --kubelet-client-certificate "$WORK/kubelet/kapi-client.crt"
  --kubelet-client-key "$WORK/kubelet/kapi-client.key"
  --kubelet-preferred-address-types InternalIP,Hostname
  --allow-loopback-proxy-targets)

# objects: the nodes, pods, service and endpoints the cases use.
objects() {
  k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: Node
metadata: {name: noaddr}
---
apiVersion: v1
kind: Node
metadata: {name: dead}
---
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  nodeName: n1
  containers: [{name: a, image: nginx, ports: [{containerPort: $POD_PORT}]}]
---
apiVersion: v1
kind: Pod
metadata: {name: multi}
spec:
  nodeName: n1
  initContainers: [{name: i, image: busybox}]
  containers: [{name: a, image: busybox}, {name: b, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {name: kubelet-error}
spec:
  nodeName: n1
  containers: [{name: a, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {name: pending}
spec:
  containers: [{name: a, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {name: lost}
spec:
  nodeName: noaddr
  containers: [{name: a, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {name: orphan}
spec:
  nodeName: nowhere
  containers: [{name: a, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {name: unreachable}
spec:
  nodeName: dead
  containers: [{name: a, image: busybox}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  ports: [{name: http, port: 80, targetPort: $POD_PORT}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: web}
subsets:
- addresses: [{ip: 127.0.0.1, targetRef: {kind: Pod, name: web, namespace: default}}]
  ports: [{name: http, port: $POD_PORT}]
EOF
  k patch node n1 --subresource=status --type=merge \
    -p "{\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"127.0.0.1\"}],\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":$KUBELET_PORT}}}}" >/dev/null
  k patch node dead --subresource=status --type=merge \
    -p "{\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"127.0.0.1\"}],\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":$DEAD_PORT}}}}" >/dev/null
  for p in web multi; do
    k patch pod "$p" --subresource=status --type=merge \
      -p '{"status":{"phase":"Running","podIP":"127.0.0.1","podIPs":[{"ip":"127.0.0.1"}]}}' >/dev/null
  done
}

# forward KUBECTL-FN [ENV]: `port-forward` to the pod, then fetches through it.
forward() {
  local local_port out; local_port=$(free_port)
  env "${@:2}" "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$CACHE" \
    port-forward pod/web "$local_port:$POD_PORT" >"$WORK/pf.log" 2>&1 &
  local pid=$!
  wait_until 15 curl -sf -o /dev/null "http://127.0.0.1:$local_port/" || true
  out=$(curl -s "http://127.0.0.1:$local_port/index.html")
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  echo "$out"
}

verbs() { k get --raw /api/v1 | python3 -c "
import json,sys
r={x['name']:x['verbs'] for x in json.load(sys.stdin)['resources']}
print(' '.join(n+'='+','.join(r.get(n,['-'])) for n in sys.argv[1:]))" "$@"; }

run_cases() {
  objects
  expect_eq "discovery: the connect subresources and their verbs, as kube-apiserver lists them" \
    "pods/log=get pods/exec=create,get pods/attach=create,get pods/portforward=create,get pods/proxy=create,delete,get,patch,update nodes/proxy=create,delete,get,patch,update services/proxy=create,delete,get,patch,update pods/ephemeralcontainers=get,patch,update" \
    verbs pods/log pods/exec pods/attach pods/portforward pods/proxy nodes/proxy services/proxy pods/ephemeralcontainers

  # logs
  expect_eq "logs: the container's log through the kubelet" \
    "$(printf 'line %s of web/a\n' 1 2 3 4 5)" k logs web
  expect_eq "logs --tail=2" "$(printf 'line %s of web/a\n' 4 5)" k logs web --tail=2
  expect_eq "logs --since=15s" "$(printf 'line %s of web/a\n' 4 5)" k logs web --since=15s
  expect_eq "logs --since-time" "$(printf 'line %s of web/a\n' 3 4 5)" \
    k logs web --since-time="$(date -u -d '-25 seconds' +%Y-%m-%dT%H:%M:%SZ)"
  expect_eq "logs --limit-bytes=10" "line 1 of " k logs web --limit-bytes=10
  expect_out "logs --timestamps" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z line 5 of web/a$' k logs web --tail=1 --timestamps
  expect_eq "logs -c b" "line 5 of multi/b" k logs multi -c b --tail=1
  expect_eq "logs -f streams until the kubelet ends it" \
    "$(printf 'line 5 of web/a\nfollow 1 of web/a\nfollow 2 of web/a\nfollow 3 of web/a')" k logs web -f --tail=1
  expect_eq "logs --previous" "$(printf 'previous %s of web/a\n' 1 2)" k logs web --previous
  expect_fail "logs: several containers and none named is upstream's 400" \
    "a container name must be specified for pod multi, choose one of: [i a b]" \
    k get --raw /api/v1/namespaces/default/pods/multi/log
  expect_fail "logs: an unknown container" "container z is not valid for pod multi" k logs multi -c z
  expect_eq "logs: a pod not on a node answers 204, nothing" "" k logs pending
  expect_fail "logs: a node without an address" "no preferred addresses found; known addresses: []" k logs lost
  expect_fail "logs: a node that does not exist is named under pods, as upstream" 'pods "nowhere" not found' k logs orphan
  expect_fail "logs: an unreachable kubelet" \
    "Get \"https://127.0.0.1:$DEAD_PORT/containerLogs/default/unreachable/a\": dial tcp 127.0.0.1:$DEAD_PORT: connect: connection refused" \
    k logs unreachable
  expect_fail "logs: a kubelet's refusal is upstream's generic server response" \
    'an error on the server ("container \"a\" in pod \"kubelet-error\" is waiting to start") has prevented the request from succeeding ( pods/log kubelet-error)' \
    k logs kubelet-error
  expect_fail "logs: invalid options are upstream's 422" \
    'tailLines: Invalid value: -1: must be greater than or equal to 0' \
    k get --raw '/api/v1/namespaces/default/pods/web/log?tailLines=-1&limitBytes=0'

  # exec (1.33: WebSocket v5, translated to SPDY for the kubelet; 1.28: SPDY spliced)
  # kubectl's stderr is left out here and below: the server's first (empty) stdout message,
  # which says the session is up (as kube-apiserver's), can reach kubectl before it has made its
  # stdout stream, and then it logs "Unknown stream id 1, discarding message" (a client race).
  expect_eq "exec over WebSocket: stdout" "hello world" \
    sh -c "$KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE exec web -- echo hello world 2>/dev/null"
  expect_eq "exec over SPDY (kubectl 1.28)" "hello spdy" k128 exec web -- echo hello spdy
  expect_eq "exec over SPDY (kubectl 1.33, WebSocket off)" "hello" \
    env KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$CACHE" exec web -- echo hello
  expect_eq "exec -i over WebSocket: stdin to the command" "from stdin" \
    sh -c "echo 'from stdin' | $KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE exec -i web -- cat 2>/dev/null"
  expect_eq "exec -i over SPDY" "from stdin" \
    sh -c "echo 'from stdin' | $KUBECTL_128 --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE exec -i web -- cat"
  for kc in k k128; do
    run_cmd "$kc" exec web -- sh -c 'echo out; echo err >&2; exit 3'
    if [ $? -eq 3 ] && grep -q "command terminated with exit code 3" <<<"$OUT" && grep -q '^err$' <<<"$OUT"; then
      pass "exec ($kc): stderr and the exit code reach kubectl"
    else fail "exec ($kc): stderr and the exit code reach kubectl"; fi
  done
  expect_fail "exec: a failing exec is the kubelet's internal error" 'executable file not found in $PATH' k exec web -- nosuch
  expect_fail "exec: a pod without a node" "pod pending does not have a host assigned" k exec pending -- ls
  expect_fail "exec: a node without an address" "no preferred addresses found; known addresses: []" k128 exec lost -- ls
  expect_fail "exec over SPDY: an unreachable kubelet" \
    "error dialing backend: dial tcp 127.0.0.1:$DEAD_PORT: connect: connection refused" k128 exec unreachable -- ls
  expect_fail "exec over WebSocket: an unreachable kubelet (the translator's words)" \
    "dial tcp 127.0.0.1:$DEAD_PORT: connect: connection refused" k exec unreachable -- ls
  expect_fail "exec without an upgrade is upstream's 400" "Upgrade request required" \
    k create --raw '/api/v1/namespaces/default/pods/web/exec?command=ls&stdout=true' -f /dev/null
  expect_eq "attach -i over WebSocket" "$(printf 'attached to web/a\nhello attach')" \
    sh -c "echo 'hello attach' | $KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE attach -i web -c a 2>/dev/null"
  expect_eq "attach -i over SPDY" "$(printf 'attached to web/a\nhello attach')" \
    sh -c "echo 'hello attach' | $KUBECTL_128 --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE attach -i web -c a 2>/dev/null"

  # the official Python client (WebSocket v4, passed to the kubelet as it is)
  run_cmd "$PY_ENV/bin/python" "$ROOT/e2e/python/exec_stream.py" "$KUBECONFIG_FILE" web
  while IFS= read -r line; do
    case "$line" in
      "PASS: "*) pass "${line#PASS: }" ;;
      "FAIL: "*) fail "${line#FAIL: }" ;;
    esac
  done <<<"$OUT"
  grep -q '^PASS: ' <<<"$OUT" || fail "python exec suite ran no case"

  # port-forward (1.33: SPDY tunneled in WebSocket; WebSocket off and 1.28: SPDY)
  expect_eq "port-forward over WebSocket tunneling: bytes through" "hello from the pod" forward k
  expect_eq "port-forward over SPDY" "hello from the pod" forward k KUBECTL_PORT_FORWARD_WEBSOCKETS=false

  # proxies
  expect_eq "nodes/proxy: the kubelet's answer" "kubelet stand-in: GET /healthz" k get --raw /api/v1/nodes/n1/proxy/healthz
  expect_eq "nodes/proxy: path and query passed on" "kubelet stand-in: GET /stats/summary?only=cpu" \
    k get --raw '/api/v1/nodes/n1/proxy/stats/summary?only=cpu'
  expect_eq "pods/proxy: the pod's answer" "hello from the pod" k get --raw /api/v1/namespaces/default/pods/web/proxy/index.html
  expect_eq "pods/proxy with a port" "hello from the pod" k get --raw "/api/v1/namespaces/default/pods/web:$POD_PORT/proxy/index.html"
  expect_eq "services/proxy: through the endpoints" "hello from the pod" k get --raw /api/v1/namespaces/default/services/web:http/proxy/index.html
  expect_fail "services/proxy: an unknown port" 'no service port 81 found for service "web"' \
    k get --raw /api/v1/namespaces/default/services/web:81/proxy/
  expect_fail "nodes/proxy: a node without an address" "no preferred addresses found; known addresses: []" \
    k get --raw /api/v1/nodes/noaddr/proxy/
  expect_fail "nodes/proxy: an unknown node" 'nodes "nowhere" not found' k get --raw /api/v1/nodes/nowhere/proxy/
  expect_fail "pods/proxy: an id with too many parts" 'invalid pod request "a:b:c:d"' \
    k get --raw /api/v1/namespaces/default/pods/a:b:c:d/proxy/

  # pods/ephemeralcontainers
  expect_ok "kubectl debug adds an ephemeral container" k debug web --image=busybox -c debugger
  expect_eq "the pod carries it" "debugger" k get pod web -o jsonpath='{.spec.ephemeralContainers[*].name}'
  expect_eq "GET pods/ephemeralcontainers is the pod" "Pod web" \
    sh -c "$KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $CACHE get --raw /api/v1/namespaces/default/pods/web/ephemeralcontainers | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d[\"kind\"], d[\"metadata\"][\"name\"])'"
  expect_fail "an ephemeral container may not be removed" 'may not be removed' \
    k patch pod web --subresource=ephemeralcontainers --type=json -p '[{"op":"remove","path":"/spec/ephemeralContainers/0"}]'
  expect_fail "an ephemeral container may not set ports" 'ports: Forbidden: cannot be set for an Ephemeral Container' \
    k patch pod web --subresource=ephemeralcontainers --type=json \
    -p '[{"op":"add","path":"/spec/ephemeralContainers/-","value":{"name":"d2","image":"busybox","ports":[{"containerPort":80}]}}]'
  k delete pod web multi kubelet-error pending lost orphan unreachable --wait=false >/dev/null 2>&1
}

for backend in etcd embedded; do
  LABEL="kubelet-proxy-$backend"
  CACHE="$WORK/cache-$backend"
  if [ "$backend" = etcd ]; then start_kapi_on_etcd kp "${KFLAGS[@]}"; else start_kapi_embedded kp "${KFLAGS[@]}"; fi
  run_cases
done

summary

"""Load for e2e/ha.sh: writers creating ConfigMaps and NodePort Services spread over several
kapi replicas, and one ConfigMap watcher per replica.

Each writer prefers one replica; when a request fails without an answer (connection refused or
reset, timeout) or with a 5xx, it retries the same object on the next replica, and an
AlreadyExists on a retry means an earlier attempt was written. Acknowledged objects go to
<out>/acked-<writer>.txt as "kind name"; each watcher writes "TYPE name resourceVersion" lines
to <out>/watch-<replica>.txt, resuming from the last resourceVersion when its stream ends.
Only the standard library is used, so the script runs wherever python3 does.
"""

import argparse
import http.client
import json
import os
import socket
import ssl
import threading
import time
from urllib.parse import urlparse


def context(args):
    ctx = ssl.create_default_context(cafile=args.ca)
    ctx.load_cert_chain(args.cert, args.key)
    return ctx


def connect(server, ctx, timeout):
    u = urlparse(server)
    return http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=timeout)


def body_for(kind, name, ns):
    if kind == "configmaps":
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": ns}, "data": {"k": name}}
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"type": "NodePort", "ports": [{"port": 80, "protocol": "TCP"}]}}


def writer(i, args, ctx, stop_at, out):
    servers = args.servers
    home = i % len(servers)
    conns = {}
    written = 0
    services = 0
    with open(os.path.join(out, "acked-%d.txt" % i), "w") as acked, \
            open(os.path.join(out, "errors-%d.txt" % i), "w") as errors:
        n = 0
        while time.time() < stop_at:
            n += 1
            kind = "services" if (n % 5 == 0 and services < args.max_services) else "configmaps"
            if kind == "services":
                services += 1
            name = "w%d-%d" % (i, n)
            payload = json.dumps(body_for(kind, name, args.ns))
            ok = False
            for attempt in range(len(servers) * 3):
                s = (home + attempt) % len(servers)
                try:
                    c = conns.get(s) or connect(servers[s], ctx, args.request_timeout)
                    conns[s] = c
                    c.request("POST", "/api/v1/namespaces/%s/%s" % (args.ns, kind), payload,
                              {"Content-Type": "application/json"})
                    r = c.getresponse()
                    data = r.read()
                except (OSError, http.client.HTTPException, socket.timeout) as e:
                    conns.pop(s, None)
                    errors.write("%s %s attempt %d on %d: %s\n" % (kind, name, attempt, s, e))
                    time.sleep(0.2)
                    continue
                if r.status == 201 or (r.status == 409 and attempt > 0 and b"AlreadyExists" in data):
                    ok = True
                    break
                errors.write("%s %s attempt %d on %d: HTTP %d %s\n"
                             % (kind, name, attempt, s, r.status, data[:300]))
                if r.status < 500 and r.status != 429:
                    break
                time.sleep(0.2)
            if ok:
                acked.write("%s %s\n" % (kind, name))
                acked.flush()
                written += 1
    return written


def watcher(r, args, ctx, stop, out):
    rv = args.watch_rv
    with open(os.path.join(out, "watch-%d.txt" % r), "w") as f:
        while not stop.is_set():
            try:
                c = connect(args.servers[r], ctx, 5)
                c.request("GET", "/api/v1/namespaces/%s/configmaps?watch=1&resourceVersion=%s"
                          % (args.ns, rv))
                resp = c.getresponse()
                if resp.status != 200:
                    f.write("# HTTP %d %s\n" % (resp.status, resp.read()[:200]))
                    time.sleep(0.5)
                    continue
                while not stop.is_set():
                    try:
                        line = resp.readline()
                    except socket.timeout:
                        continue
                    if not line:
                        break
                    ev = json.loads(line)
                    obj = ev.get("object", {})
                    if ev.get("type") == "ERROR":
                        f.write("# ERROR %s\n" % obj.get("message"))
                        break
                    meta = obj.get("metadata", {})
                    rv = meta.get("resourceVersion", rv)
                    if ev.get("type") != "BOOKMARK":
                        f.write("%s %s %s\n" % (ev["type"], meta.get("name"), rv))
                        f.flush()
            except (OSError, http.client.HTTPException, ValueError) as e:
                f.write("# reconnecting after %s\n" % e)
                f.flush()
                time.sleep(0.5)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--servers", required=True, type=lambda s: s.split(","))
    p.add_argument("--ca", required=True)
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--ns", default="ha")
    p.add_argument("--writers", type=int, default=16)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--max-services", type=int, default=60)
    p.add_argument("--request-timeout", type=float, default=20)
    p.add_argument("--watch-rv", required=True)
    p.add_argument("--settle", type=float, default=5, help="seconds watchers keep reading after the writers end")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    ctx = context(args)
    stop = threading.Event()
    watchers = [threading.Thread(target=watcher, args=(r, args, ctx, stop, args.out), daemon=True)
                for r in range(len(args.servers))]
    for t in watchers:
        t.start()
    stop_at = time.time() + args.seconds
    results = [0] * args.writers

    def run(i):
        results[i] = writer(i, args, ctx, stop_at, args.out)

    writers = [threading.Thread(target=run, args=(i,)) for i in range(args.writers)]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    time.sleep(args.settle)
    stop.set()
    print("acknowledged %d writes" % sum(results))


if __name__ == "__main__":
    main()

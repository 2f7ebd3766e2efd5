#!/usr/bin/env python3
"""Load and watch helpers for e2e/faults.sh (standard library only).

  load.py write  --server URL --auth DIR --name P --threads N --seconds S --out FILE
      N writers create ConfigMaps P-<thread>-<n> for S seconds over kept-alive HTTPS
      connections, retrying through failures. Every 201 is acknowledged (one name per line in
      FILE); every other answer is counted by status (0: no answer). Prints a JSON summary.
  load.py watch  --server URL --auth DIR --seconds S --out FILE
      Lists then watches ConfigMaps for S seconds; a watch that ends is followed by a re-list.
      Checks resourceVersions only grow within a watch. Writes every name seen to FILE and
      prints a JSON summary.
  load.py check  --server URL --auth DIR --acked FILE [--seen FILE]
      Lists ConfigMaps and prints how many acknowledged names are missing (and, with --seen,
      how many the watcher missed).

  load.py flood  --server URL --auth DIR --readers R --writers W --seconds S --timeout T --pid P
      R clients list and W clients create, each with its own connection and as fast as answers
      come, for S seconds; a request unanswered within T seconds counts as no answer. Samples
      the RSS of process P. Anonymous (the admin is never refused for load). Prints answers by status, the unanswered count and the RSS peak.

DIR holds ca.crt, client.crt and client.key.
"""
import argparse, http.client, json, os, ssl, sys, threading, time, urllib.parse

NS = "default"
PATH = f"/api/v1/namespaces/{NS}/configmaps"


def context(auth, anonymous=False):
    ctx = ssl.create_default_context(cafile=os.path.join(auth, "ca.crt"))
    if not anonymous:
        ctx.load_cert_chain(os.path.join(auth, "client.crt"), os.path.join(auth, "client.key"))
    return ctx


def connect(server, ctx, timeout):
    u = urllib.parse.urlparse(server)
    return http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=timeout)


def request(conn, method, path, body=None):
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    conn.request(method, path, body=body, headers=headers)
    r = conn.getresponse()
    return r.status, r.read()


def write(a):
    ctx = context(a.auth)
    deadline = time.time() + a.seconds
    lock = threading.Lock()
    codes, acked = {}, []

    def worker(tid):
        conn, n = None, 0
        while time.time() < deadline:
            name = f"{a.name}-{tid}-{n}"
            body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": name}, "data": {"n": str(n)}})
            try:
                if conn is None:
                    conn = connect(a.server, ctx, 15)
                status, _ = request(conn, "POST", PATH, body)
            except Exception:
                status = 0
                if conn is not None:
                    conn.close()
                conn = None
                time.sleep(0.05)
            with lock:
                codes[status] = codes.get(status, 0) + 1
                if status == 201:
                    acked.append(name)
            if status in (201, 409):
                n += 1  # stored (409: by an earlier try whose answer was lost)
            elif status in (429, 500, 503, 504):
                time.sleep(0.05)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(a.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(a.out, "w") as f:
        f.write("".join(n + "\n" for n in acked))
    print(json.dumps({"acked": len(acked), "codes": {str(k): v for k, v in sorted(codes.items())}}))


def list_names(server, ctx):
    conn = connect(server, ctx, 30)
    status, body = request(conn, "GET", PATH)
    conn.close()
    if status != 200:
        raise RuntimeError(f"list: {status} {body[:200]!r}")
    lst = json.loads(body)
    return {i["metadata"]["name"] for i in lst["items"]}, lst["metadata"]["resourceVersion"]


def watch(a):
    ctx = context(a.auth)
    deadline = time.time() + a.seconds
    seen, streams, relists, violations, errors = set(), 0, 0, [], 0
    rv = None
    while time.time() < deadline:
        try:
            if rv is None:
                names, rv = list_names(a.server, ctx)
                seen |= names
                relists += 1
            left = max(1, int(deadline - time.time()))
            conn = connect(a.server, ctx, left + 30)
            conn.request("GET", f"{PATH}?watch=1&allowWatchBookmarks=true&timeoutSeconds={left}&resourceVersion={rv}")
            r = conn.getresponse()
            if r.status != 200:
                r.read()
                conn.close()
                rv = None
                time.sleep(0.2)
                continue
            streams += 1
            last = int(rv)
            while True:
                line = r.readline()
                if not line:
                    break
                ev = json.loads(line)
                if ev["type"] == "ERROR":
                    rv = None  # e.g. 410 Expired: re-list
                    break
                cur = int(ev["object"]["metadata"]["resourceVersion"])
                if cur < last or (cur == last and ev["type"] != "BOOKMARK"):
                    violations.append(f"{ev['type']} at {cur} after {last}")
                last = cur
                rv = str(cur)
                if ev["type"] in ("ADDED", "MODIFIED"):
                    seen.add(ev["object"]["metadata"]["name"])
            conn.close()
        except Exception:
            # The server or its storage went away mid-watch: the stream ended; re-list.
            errors += 1
            rv = None
            time.sleep(0.2)
    with open(a.out, "w") as f:
        f.write("".join(n + "\n" for n in sorted(seen)))
    print(json.dumps({"streams": streams, "relists": relists, "errors": errors,
                      "violations": violations[:5], "seen": len(seen)}))


def check(a):
    ctx = context(a.auth)
    names, _ = list_names(a.server, ctx)
    acked = [l.strip() for l in open(a.acked) if l.strip()]
    out = {"acked": len(acked), "stored": len(names), "lost": sorted(set(acked) - names)[:10]}
    out["lost_count"] = len(set(acked) - names)
    if a.seen:
        seen = {l.strip() for l in open(a.seen) if l.strip()}
        out["watch_missed"] = len(set(acked) - seen)
    print(json.dumps(out))


def rss_kib(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def flood(a):
    # Anonymous: system:masters (the admin certificate) is never refused for load.
    ctx = context(a.auth, anonymous=True)
    deadline = time.time() + a.seconds
    lock = threading.Lock()
    codes, unanswered, failures = {}, [0], []  # list.append is atomic
    peak = [rss_kib(a.pid)]
    start_rss = peak[0]

    def client(tid, writer):
        conn, n, reused = None, 0, False
        while time.time() < deadline:
            try:
                if conn is None:
                    conn, reused = connect(a.server, ctx, a.timeout), False
                    conn.connect()
                if writer:
                    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                       "metadata": {"name": f"{a.name}-{tid}-{n}"}})
                    status, _ = request(conn, "POST", PATH, body)
                    n += 1
                else:
                    status, _ = request(conn, "GET", PATH + "?limit=50")
            except Exception as e:
                # A kept-alive connection the server closed as the request went out (the race
                # every HTTP/1.1 client has) is retried on a new one, as Go's transport does;
                # anything else is a request without an answer.
                status = "retried" if reused else None
                failures.append(f"{'reused' if reused else 'new'} connection: {type(e).__name__}: {e}")
                if conn is not None:
                    conn.close()
                conn = None
            reused = conn is not None
            with lock:
                if status is None:
                    unanswered[0] += 1
                else:
                    codes[status] = codes.get(status, 0) + 1

    def sampler():
        while time.time() < deadline:
            peak[0] = max(peak[0], rss_kib(a.pid))
            time.sleep(0.2)

    threads = [threading.Thread(target=client, args=(i, False)) for i in range(a.readers)]
    threads += [threading.Thread(target=client, args=(i, True)) for i in range(a.writers)]
    threads.append(threading.Thread(target=sampler))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"codes": {str(k): v for k, v in sorted(codes.items())},
                      "unanswered": unanswered[0], "failures": failures[:5],
                      "rss_start_kib": start_rss, "rss_peak_kib": peak[0]}))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cmd", choices=["write", "watch", "check", "flood"])
    p.add_argument("--server", required=True)
    p.add_argument("--auth", required=True)
    p.add_argument("--name", default="w")
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--out")
    p.add_argument("--acked")
    p.add_argument("--seen")
    p.add_argument("--readers", type=int, default=0)
    p.add_argument("--writers", type=int, default=0)
    p.add_argument("--timeout", type=float, default=75)
    p.add_argument("--pid", type=int, default=0)
    a = p.parse_args()
    {"write": write, "watch": watch, "check": check, "flood": flood}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())

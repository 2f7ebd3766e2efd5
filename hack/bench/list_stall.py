#!/usr/bin/env python3
"""Small requests beside large LISTs: creates N ConfigMaps of ~3 KB, then GETs a Namespace with
resourceVersion=0 every 10 ms, alone and beside two loops of `curl` LISTing all ConfigMaps
(consistent reads), and prints the GETs' p50/p99/max and how many LISTs were answered.
Standard library only (the admin kubeconfig's embedded client certificate); run by
hack/bench/list-stall.sh.

    list_stall.py KUBECONFIG N ALONE_S BESIDE_S pretty|json
"""
import base64
import http.client
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlparse

kubeconfig, n, alone_s, beside_s, mode = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]


def field(text, key):
    """The first `key: value` of the kubeconfig (written by the server or hack/reference-pki.sh)."""
    for line in text.splitlines():
        k, _, v = line.strip().partition(":")
        if k == key:
            return v.strip()
    raise SystemExit(f"list-stall: no {key} in {kubeconfig}")


text = open(kubeconfig).read()
tmp = tempfile.mkdtemp()


def write(name, key):
    path = os.path.join(tmp, name)
    with open(path, "wb") as f:
        f.write(base64.b64decode(field(text, key)))
    return path


ca, cert, key = write("ca", "certificate-authority-data"), write("crt", "client-certificate-data"), write("key", "client-key-data")
server = field(text, "server")
url = urlparse(server)
ctx = ssl.create_default_context(cafile=ca)
ctx.load_cert_chain(cert, key)
local = threading.local()


def request(method, path, body=None):
    conn = getattr(local, "conn", None)
    if conn is None:
        conn = local.conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx)
    conn.request(method, path, body=body, headers={"Content-Type": "application/json", "Accept": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    return resp.status, data


def create(i):
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}, "data": {"d": "x" * 3000}})
    status, data = request("POST", "/api/v1/namespaces/default/configmaps", body)
    if status not in (201, 409):
        raise SystemExit(f"list-stall: create answered {status}: {data[:200]!r}")


began = time.time()
with ThreadPoolExecutor(16) as pool:
    list(pool.map(create, range(n)))
print(f"list-stall: {n} ConfigMaps created in {time.time() - began:.0f} s", flush=True)


def probe(seconds):
    lat = []
    end = time.time() + seconds
    while time.time() < end:
        t = time.perf_counter()
        status, _ = request("GET", "/api/v1/namespaces/default?resourceVersion=0")
        if status != 200:
            raise SystemExit(f"list-stall: GET answered {status}")
        lat.append(time.perf_counter() - t)
        time.sleep(0.01)
    lat.sort()
    return lat


# curl's own User-Agent makes both servers pretty-print (the general path); `json` sends
# another User-Agent and asks for JSON, which kapi writes from the cache's encoded items.
extra = [] if mode == "pretty" else ["-A", "list-stall/1.0", "-H", "Accept: application/json"]
stop = threading.Event()
lists, failed = [], []


def lister():
    while not stop.is_set():
        t = time.perf_counter()
        code = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", ca, "--cert", cert,
                               "--key", key, *extra, f"{server}/api/v1/configmaps"], capture_output=True, text=True).stdout
        (lists if code == "200" else failed).append(time.perf_counter() - t)


def ms(lat, q):
    return lat[min(len(lat) - 1, int(len(lat) * q))] * 1000


alone = probe(alone_s)
threads = [threading.Thread(target=lister) for _ in range(2)]
for t in threads:
    t.start()
beside = probe(beside_s)
stop.set()
for t in threads:
    t.join()
print(f"summary gets_alone={len(alone)} alone_p50_ms={ms(alone, .5):.1f} alone_p99_ms={ms(alone, .99):.1f} "
      f"gets_beside={len(beside)} beside_p50_ms={ms(beside, .5):.1f} beside_p99_ms={ms(beside, .99):.1f} "
      f"beside_max_ms={beside[-1] * 1000:.1f} lists={len(lists)} lists_failed={len(failed)} "
      f"list_mean_s={sum(lists) / max(len(lists), 1):.2f}", flush=True)

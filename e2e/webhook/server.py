#!/usr/bin/env python3
"""A test admission webhook for e2e/admission-dynamic.sh (stdlib only).

  server.py PORT CERT KEY RECORD_DIR

Paths:
  /validate   denies objects labelled deny=true (code 403), warns on every request
  /mutate     adds the label mutated=true (a JSONPatch)
  /slow       waits 5 s, then allows
  /garbage    answers a body that is not JSON
  /wronguid   answers with another request's uid
  /status500  answers HTTP 500
Every request is written to RECORD_DIR/<path>.json (the last one wins).
"""
import base64
import json
import os
import ssl
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, CERT, KEY, RECORD = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]


def answer(uid, allowed=True, status=None, patch=None, warnings=None):
    resp = {"uid": uid, "allowed": allowed}
    if status:
        resp["status"] = status
    if patch is not None:
        resp["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
        resp["patchType"] = "JSONPatch"
    if warnings:
        resp["warnings"] = warnings
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle(self):
        try:
            super().handle()
        except (ssl.SSLError, ConnectionError):
            pass  # the caller gave up (a timeout under test)

    def send(self, code, body):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        review = json.loads(body)
        req = review.get("request", {})
        path = self.path.split("?")[0].strip("/")
        with open(os.path.join(RECORD, path + ".json"), "w") as f:
            json.dump(review, f)
        uid = req.get("uid", "")
        obj = req.get("object") or {}
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if path == "validate":
            if labels.get("deny") == "true":
                return self.send(200, answer(uid, False, {"code": 403, "message": "label deny=true is not allowed"}))
            return self.send(200, answer(uid, warnings=["validated by the test webhook"]))
        if path == "mutate":
            if "metadata" in obj and "labels" not in obj["metadata"]:
                patch = [{"op": "add", "path": "/metadata/labels", "value": {"mutated": "true"}}]
            else:
                patch = [{"op": "add", "path": "/metadata/labels/mutated", "value": "true"}]
            return self.send(200, answer(uid, patch=patch))
        if path == "slow":
            time.sleep(5)
            return self.send(200, answer(uid))
        if path == "garbage":
            return self.send(200, b"this is not json")
        if path == "wronguid":
            return self.send(200, answer("not-" + uid))
        if path == "status500":
            return self.send(500, b"{}")
        self.send(404, b"{}")


ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(CERT, KEY)
server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
server.daemon_threads = True
server.socket = ctx.wrap_socket(server.socket, server_side=True)
server.serve_forever()

#!/usr/bin/env python3
"""Answer-by-answer comparison of two kapi runs from their audit logs.

Usage:
    hack/compare-answers.py BEFORE_DIR AFTER_DIR [--max-diffs N] [--json OUT]

Each folder holds the audit logs (`audit.k8s.io/v1` Event JSON lines, written with a policy that
records every request at level RequestResponse, omitStages RequestReceived) of one run of the
same e2e suites, one file per started kapi process.  Either the files are directly in the folder
or in one sub-folder per suite (`run/`, `validate/`, ...).  Within a suite, the files are taken
in name order, so name them by start time (e.g. `audit-$(date +%s%N)-$$.log`); the n-th process
of a suite in BEFORE_DIR is compared with the n-th in AFTER_DIR.

A wrapper that records such a run (then `KAPI_BIN=wrapper CMP_SUITE=run e2e/run.sh`):

    #!/usr/bin/env bash
    dir=/var/tmp/cmp/before/${CMP_SUITE:-misc}; mkdir -p "$dir"
    exec kapi-apiserver --audit-policy-file policy.yaml \\
      --audit-log-path "$dir/audit-$(date +%s%N)-$$.log" "$@"

with policy.yaml: `apiVersion: audit.k8s.io/v1`, `kind: Policy`,
`omitStages: [RequestReceived]`, `rules: [{level: RequestResponse}]`.

What is compared, per event: the verb, the requestURI, responseStatus (code, reason, message)
and the responseObject.  Normalized first, in both runs alike (only what differs from run to
run by chance, never what a server computes from the request):
  - UUIDs anywhere, map keys included (uids, the Audit-Id, uids in field selectors) -> <uuid>
  - RFC 3339 timestamps anywhere -> <time>; managedFields[].time, *Timestamp, *Time fields
  - resourceVersion (any depth, and resourceVersion=/resourceVersionMatch kept but valued
    <rv> in the URI), continue tokens, remainingItemCount
  - names made from metadata.generateName (the suffix -> <gen>, also where the URI names them)
    and names with a hex time suffix (events: <name>.<16 hex> -> <name>.<hex>); the projected
    service-account volume's kube-api-access-<5 random> name
  - loopback ports (127.0.0.1:NNNN, localhost:NNNN), /tmp/... work paths
  - watch timeoutSeconds (client-go picks it at random)
  - PEM blocks and base64 of PEM (per-process CA, serving and client certificates),
    JWTs (service account tokens), the `data` of service-account-token Secrets
  - service clusterIP(s) and nodePorts (allocated at random; also where a Table or a URI shows
    them) and IPAddress names
  - the X509SHA256=... credential id of the client certificate (a new CA per process)
  - Table cells that are durations (the Age column: "5s", "2m3s")
  - lease holderIdentity/renewTime/acquireTime (leader election timing)
  - the order of managedFields entries (sorted by operation, time, manager: with the time
    masked, entries are compared sorted by operation and manager) and of the terms of a
    fieldSelector (kubectl describe builds it from a Go map)

Pairing: within a process log, events are grouped by (verb, normalized URI); the i-th event of a
group in BEFORE is paired with the i-th of the group in AFTER ("in order").  A pair that differs
is then tried against the other unmatched events of its group (requests that raced, e.g. kubectl's
parallel discovery, or polls that saw a controller's work at another moment): if an identical
partner exists it counts as "identical after re-matching".  Events left without a partner are
"unpaired" (a poll loop that ran once more, a controller's request that came once more).

A differing pair is marked "object in deletion" when one side is a 404 or shows a
deletionTimestamp: such reads (kubectl delete --wait, wait loops) see whatever state the
controllers had reached, so they differ between any two runs.

Output: per suite and in total, the events in each run, the pairs, identical pairs (in order /
after re-matching), differing pairs with the first differing paths of each, and unpaired events
grouped by (verb, URI).  Exit status 1 when a pair differs that is not a read of an object in
deletion, or the number of processes differs; else 0 (the differences that are, and unpaired
events, are counted and listed for a person to judge).
"""

import argparse
import collections
import json
import os
import re
import sys
import urllib.parse

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")
PORT = re.compile(r"(127\.0\.0\.1|localhost|\[::1\]):\d+")
TMP = re.compile(r"/tmp/[A-Za-z0-9._-]+")
DURATION = re.compile(r"^(\d+(\.\d+)?(ms|s|m|h|d|y))+$|^<invalid>$")
PEM_B64 = "LS0tLS1CRUdJT"  # base64 of "-----BEGIN"
JWT = re.compile(r"^eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$")
HEX_SUFFIX = re.compile(r"\.[0-9a-f]{16,}$")
API_ACCESS = re.compile(r"kube-api-access-[a-z0-9]{5}\b")
X509_ID = re.compile(r"X509SHA256=[0-9a-f]{64}")

DROP_KEYS = {"resourceVersion", "continue", "remainingItemCount", "uid"}
TIME_KEYS = {"renewTime", "acquireTime", "holderIdentity", "leaseTransitions", "time",
             "eventTime", "lastTimestamp", "firstTimestamp", "lastTransitionTime",
             "lastProbeTime", "lastHeartbeatTime", "lastUpdateTime", "startTime",
             "completionTime", "expirationTimestamp", "creationTimestamp",
             "deletionTimestamp", "lastScheduleTime", "lastSuccessfulTime", "token",
             "clusterIP", "clusterIPs", "nodePort", "certificate", "caBundle",
             "client-certificate-data", "client-key-data", "certificate-authority-data"}


def norm_str(s, names):
    if s.startswith("-----BEGIN") or PEM_B64 in s[:32]:
        return "<pem>"
    if JWT.match(s):
        return "<token>"
    s = UUID.sub("<uuid>", s)
    s = X509_ID.sub("X509SHA256=<hash>", s)
    s = API_ACCESS.sub("kube-api-access-<gen>", s)
    s = RFC3339.sub("<time>", s)
    s = PORT.sub(r"\1:<port>", s)
    s = TMP.sub("/tmp/<tmp>", s)
    for full, short in names:
        if full in s:
            if full[0] in "0123456789:":  # an allocated IP or ":nodePort/": whole tokens only
                s = re.sub(r"(?<![0-9.])" + re.escape(full) + r"(?![0-9])", short, s)
            else:
                s = s.replace(full, short)
    return s


def norm(v, names, key=None):
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if k in DROP_KEYS:
                continue
            if k in TIME_KEYS:
                out[k] = "<masked>"
                continue
            out[norm_str(k, names)] = norm(x, names, k)
        if v.get("type") == "kubernetes.io/service-account-token" and "data" in out:
            out["data"] = {k: "<masked>" for k in v["data"]}
        return out
    if isinstance(v, list):
        if key == "managedFields":
            # entries are ordered by (operation, time, manager, ...): with the time masked, an
            # order that only two writes in one second or in two seconds decided is not compared
            entries = [norm(x, names, key) for x in v]
            return sorted(entries, key=lambda m: json.dumps(
                [m.get(f) for f in ("operation", "manager", "apiVersion", "subresource")]
                if isinstance(m, dict) else m))
        if key == "cells":
            return [("<age>" if isinstance(c, str) and DURATION.match(c) else norm(c, names))
                    for c in v]
        return [norm(x, names, key) for x in v]
    if isinstance(v, str):
        return norm_str(v, names)
    return v


def collect_generated(obj, names):
    """Records generated names (generateName + suffix) and hex-suffixed event names."""
    if isinstance(obj, dict):
        md = obj.get("metadata")
        if isinstance(md, dict):
            gn, n = md.get("generateName"), md.get("name")
            if isinstance(gn, str) and gn and isinstance(n, str) and n.startswith(gn) and n != gn:
                names[n] = gn + "<gen>"
            if isinstance(n, str) and HEX_SUFFIX.search(n):
                names[n] = HEX_SUFFIX.sub(".<hex>", n)
            if obj.get("kind") == "IPAddress" and isinstance(n, str):
                names[n] = "<ip>"
        spec = obj.get("spec")
        if obj.get("kind") == "Service" and isinstance(spec, dict):
            for ip in spec.get("clusterIPs") or []:
                if isinstance(ip, str) and ip != "None":
                    names[ip] = "<clusterIP>"
            for port in spec.get("ports") or []:
                if isinstance(port, dict) and port.get("nodePort"):
                    names[f":{port['nodePort']}/"] = ":<nodePort>/"
        for x in obj.values():
            collect_generated(x, names)
    elif isinstance(obj, list):
        for x in obj:
            collect_generated(x, names)


def norm_uri(uri, names):
    path, _, query = uri.partition("?")
    path = norm_str(urllib.parse.unquote(path), names)
    path = re.sub(r"/ipaddresses/[0-9.:a-f]+", "/ipaddresses/<ip>", path)
    parts = []
    for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True):
        if k in ("resourceVersion", "continue"):
            v = "<rv>" if v not in ("", "0") else v
        elif k == "timeoutSeconds":
            v = "<t>"
        elif k == "fieldSelector":
            # kubectl describe builds it from a Go map: its terms come in random order
            v = ",".join(sorted(norm_str(v, names).split(",")))
        else:
            v = norm_str(v, names)
        parts.append(f"{k}={v}")
    return path + ("?" + "&".join(parts) if parts else "")


def load(path):
    raw = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                e = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by the process' end
            if e.get("stage") not in (None, "ResponseComplete", "Panic"):
                continue  # ResponseStarted of watches: the ResponseComplete one is kept
            raw.append(e)
    names = {}
    for e in raw:
        collect_generated(e.get("responseObject"), names)
        collect_generated(e.get("requestObject"), names)
    # longest first, so a name that prefixes another is not replaced inside it
    subst = sorted(names.items(), key=lambda kv: -len(kv[0]))
    events = []
    for e in raw:
        st = e.get("responseStatus") or {}
        status = {k: norm(st.get(k), subst) for k in ("code", "reason", "message") if k in st}
        ev = {
            "verb": e.get("verb"),
            "uri": norm_uri(e.get("requestURI", ""), subst),
            "status": status,
            "object": norm(e.get("responseObject"), subst),
            "agent": e.get("userAgent", ""),
            "user": (e.get("user") or {}).get("username", ""),
        }
        ev["key"] = (ev["verb"], ev["uri"])
        ev["answer"] = json.dumps([status, ev["object"]], sort_keys=False)
        events.append(ev)
    return events


def first_diffs(a, b, path="", out=None, limit=6):
    if out is None:
        out = []
    if len(out) >= limit:
        return out
    if type(a) is not type(b):
        out.append(f"{path or '/'}: {short(a)} != {short(b)}")
    elif isinstance(a, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a:
                out.append(f"{path}/{k}: missing before, after {short(b[k])}")
            elif k not in b:
                out.append(f"{path}/{k}: before {short(a[k])}, missing after")
            else:
                first_diffs(a[k], b[k], f"{path}/{k}", out, limit)
            if len(out) >= limit:
                break
        if not out and list(a) != list(b):
            out.append(f"{path or '/'}: key order {list(a)} != {list(b)}")
    elif isinstance(a, list):
        if len(a) != len(b):
            out.append(f"{path or '/'}: {len(a)} items != {len(b)} items")
        for i, (x, y) in enumerate(zip(a, b)):
            first_diffs(x, y, f"{path}[{i}]", out, limit)
            if len(out) >= limit:
                break
    elif a != b:
        out.append(f"{path or '/'}: {short(a)} != {short(b)}")
    return out


def short(v, n=160):
    s = json.dumps(v)
    return s if len(s) <= n else s[:n] + "..."


def compare_logs(before, after):
    """Pairs the events of two process logs; returns counters, differing pairs, unpaired events.

    Per (verb, URI) group: identical + rematched + differ + unpaired-before = events before
    (and alike for after)."""
    gb, ga = collections.defaultdict(list), collections.defaultdict(list)
    for e in before:
        gb[e["key"]].append(e)
    for e in after:
        ga[e["key"]].append(e)
    res = collections.Counter()
    diffs, unpaired = [], []
    for key in list(gb) + [k for k in ga if k not in gb]:
        bs, as_ = gb.get(key, []), ga.get(key, [])
        n = min(len(bs), len(as_))
        left_b, left_a = [], []
        for x, y in zip(bs, as_):
            if x["answer"] == y["answer"]:
                res["identical"] += 1
            else:
                left_b.append(x)
                left_a.append(y)
        left_b += bs[n:]
        left_a += as_[n:]
        # re-matching: an identical partner elsewhere in the group (raced or polled requests)
        rest_b = []
        for x in left_b:
            hit = next((i for i, y in enumerate(left_a) if y["answer"] == x["answer"]), None)
            if hit is None:
                rest_b.append(x)
            else:
                left_a.pop(hit)
                res["rematched"] += 1
        # what is left is paired in order again: a real difference; the rest is unpaired
        m = min(len(rest_b), len(left_a))
        diffs += list(zip(rest_b[:m], left_a[:m]))
        unpaired += [("before", x) for x in rest_b[m:]] + [("after", y) for y in left_a[m:]]
    res["pairs"] = res["identical"] + res["rematched"] + len(diffs)
    return res, diffs, unpaired


def in_deletion(ev):
    """True when the answer is a 404 or an object (or the one list item) with deletionTimestamp:
    what such a read sees depends on how far the garbage collector, the namespace controller or
    the CRD finalizer got, i.e. on timing."""
    if ev["status"].get("code") == 404:
        return True
    obj = ev["object"] if isinstance(ev["object"], dict) else {}
    items = obj.get("items")
    if isinstance(items, list) and len(items) == 1:
        obj = items[0]
    md = obj.get("metadata") if isinstance(obj, dict) else None
    return isinstance(md, dict) and "deletionTimestamp" in md


def suites(root):
    out = {}
    files = sorted(f for f in os.listdir(root) if os.path.isfile(os.path.join(root, f)))
    if files:
        out["."] = [os.path.join(root, f) for f in files]
    for d in sorted(os.listdir(root)):
        p = os.path.join(root, d)
        if os.path.isdir(p):
            out[d] = [os.path.join(p, f) for f in sorted(os.listdir(p))]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--max-diffs", type=int, default=50, help="differences printed per suite")
    ap.add_argument("--json", help="also write every difference and unpaired event here")
    args = ap.parse_args()
    sb, sa = suites(args.before), suites(args.after)
    total = collections.Counter()
    dump = {}
    failed = False
    print(f"{'suite':<14}{'procs':>7}{'before':>9}{'after':>9}{'pairs':>8}{'ident':>8}"
          f"{'rematch':>9}{'differ':>8}{'unp.B':>7}{'unp.A':>7}")
    details = []
    for suite in sorted(set(sb) | set(sa)):
        fb, fa = sb.get(suite, []), sa.get(suite, [])
        c = collections.Counter()
        sd, su = [], []
        if len(fb) != len(fa):
            details.append(f"[{suite}] {len(fb)} process logs before, {len(fa)} after")
            failed = True
        for i, (pb, pa) in enumerate(zip(fb, fa)):
            eb, ea = load(pb), load(pa)
            c["before"] += len(eb)
            c["after"] += len(ea)
            r, d, u = compare_logs(eb, ea)
            c.update(r)
            sd += [(i, x, y) for x, y in d]
            su += [(i, side, x) for side, x in u]
        c["procs"] = min(len(fb), len(fa))
        total.update(c)
        print(f"{suite:<14}{c['procs']:>7}{c['before']:>9}{c['after']:>9}{c['pairs']:>8}"
              f"{c['identical']:>8}{c['rematched']:>9}{len(sd):>8}"
              f"{sum(1 for _, s, _ in su if s == 'before'):>7}"
              f"{sum(1 for _, s, _ in su if s == 'after'):>7}")
        unexplained = [1 for _, x, y in sd if not (in_deletion(x) or in_deletion(y))]
        total["unexplained"] += len(unexplained)
        if unexplained:
            failed = True
        for i, x, y in sd[: args.max_diffs]:
            note = "; object in deletion: a controller's progress" if (
                in_deletion(x) or in_deletion(y)) else ""
            details.append(f"[{suite} #{i}] {x['verb']} {x['uri']} ({x['agent'][:40]}){note}")
            for line in first_diffs([x["status"], x["object"]], [y["status"], y["object"]]):
                details.append(f"      {line}")
        if len(sd) > args.max_diffs:
            details.append(f"[{suite}] ... {len(sd) - args.max_diffs} more differing pairs")
        groups = collections.Counter((i, side, x["verb"], x["uri"], x["status"].get("code"))
                                     for i, side, x in su)
        for (i, side, verb, uri, code), n in sorted(groups.items(), key=str):
            details.append(f"[{suite} #{i}] unpaired, only {side}: {n}x {verb} {uri} -> {code}")
        dump[suite] = {
            "counts": dict(c),
            "differ": [{"proc": i, "verb": x["verb"], "uri": x["uri"], "before": [x["status"], x["object"]],
                        "after": [y["status"], y["object"]]} for i, x, y in sd],
            "unpaired": [{"proc": i, "side": s, "verb": x["verb"], "uri": x["uri"],
                          "status": x["status"], "agent": x["agent"]} for i, s, x in su],
        }
    print(f"{'total':<14}{total['procs']:>7}{total['before']:>9}{total['after']:>9}"
          f"{total['pairs']:>8}{total['identical']:>8}{total['rematched']:>9}"
          f"{sum(len(d['differ']) for d in dump.values()):>8}"
          f"{sum(1 for d in dump.values() for u in d['unpaired'] if u['side'] == 'before'):>7}"
          f"{sum(1 for d in dump.values() for u in d['unpaired'] if u['side'] == 'after'):>7}")
    print()
    print("pairs: events matched by (verb, normalized URI) in order; ident: identical answers in")
    print("order; rematch: identical to another event of the same (verb, URI) (raced or polled);")
    print("differ: no identical partner; unp.B/unp.A: events of one run only")
    n_diff = sum(len(d["differ"]) for d in dump.values())
    print(f"{n_diff} differing pairs, {n_diff - total['unexplained']} of them reads of objects in "
          f"deletion, {total['unexplained']} other")
    if details:
        print()
        print("\n".join(details))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(dump, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Prints the hottest functions of a Go CPU profile (pprof protobuf, gzipped) without Go tools.

Used to see where etcd spends its time under the storage benchmark:

    etcd --enable-pprof ...   # then, while the benchmark runs against it:
    curl -o etcd.pb.gz 'http://127.0.0.1:<port>/debug/pprof/profile?seconds=6'
    hack/bench/storage/pprof_top.py etcd.pb.gz [substring]

Shows flat (own) and cumulative (own + callees) shares of all samples; with a substring, the
cumulative list only has functions whose name contains it.
"""
import collections
import gzip
import sys


def varint(b, i):
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i


def fields(b):
    """(field number, wire type, value) of one protobuf message."""
    i = 0
    while i < len(b):
        k, i = varint(b, i)
        f, t = k >> 3, k & 7
        if t == 0:
            v, i = varint(b, i)
        elif t == 2:
            n, i = varint(b, i)
            v = b[i : i + n]
            i += n
        elif t == 1:
            v, i = b[i : i + 8], i + 8
        elif t == 5:
            v, i = b[i : i + 4], i + 4
        else:
            raise ValueError(f"wire type {t}")
        yield f, t, v


def ints(t, v):
    """A repeated integer field, packed or not."""
    if t == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def main():
    data = gzip.decompress(open(sys.argv[1], "rb").read())
    strings, samples, locations, functions = [], [], {}, {}
    # profile.proto: sample = 2, location = 4, function = 5, string_table = 6.
    for f, t, v in fields(data):
        if f == 6:
            strings.append(v.decode(errors="replace"))
        elif f == 2:
            locs, values = [], []
            for f2, t2, v2 in fields(v):
                if f2 == 1:
                    locs += ints(t2, v2)
                elif f2 == 2:
                    values += ints(t2, v2)
            samples.append((locs, values))
        elif f == 4:
            lid, funcs = None, []
            for f2, _, v2 in fields(v):
                if f2 == 1:
                    lid = v2
                elif f2 == 4:
                    funcs += [v3 for f3, _, v3 in fields(v2) if f3 == 1]
            locations[lid] = funcs
        elif f == 5:
            fid = name = None
            for f2, _, v2 in fields(v):
                if f2 == 1:
                    fid = v2
                elif f2 == 2:
                    name = v2
            functions[fid] = name
    flat, cum, total = collections.Counter(), collections.Counter(), 0
    for locs, values in samples:
        weight = values[-1]  # CPU nanoseconds
        total += weight
        names = [strings[functions[fid]] for loc in locs for fid in locations.get(loc, [])]
        if names:
            flat[names[0]] += weight
        for n in set(names):
            cum[n] += weight
    if total == 0:
        print("no samples")
        return
    only = sys.argv[2] if len(sys.argv) > 2 else ""
    print(f"{total / 1e9:.2f} s of CPU sampled")
    print("-- flat")
    for name, w in flat.most_common(20):
        print(f"{w * 100 / total:6.2f}% {name}")
    print("-- cumulative")
    for name, w in [c for c in cum.most_common() if only in c[0]][:40]:
        print(f"{w * 100 / total:6.2f}% {name}")


if __name__ == "__main__":
    main()

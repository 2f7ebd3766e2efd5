#!/usr/bin/env python3
"""Where a kapi server's CPU went, by part of the request path, from profiles with call stacks.

    hack/bench/profile_split.py <perf.data or `perf script` output> ...

Reads the windows `cluster-load.sh` keeps with BENCH_PROFILE_CALLERS=1 (`perf record
--call-graph dwarf`), or any perf.data of the server recorded with call stacks. Each sample
counts once, for the first part below whose frames appear anywhere in its stack (so a Lease PUT's
etcd transaction counts as "update", not as "etcd client"). Unwinding costs about a core-minute
per 1,000 samples: run it after a benchmark, never beside one.
"""
import collections
import re
import subprocess
import sys

# In order: a sample belongs to the first part whose pattern matches one of its frames.
PARTS = [
    ("watch: encoding and sending events to watchers", r"handlers::watch|Batched as http_body"),
    ("etcd watch: decoding stored events", r"etcd::watch::Watch::run|decode_stored"),
    ("update and patch (handler, admission, store, etcd transaction)",
     r"run_update|handlers::patch::patch|FieldManager::update"),
    ("create (handler, store, binding)", r"store::create|Binder as kapi_registry|handlers::create"),
    ("get and list", r"store::read::|handlers::list|handlers::get|encoded_list"),
    ("encoding responses", r"RequestScope::respond|write_body"),
    ("watch cache: applying events, dispatching", r"kapi_storage::cacher"),
    ("request filters (authentication, authorization, priority and fairness, audit, metrics)",
     r"kapi_server::filters"),
    ("etcd client (gRPC, HTTP/2)", r"tonic::|h2::client|hyper::proto::h2::client"),
    ("HTTP serving (hyper, HTTP/2, TLS)", r"hyper::|h2::|rustls|tokio_rustls"),
    ("allocator", r"_rjem_|je_"),
    ("async runtime and kernel", r"tokio::|entry_SYSCALL|do_syscall"),
]
PATTERNS = [(name, re.compile(pattern)) for name, pattern in PARTS]


def stacks(path):
    """Yields each sample's frames (symbol names, innermost first)."""
    if path.endswith(".perf.data"):
        out = subprocess.run(["perf", "script", "-i", path, "-F", "tid,ip,sym"],
                             capture_output=True, text=True, check=True).stdout
        lines = out.splitlines()
    else:
        lines = open(path).read().splitlines()
    frames = []
    for line in lines:
        if not line.strip() or line[0] not in " \t":
            if frames:
                yield frames
            frames = []
            continue
        parts = line.strip().split(None, 1)
        frames.append(parts[1] if len(parts) > 1 else parts[0])
    if frames:
        yield frames


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    counts = collections.Counter()
    total = 0
    for path in sys.argv[1:]:
        for frames in stacks(path):
            total += 1
            text = "\n".join(frames)
            part = next((name for name, p in PATTERNS if p.search(text)), "other")
            counts[part] += 1
    print(f"{total} samples in {len(sys.argv) - 1} profile(s)")
    for name, n in counts.most_common():
        print(f"{100 * n / max(total, 1):5.1f}%  {name}")


if __name__ == "__main__":
    main()

"""What a server-side dry-run create answers for each object of a multi-document YAML file,
without what differs between any two creates: uid, timestamps, managedFields, resourceVersion,
generation, allocated ClusterIPs and node ports; and without null fields (Go writes some zero
values as null where kapi leaves them out, which no client tells apart).

    python3 defaults.py KUBECTL KUBECONFIG FILE   # prints one JSON document per object
"""
import json
import subprocess
import sys

import yaml

VOLATILE_META = ("uid", "creationTimestamp", "managedFields", "resourceVersion", "generation")
VOLATILE_SPEC = ("clusterIP", "clusterIPs")


def clean(value, path=()):
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if v is None:
                continue
            if path == ("metadata",) and k in VOLATILE_META:
                continue
            if path == ("spec",) and k in VOLATILE_SPEC:
                continue
            if k == "nodePort" and path[:2] == ("spec", "ports"):
                continue
            out[k] = clean(v, path + (k,))
        return out
    if isinstance(value, list):
        return [clean(v, path) for v in value]
    return value


def main():
    kubectl, kubeconfig, file = sys.argv[1:4]
    for doc in yaml.safe_load_all(open(file)):
        if not doc:
            continue
        run = subprocess.run(
            [kubectl, "--kubeconfig", kubeconfig, "create", "--dry-run=server", "-o", "json", "-f", "-"],
            input=json.dumps(doc), capture_output=True, text=True,
        )
        if run.returncode != 0:
            print(json.dumps({"error": run.stderr.strip()}))
            continue
        print(json.dumps(clean(json.loads(run.stdout)), sort_keys=True))


if __name__ == "__main__":
    main()

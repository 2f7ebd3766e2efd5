#!/usr/bin/env python3
"""Generates crates/endpoints/src/patch/meta.json: the strategic-merge and list-type markers
(+patchStrategy, +patchMergeKey, +listType, +listMapKey, +mapType) of every field of every
built-in type, read from the upstream Go doc comments that the k8s-pb crate keeps on its
generated types. JSON field names come from the k8s-openapi crate's serde code.
A type's own `+structType=atomic` (or `+mapType=atomic`) is written under the field name "."
as `mapType`, which is how upstream's OpenAPI publishes it (`x-kubernetes-map-type`).

Usage: hack/gen-patch-meta.py <k8s-pb src dir> <k8s-openapi src/v1_XX dir> > meta.json
"""
import json
import os
import re
import sys

PKG_PREFIX = {
    "api": "io.k8s.api",
    "apimachinery": "io.k8s.apimachinery",
    "apiextensions_apiserver": "io.k8s.apiextensions-apiserver",
    "kube_aggregator": "io.k8s.kube-aggregator",
}


def package(rel):
    parts = rel.split(os.sep)
    head = PKG_PREFIX.get(parts[0])
    if head is None:
        return None
    return ".".join([head] + parts[1:])


def norm(field):
    return field.removeprefix("r#").rstrip("_")


def json_names(openapi_dir):
    """(package, type) -> {rust field: json name}"""
    out = {}
    for root, _, files in os.walk(openapi_dir):
        rel = os.path.relpath(root, openapi_dir)
        pkg = package(rel)
        if pkg is None:
            continue
        for f in files:
            if not f.endswith(".rs") or f == "mod.rs":
                continue
            text = open(os.path.join(root, f)).read()
            m = re.search(r"pub struct (\w+)", text)
            if not m:
                continue
            names = {}
            for jm in re.finditer(r'"([^"]+)" => Field::Key_(\w+),', text):
                names[norm(jm.group(2))] = jm.group(1)
            out[(pkg, m.group(1))] = names
    return out


def markers(pb_dir, names):
    out = {}
    for root, _, files in os.walk(pb_dir):
        if "mod.rs" not in files:
            continue
        pkg = package(os.path.relpath(root, pb_dir))
        if pkg is None:
            continue
        struct = None
        docs = []
        for line in open(os.path.join(root, "mod.rs")):
            s = line.strip()
            if s.startswith("///"):
                docs.append(s[3:].strip())
                continue
            if s.startswith("#["):
                continue
            m = re.match(r"pub struct (\w+) \{", s)
            if m:
                struct = m.group(1)
                for d in docs:
                    t = re.match(r"\+(structType|mapType)=(\S+)$", d)
                    if t and (pkg, struct) in names:
                        out.setdefault(f"{pkg}.{struct}", {})["."] = {"mapType": t.group(2)}
                docs = []
                continue
            # Long field types put the type on the next line: `pub node_selector:`.
            m = re.match(r"pub (r#)?(\w+):", s)
            if m and struct:
                tags = {}
                for d in docs:
                    t = re.match(r"\+(patchStrategy|patchMergeKey|listType|listMapKey|mapType)=(\S+)$", d)
                    if t:
                        k, v = t.groups()
                        if k == "listMapKey":
                            tags.setdefault("listMapKeys", []).append(v)
                        else:
                            tags[k] = v
                if tags:
                    rust = norm(m.group(2))
                    json_name = names.get((pkg, struct), {}).get(rust)
                    if json_name:
                        out.setdefault(f"{pkg}.{struct}", {})[json_name] = tags
            if s == "}":
                struct = None
            docs = []
    return out


def main():
    pb_dir, openapi_dir = sys.argv[1], sys.argv[2]
    meta = markers(pb_dir, json_names(openapi_dir))
    json.dump(meta, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


main()

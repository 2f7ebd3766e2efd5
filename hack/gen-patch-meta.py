#!/usr/bin/env python3
"""Generates crates/endpoints/src/patch/meta.json: the strategic-merge and list-type markers
(+patchStrategy, +patchMergeKey, +listType, +listMapKey, +mapType) of every field of every
built-in type, read from the upstream Go doc comments that the k8s-pb crate keeps on its
generated types. JSON field names come from the k8s-openapi crate's serde code.
A type's own `+structType=atomic` (or `+mapType=atomic`) is written under the field name "."
as `mapType`, which is how upstream's OpenAPI publishes it (`x-kubernetes-map-type`).

With a third argument, a folder of kube-apiserver's own OpenAPI v3 documents (each
`kubectl get --raw /openapi/v3/<path>` the reference server lists under /openapi/v3; v2 has no
defaults), each field Go's encoding writes even in a zero value gets `"zero"`: `"object"` for a struct held by value (the document's `"default": {}` on a
property whose definition is an object), `"null"` for one that encodes as a string (Time) and
for any other field without `omitempty` (the document's `required`). The field manager compares with them (upstream compares typed
objects).

Usage: hack/gen-patch-meta.py <k8s-pb src dir> <k8s-openapi src/v1_XX dir> [openapi-v3 dir] > meta.json
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


def zeros(v3_dir, known, meta):
    """Adds each field's zero-value marker (see the module doc) to `meta`."""
    defs = {}
    for f in sorted(os.listdir(v3_dir)):
        if f.endswith(".json"):
            defs.update(json.load(open(os.path.join(v3_dir, f))).get("components", {}).get("schemas", {}))

    def is_object(prop):
        ref = prop.get("$ref") or next((a.get("$ref") for a in prop.get("allOf", [])), None)
        if ref is None:
            return False
        target = defs.get(ref.rsplit("/", 1)[-1], {})
        return target.get("type", "object") == "object" and "format" not in target

    for name, schema in defs.items():
        if name not in known:
            continue
        required = set(schema.get("required", []))
        for field, prop in schema.get("properties", {}).items():
            if prop.get("default") == {}:
                # A struct held by value; one that encodes as a string (Time) writes null.
                zero = "object" if is_object(prop) else "null"
            elif field in required:
                zero = "null"
            else:
                continue
            meta.setdefault(name, {}).setdefault(field, {})["zero"] = zero


def main():
    pb_dir, openapi_dir = sys.argv[1], sys.argv[2]
    names = json_names(openapi_dir)
    meta = markers(pb_dir, names)
    if len(sys.argv) > 3:
        known = {f"{pkg}.{struct}" for pkg, struct in names}
        zeros(sys.argv[3], known, meta)
    json.dump(meta, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


main()

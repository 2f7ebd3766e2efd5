#!/usr/bin/env python3
"""Lists the Go pointer fields of the Kubernetes API types whose pointee is a scalar
(`*int32`, `*bool`, `*string`, named string types, ...), read from the runtime type
descriptors that the Go compiler puts in a binary for reflection (encoding/json needs them),
so the list is what upstream's own types say, at the version the binary was built from.

An explicit zero in such a field means something (`replicas: 0`,
`terminationGracePeriodSeconds: 0`), so kapi's protobuf decoding keeps its presence;
kapi-gen-proto-schema reads this list (and go-pointer-fields.by-hand.txt) into the table.

Refresh, when moving to a new Kubernetes minor (kubectl first: it links every k8s.io/api
package; anthoscli adds apiextensions/v1, which kubectl does not link):
    python3 hack/gen-proto-schema/go-pointer-fields.py \
        /usr/lib/google-cloud-sdk/bin/kubectl.1.<minor> /usr/lib/google-cloud-sdk/bin/anthoscli \
        > hack/gen-proto-schema/go-pointer-fields.txt
    cargo run -p kapi-gen-proto-schema
then check go-pointer-fields.by-hand.txt against upstream's types.

For each Go package, the first binary that holds it wins. Works on stripped amd64 ELF
binaries (Go 1.20 and later).

Output lines: `<go package path> <Type>.<json name>`.
"""

import struct
import sys

PACKAGES = (
    "k8s.io/api/",
    "k8s.io/apimachinery/pkg/apis/meta/v1",
    "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/",
    "k8s.io/kube-aggregator/pkg/apis/apiregistration/",
)
# reflect.Kind values.
BOOL_TO_FLOAT64 = set(range(1, 15))
STRING, STRUCT, POINTER, SLICE, ARRAY, CHAN, MAP, FUNC, INTERFACE = 24, 25, 22, 23, 17, 18, 21, 19, 20
SCALARS = BOOL_TO_FLOAT64 | {STRING}
# abi.Type: size, ptrBytes, hash, tflag@20, align, fieldAlign, kind@23, equal, gcData, str@40.
TYPE_SIZE = 48
TFLAG_UNCOMMON, TFLAG_EXTRA_STAR = 1, 2


class Binary:
    def __init__(self, path):
        self.data = open(path, "rb").read()
        d = self.data
        shoff = struct.unpack_from("<Q", d, 0x28)[0]
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)
        self.sections = []
        for i in range(shnum):
            name, _, _, addr, off, size = struct.unpack_from("<IIQQQQ", d, shoff + i * shentsize)
            self.sections.append((name, addr, off, size))
        names_off = self.sections[shstrndx][2]
        by_name = {}
        for name, addr, off, size in self.sections:
            end = d.index(b"\0", names_off + name)
            by_name[d[names_off + name:end].decode()] = (addr, off, size)
        # The type descriptors start the read-only data (the linker's `runtime.types`).
        self.types = by_name[".rodata"][0]
        _, off, size = by_name[".typelink"]
        self.typelinks = struct.unpack_from("<%di" % (size // 4), d, off)

    def read(self, vaddr, n):
        for _, addr, off, size in self.sections:
            if addr and addr <= vaddr < addr + size:
                o = off + vaddr - addr
                return self.data[o:o + n]
        raise KeyError(hex(vaddr))

    def u64(self, v):
        return struct.unpack("<Q", self.read(v, 8))[0]

    def i32(self, v):
        return struct.unpack("<i", self.read(v, 4))[0]

    def byte(self, v):
        return self.read(v, 1)[0]

    def varint(self, p):
        n, shift = 0, 0
        while True:
            c = self.byte(p)
            p += 1
            n |= (c & 0x7F) << shift
            shift += 7
            if c < 0x80:
                return n, p

    def name(self, v):
        """An abi.Name: flags, varint length, bytes, then (flag 2) a varint-prefixed tag."""
        flags = self.byte(v)
        n, p = self.varint(v + 1)
        text = self.read(p, n).decode("utf-8", "replace")
        tag = ""
        if flags & 2:
            m, q = self.varint(p + n)
            tag = self.read(q, m).decode("utf-8", "replace")
        return text, tag

    def kind(self, t):
        return self.byte(t + 23) & 0x1F

    def type_name(self, t):
        s = self.name(self.types + self.i32(t + 40))[0]
        return s[1:] if self.byte(t + 20) & TFLAG_EXTRA_STAR else s

    def pkg_path(self, t):
        """The package of a named struct, from the uncommon type after the StructType."""
        if not self.byte(t + 20) & TFLAG_UNCOMMON:
            return None
        off = self.i32(t + TYPE_SIZE + 8 + 24)
        return self.name(self.types + off)[0] if off else None

    def pointer_fields(self):
        """The packages of named structs seen, and (package, type, json name) of every
        scalar-pointer field of those structs."""
        seen, out, packages = set(), set(), set()
        stack = [self.types + o for o in self.typelinks]
        while stack:
            t = stack.pop()
            if t == 0 or t in seen:
                continue
            seen.add(t)
            k = self.kind(t)
            if k in (POINTER, SLICE, CHAN, ARRAY):
                stack.append(self.u64(t + TYPE_SIZE))
            elif k == MAP:
                stack += [self.u64(t + TYPE_SIZE), self.u64(t + TYPE_SIZE + 8)]
            elif k == STRUCT:
                fields, count = self.u64(t + TYPE_SIZE + 8), self.u64(t + TYPE_SIZE + 16)
                pkg = self.pkg_path(t)
                packages.add(pkg)
                for i in range(count):
                    field_name, tag = self.name(self.u64(fields + 24 * i))
                    ft = self.u64(fields + 24 * i + 8)
                    stack.append(ft)
                    if pkg is None or self.kind(ft) != POINTER:
                        continue
                    if self.kind(self.u64(ft + TYPE_SIZE)) not in SCALARS:
                        continue
                    json_name = field_name
                    for part in tag.split(" "):
                        if part.startswith('json:"'):
                            json_name = part[6:-1].split(",")[0] or field_name
                    out.add((pkg, self.type_name(t).rsplit(".", 1)[-1], json_name))
        return packages, out


def main(paths):
    print("# Go pointer fields with a scalar pointee of the Kubernetes API types.")
    print("# @generated by hack/gen-proto-schema/go-pointer-fields.py from: %s" % " ".join(
        p.rsplit("/", 1)[-1] for p in paths))
    taken, lines = set(), []
    for path in paths:
        seen, found = Binary(path).pointer_fields()
        packages = {p for p in seen if p and p.startswith(PACKAGES)} - taken
        for p in sorted(packages):
            print("# %s from %s" % (p, path.rsplit("/", 1)[-1]))
        lines += ["%s %s.%s" % f for f in found if f[0] in packages]
        taken |= packages
    for line in sorted(lines):
        print(line)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])

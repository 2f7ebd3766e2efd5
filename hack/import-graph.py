#!/usr/bin/env python3
"""The import graph inside each crate: which source file names which other file's module
(`use crate::a::b`, `crate::a::b::f()`, `super::x`, `self::x`), and every import circle
(strongly connected component) of more than one file.

    hack/import-graph.py [crate-dir ...]     (default: every crate under crates/ and cmd/)
    hack/import-graph.py --edges crates/endpoints     (every edge)
    hack/import-graph.py --all                        (circles inside one module tree too)

Exits 1 when a circle ties two top-level modules (two ideas) together, so it can guard the
layering; a module and its own children may name each other.
A module's `mod.rs`/`<name>.rs` is its file; `tests` modules and `*_tests.rs` files are left
out (a test may reach anything it tests)."""
import os
import re
import sys

PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_GROUP = re.compile(r"\buse\s+(crate|super|self)::((?:[A-Za-z_][A-Za-z0-9_]*::)*)\{([^;]*)\};", re.S)


def module_files(src):
    """Maps a module path (tuple of names) to its file, from lib.rs/main.rs down."""
    files = {}
    for dirpath, _, names in os.walk(src):
        for name in names:
            if not name.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), src)
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            if any(p == "tests" or p.endswith("_tests") or p == "bin" for p in parts):
                continue
            files[tuple(parts)] = os.path.join(src, rel)
    return files


def strip_tests(text):
    """Drops `#[cfg(test)] mod ... { ... }` blocks and comments."""
    text = re.sub(r"//[^\n]*", "", text)
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(pub(\([a-z]+\))?\s+)?mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


REEXPORT = re.compile(r"\bpub(?:\([a-z]+\))?\s+use\s+((?:crate|self|super)::)?((?:[A-Za-z_][A-Za-z0-9_]*::)*)(\{[^;]*\}|[A-Za-z_][A-Za-z0-9_]*(?:\s+as\s+\w+)?);", re.S)


def reexports_of(files):
    """(module, item) -> the module the item really lives in, from each file's `pub use`."""
    out = {}
    for mod, path in files.items():
        text = strip_tests(open(path, encoding="utf-8").read())
        for m in REEXPORT.finditer(text):
            head = (m.group(1) or "self::").rstrip(":")
            prefix = [s for s in m.group(2).split("::") if s]
            items = m.group(3).strip("{}")
            for item in re.split(r"\s*,\s*", items):
                parts = item.split(" as ")
                src = parts[0].strip().split("::")
                alias = (parts[1] if len(parts) > 1 else src[-1]).strip()
                if not alias or alias in ("self", "*"):
                    continue
                path = prefix + src
                if not m.group(1) and path and (mod + (path[0],)) not in files:
                    # `pub use other_crate::Item`: the item lives outside this crate.
                    out[(mod, alias)] = None
                    continue
                out[(mod, alias)] = (head, path)
    return out


def resolve(files, here, head, segs, reexports=None, depth=0):
    """The file a path names: the longest module prefix that is a file of this crate, followed
    through a `pub use` when the next segment is an item that module re-exports."""
    if head == "crate":
        base = ()
    elif head == "self":
        base = here
    else:
        base = here[:-1]
    full = base + tuple(segs)
    for n in range(len(full), -1, -1):
        if full[:n] in files:
            if reexports and n < len(full) and depth < 8:
                key = (full[:n], full[n])
                if key in reexports and reexports[key] is None:
                    return None
                hop = reexports.get(key)
                if hop:
                    h, path = hop
                    found = resolve(files, full[:n], h, path, reexports, depth + 1)
                    if found is not None:
                        return found
            return full[:n] if n else None
    return None


def group_items(text):
    """The items of a `use a::{...}` group, without nested groups and `as` renames."""
    for item in re.split(r"[,\s]+", re.sub(r"\{[^}]*\}", "", text)):
        item = item.split(" as ")[0].strip()
        if item:
            yield item


def edges_of(src):
    files = module_files(src)
    reexports = reexports_of(files)
    edges = {m: set() for m in files}
    for mod, path in files.items():
        text = strip_tests(open(path, encoding="utf-8").read())
        paths = []
        for m in USE_GROUP.finditer(text):
            prefix = [s for s in m.group(2).split("::") if s]
            for item in group_items(m.group(3)):
                paths.append((m.group(1), prefix + (item.split("::") if item != "self" else [])))
        for m in PATH.finditer(text):
            paths.append((m.group(1), [s for s in m.group(2).split("::") if s]))
        # Paths that start at a child module (`groups::for_group()`, `use groups::X`).
        children = set(re.findall(r"\bmod\s+([a-z_][a-z0-9_]*)\s*;", text))
        if children:
            bare = re.compile(r"(?<![:\w])(" + "|".join(sorted(children)) + r")((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
            for m in bare.finditer(text):
                paths.append(("self", [m.group(1)] + [s for s in m.group(2).split("::") if s]))
            for m in re.finditer(r"\buse\s+(" + "|".join(sorted(children)) + r")::\{([^;]*)\};", text, re.S):
                for item in group_items(m.group(2)):
                    if item != "self":
                        paths.append(("self", [m.group(1)] + item.split("::")))
        for head, segs in paths:
            target = resolve(files, mod, head, segs, reexports)
            if target is not None and target != mod:
                edges[mod].add(target)
    return files, edges


def sccs(edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return out


def name(m):
    return "::".join(m) or "(crate root)"


def main(argv):
    show_edges = "--edges" in argv
    show_all = "--all" in argv
    dirs = [a for a in argv if not a.startswith("--")]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not dirs:
        dirs = sorted(
            os.path.join(top, d)
            for top in ("crates", "cmd")
            for d in os.listdir(os.path.join(root, top))
            if os.path.isdir(os.path.join(root, top, d, "src"))
        )
    circles = 0
    for d in dirs:
        src = os.path.join(root, d, "src") if not os.path.isabs(d) else os.path.join(d, "src")
        files, edges = edges_of(src)
        # The crate root is everyone's parent; edges into it are how children reach the
        # crate's shared types, not a layer above them.
        for m in edges:
            edges[m].discard(())
        edges.pop((), None)
        print(f"{d}: {len(files)} files, {sum(len(e) for e in edges.values())} imports between them")
        if show_edges:
            for m in sorted(edges):
                for t in sorted(edges[m]):
                    print(f"  {name(m)} -> {name(t)}")
        for comp in sccs(edges):
            if len(comp) < 2:
                continue
            # A module and its children (a `mod.rs` that declares and re-exports them, children
            # using their parent's shared items) are one idea; a circle through two top-level
            # modules ties two ideas together.
            ideas = {m[0] for m in comp}
            if len(ideas) > 1:
                circles += 1
                print(f"  circle of {len(comp)} across {len(ideas)} ideas: " + ", ".join(sorted(name(m) for m in comp)))
            elif show_all:
                print(f"  circle of {len(comp)} inside {next(iter(ideas))}: " + ", ".join(sorted(name(m) for m in comp)))
    return 1 if circles else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

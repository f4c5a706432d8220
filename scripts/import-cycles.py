#!/usr/bin/env python3
"""Import cycles between the files of one crate.

A file's module uses another's when its code names a path into it
(`crate::a::b::Item`, `super::x`, `use crate::{a, b::c}`); a cycle is a
strongly connected set of two or more files. Child modules declared inside
a file count as their file; `#[cfg(test)]` items are left out (a test
module may reach anywhere in its crate). A child's uses of its ancestors
are not counted: a child module is part of its parent's implementation,
which is why Rust gives it the parent's private items. A parent that only
declares a child (`mod x;`) does not use it; a parent that re-exports or
calls into its child does. So modules that belong together and need each
other are one folder: a parent and its children.

  scripts/import-cycles.py                  every crate of the workspace
  scripts/import-cycles.py ffi/program/shim one crate (its folder)
  scripts/import-cycles.py --check          exit 1 if any crate has a cycle
"""
import os
import re
import subprocess
import sys
import json

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def strip_tests(text):
    """The code without its `#[cfg(test)]` items: a test module may reach
    anywhere in its crate without tangling the modules it tests."""
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?(?:mod\s+\w+\s*\{|use\s[^;]*;)", text):
        if m.start() < i:
            continue
        out.append(text[i : m.start()])
        if m.group(0).rstrip().endswith(";"):
            i = m.end()
            continue
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    # String literals can hold `crate::` text (messages): drop them.
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    return strip_tests(text)


def module_files(src_dir, root_file):
    """Module path (tuple) -> file, following `mod x;` declarations."""
    modules = {}

    def visit(path, file, is_mod_rs):
        modules[path] = file
        text = strip_comments(open(file).read())
        base = os.path.dirname(file) if is_mod_rs else os.path.splitext(file)[0]
        for m in re.finditer(r"(?:#\[path\s*=\s*\"([^\"]+)\"\]\s*)?(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text):
            name = m.group(2)
            for candidate, mod_rs in ((os.path.join(base, name + ".rs"), False), (os.path.join(base, name, "mod.rs"), True)):
                if os.path.isfile(candidate):
                    visit(path + (name,), candidate, mod_rs)
                    break

    visit((), root_file, True)
    return modules


def use_paths(text):
    """Every path the code names that starts at crate, super or self."""
    paths = []
    # use trees: use crate::{a::{b, c}, d};
    for m in re.finditer(r"\buse\s+((?:crate|super|self)\b[^;]*);", text, flags=re.S):
        paths.extend(expand_tree(re.sub(r"\s+", "", m.group(1))))
    for m in re.finditer(r"\b((?:crate|super|self)(?:::(?:super|\w+))+)", text):
        paths.append(m.group(1).split("::"))
    return paths


def expand_tree(tree):
    """`crate::{a::b,c}` -> [[crate,a,b],[crate,c]]."""
    depth = 0
    if "{" not in tree:
        return [tree.split("::")]
    i = tree.index("{")
    prefix = [p for p in tree[:i].split("::") if p]
    inner = tree[i + 1 : tree.rindex("}")]
    parts, cur = [], ""
    for ch in inner:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        parts.append(cur)
    out = []
    for part in parts:
        for sub in expand_tree(part):
            out.append(prefix + [s for s in sub if s])
    return out


def resolve(path, here, modules):
    """The file (module path) a path points into, or None."""
    if path[0] == "crate":
        base, rest = (), path[1:]
    else:
        base = here
        rest = list(path)
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
    best = None
    cur = tuple(base)
    if cur in modules:
        best = cur
    for name in rest:
        cur = cur + (name,)
        if cur in modules:
            best = cur
        else:
            break
    return best


def graph(crate_dir):
    src = os.path.join(crate_dir, "src")
    roots = [f for f in ("lib.rs", "main.rs") if os.path.isfile(os.path.join(src, f))]
    edges = {}
    for root in roots:
        modules = module_files(src, os.path.join(src, root))
        for path, file in modules.items():
            text = strip_comments(open(file).read())
            for used in use_paths(text):
                target = resolve(used, path, modules)
                # A child module is part of its parent (Rust gives it its
                # ancestors' private items by design): its uses of an
                # ancestor are not counted. A parent's uses of its child
                # are; `mod x;` itself is not a path and adds none.
                if target is None or path[: len(target)] == target:
                    continue
                edges.setdefault(modules[path], set()).add(modules[target])
            edges.setdefault(file, set())
    return edges


def cycles(edges):
    """Tarjan's strongly connected components of two or more files."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
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
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(edges):
        if v not in index:
            strong(v)
    return out


def workspace_crates():
    meta = json.loads(subprocess.check_output(["cargo", "metadata", "--no-deps", "--format-version", "1"], cwd=ROOT))
    return sorted(os.path.dirname(p["manifest_path"]) for p in meta["packages"])


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    check = "--check" in sys.argv
    crates = [os.path.abspath(os.path.join(ROOT, a)) for a in args] or workspace_crates()
    found = 0
    for crate in crates:
        edges = graph(crate)
        for comp in cycles(edges):
            found += 1
            rel = [os.path.relpath(f, ROOT) for f in comp]
            print(f"{os.path.relpath(crate, ROOT) or '.'}: a cycle of {len(rel)} files:")
            for f in rel:
                inside = sorted(os.path.relpath(t, ROOT) for t in edges[os.path.join(ROOT, f)] if os.path.relpath(t, ROOT) in rel)
                print(f"  {f} -> {', '.join(inside)}")
    print(f"{found} cycles")
    if check and found:
        sys.exit(1)


if __name__ == "__main__":
    main()

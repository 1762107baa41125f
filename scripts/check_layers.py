#!/usr/bin/env python3
"""Checks kip's layering (docs/DESIGN.md §1): lang → resolve → compile → exec/engine.

1. `compile/` is pure: it never names the engine, SPI, the executor or the
   session settings (`grep -rn "engine::\\|pgrx::spi\\|Spi::\\|exec::" src/compile`
   prints nothing, nor does a search for `guc::`, `pgrx::` and `space::`).
2. The module import graph of the crate, file by file, has no cycle through
   a file of `engine/`, `compile/`, `resolve/`, `search/` or `bootstrap/`;
   and the graph of the top-level modules (`api`, `engine`, `resolve`,
   `compile`, `exec`, …) has no cycle at all: the layers form a DAG.
   An edge A → B means A names an item of B's module (`use crate::…`,
   `super::…`, `crate::x::y` in an expression); `mod` declarations and the
   re-exports of a parent module are not edges of their own.

Prints the offending lines or cycles and exits 1; prints a summary and exits 0
otherwise. Runs without a build: `python3 scripts/check_layers.py`.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
LAYERED = ("engine", "compile", "resolve", "search", "bootstrap")
FORBIDDEN_IN_COMPILE = re.compile(r"engine::|pgrx::spi|Spi::|exec::|guc::|\bpgrx::|space::")


def module_files():
    """crate module path (tuple) → file path, for every .rs file outside src/lang."""
    mods = {}
    for dirpath, dirnames, filenames in os.walk(ROOT):
        rel = os.path.relpath(dirpath, ROOT)
        if rel.split(os.sep)[0] == "lang":
            continue
        for f in filenames:
            if not f.endswith(".rs"):
                continue
            parts = [] if rel == "." else rel.split(os.sep)
            stem = f[:-3]
            if stem in ("lib", "mod"):
                path = tuple(parts)
            else:
                path = tuple(parts + [stem])
            mods[path] = os.path.join(dirpath, f)
    return mods


def strip_comments(text):
    """The code of a file without comments and without its unit tests (an
    inline `#[cfg(test)] mod tests` at the end, whose `super::` is the file)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.split(r"#\[cfg\(test\)\]\s*mod tests", text)[0]
    return "\n".join(re.sub(r"//.*$", "", line) for line in text.splitlines())


def expand_use(prefix, body):
    """`a::{b, c::d}` → [a::b, a::c::d] (one level of nesting is enough here)."""
    out = []
    depth, start, items = 0, 0, []
    for i, ch in enumerate(body):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(body[start:i])
            start = i + 1
    items.append(body[start:])
    for item in items:
        item = item.strip()
        if not item:
            continue
        m = re.match(r"^([\w:]*?)(?:::)?\{(.*)\}$", item, flags=re.S)
        if m:
            out.extend(expand_use(prefix + ([m.group(1)] if m.group(1) else []), m.group(2)))
        else:
            out.append("::".join(prefix + [item.split(" as ")[0].strip()]))
    return out


def references(module, text):
    """Absolute module paths named by a file."""
    refs = []
    for m in re.finditer(r"\buse\s+((?:crate|super|self)(?:::\w+)*)(?:::\{(.*?)\})?\s*;", text, flags=re.S):
        base = m.group(1).split("::")
        if m.group(2) is not None:
            refs.extend(expand_use(base, m.group(2)))
        else:
            refs.append("::".join(base))
    for m in re.finditer(r"(?<![\w:])((?:crate|super)(?:::\w+)+)", text):
        refs.append(m.group(1))
    # A child module named by a relative path (`find::execute` in engine/mod.rs).
    for m in re.finditer(r"(?<![\w:])(\w+)::", text):
        if m.group(1) not in ("crate", "super", "self"):
            refs.append("::".join(["self", m.group(1)]))
    out = []
    for r in refs:
        parts = r.split("::")
        cur = list(module)
        if parts[0] == "crate":
            cur, parts = [], parts[1:]
        while parts and parts[0] in ("super", "self"):
            if parts[0] == "super":
                cur = cur[:-1]
            parts = parts[1:]
        out.append(tuple(cur + parts))
    return out


def resolve(path, mods, module):
    """Longest prefix of `path` that is a module file (a relative path that
    names no child module of `module` is not a module reference)."""
    floor = len(module) + 1 if path[: len(module)] == module and len(path) > len(module) else 0
    for n in range(len(path), floor - 1, -1):
        if path[:n] in mods:
            return path[:n]
    return None


def is_layered(module):
    return bool(module) and module[0] in LAYERED


def main():
    mods = module_files()
    failures = []

    # 1. compile/ is pure.
    for module, file in sorted(mods.items()):
        if module[:1] != ("compile",):
            continue
        for n, line in enumerate(strip_comments(open(file).read()).splitlines(), 1):
            if FORBIDDEN_IN_COMPILE.search(line):
                failures.append(f"{os.path.relpath(file, ROOT + '/..')}:{n}: compile/ must stay pure: {line.strip()}")

    # 2. No cycle through a layered file.
    graph = {m: set() for m in mods}
    for module, file in mods.items():
        text = strip_comments(open(file).read())
        for ref in references(module, text):
            target = resolve(ref, mods, module)
            if target is None or target == module:
                continue
            # A child naming its own parent module only for a re-export is
            # still an edge: the parent is a file of its own.
            graph[module].add(target)

    index, low, on_stack, stack, sccs = {}, {}, set(), [], []
    counter = [0]

    def strongconnect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            sccs.append(comp)

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            strongconnect(v)

    # 3. The top-level modules form a DAG.
    top = {}
    for a, targets in graph.items():
        for b in targets:
            ta, tb = (a[0] if a else "crate"), (b[0] if b else "crate")
            if ta != tb and "crate" not in (ta, tb):
                top.setdefault(ta, set()).add(tb)
    state = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(top.get(node, ())):
            if state.get(nxt) == "open":
                cycle = path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt]
                failures.append("layer cycle: " + " -> ".join(cycle))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(top):
        if node not in state:
            visit(node, [node])
    for comp in sccs:
        if len(comp) > 1 and any(is_layered(m) for m in comp):
            names = sorted("::".join(m) or "crate" for m in comp)
            edges = sorted(
                f"{'::'.join(a) or 'crate'} -> {'::'.join(b) or 'crate'}"
                for a in comp for b in graph[a] if b in comp
            )
            failures.append(f"import cycle of {len(comp)} files: {', '.join(names)}\n    " + "\n    ".join(edges))

    if failures:
        print("layering check FAILED:")
        for f in failures:
            print("  " + f)
        sys.exit(1)
    print(f"layering check passed: {len(mods)} files, compile/ pure, no import cycle through {', '.join(LAYERED)}, "
          f"{len(top)} top-level modules in a DAG")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The file-level call graph of a static library has no cycle.

    kernels_dag.py [--nm NM] [--groups a,b,...] [--print] LIBRARY.a|OBJECT.o...

Runs `nm -A -P` over the objects (the members of an archive, or object files), and draws an edge
from object X to object Y for every symbol X leaves undefined and Y defines (global or weak).
Fails (exit 1) on any cycle of that graph, printing each strongly connected set of objects and
the symbols along its edges. --groups names file-name prefixes (gemm,conv2d: gemm*.c.o and
conv2d*.c.o): the graph between the groups, one node per group, must have no cycle either, so
that, say, no GEMM file calls a conv2d file when a conv2d file calls GEMM. --print lists every
edge. Exit 0: no cycle; 2: bad usage or unreadable input; 77: nm is missing.
"""
import argparse
import collections
import re
import shutil
import subprocess
import sys

LINE = re.compile(r"^(?:.*\[(?P<member>[^\]]+)\]|(?P<file>[^:]+)): (?P<name>\S+) (?P<type>\S)")


def objects_graph(nm, paths):
    """{object: {object it calls: [symbols]}} and the set of objects."""
    try:
        out = subprocess.run([nm, "-A", "-P", *paths], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        msg = getattr(e, "stderr", None) or str(e)
        print(f"kernels_dag: {nm} failed on {' '.join(paths)}: {msg.strip()}", file=sys.stderr)
        sys.exit(2)
    defined, undefined, objs = {}, collections.defaultdict(set), set()
    for line in out.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        obj = (m.group("member") or m.group("file")).rsplit("/", 1)[-1]
        name, typ = m.group("name"), m.group("type")
        objs.add(obj)
        if typ in "Uvw":  # undefined (lower-case v, w: weak and undefined)
            undefined[obj].add(name)
        elif typ.isupper() or typ in "ui":  # global, weak-defined, unique or indirect definitions
            defined.setdefault(name, obj)
    graph = {o: collections.defaultdict(list) for o in objs}
    for obj, names in undefined.items():
        for name in sorted(names):
            dst = defined.get(name)
            if dst is not None and dst != obj:
                graph[obj][dst].append(name)
    return graph


def cycles(graph):
    """Strongly connected sets of more than one node (Tarjan), each sorted."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
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
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def group_graph(graph, prefixes):
    """The graph between the groups (objects whose name starts with a prefix), one node each."""
    def group(o):
        return next((p for p in prefixes if o.startswith(p)), None)

    g = {p: collections.defaultdict(list) for p in prefixes}
    for src, dsts in graph.items():
        for dst, names in dsts.items():
            a, b = group(src), group(dst)
            if a and b and a != b:
                g[a][b].extend(f"{src} -> {dst}: {n}" for n in names)
    return g


def report(kind, graph, comps):
    for comp in comps:
        print(f"kernels_dag: {kind} cycle among {', '.join(comp)}:")
        for a in comp:
            for b in comp:
                if b in graph.get(a, {}):
                    print(f"  {a} -> {b}: {' '.join(graph[a][b][:6])}{' ...' if len(graph[a][b]) > 6 else ''}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nm", default="nm")
    ap.add_argument("--groups", default="", help="comma-separated file-name prefixes")
    ap.add_argument("--print", action="store_true", help="list every edge")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()
    if shutil.which(a.nm) is None:
        print(f"kernels_dag: skipped: {a.nm} is not installed (binutils)")
        return 77
    graph = objects_graph(a.nm, a.paths)
    if len(graph) < 2:
        print(f"kernels_dag: {' '.join(a.paths)} holds {len(graph)} object(s): nothing to check", file=sys.stderr)
        return 2
    if a.print:
        for src in sorted(graph):
            for dst in sorted(graph[src]):
                print(f"{src} -> {dst}: {' '.join(graph[src][dst])}")
    comps = cycles(graph)
    report("file", graph, comps)
    bad = len(comps)
    prefixes = [p for p in a.groups.split(",") if p]
    if prefixes:
        gg = group_graph(graph, prefixes)
        gcomps = cycles(gg)
        report("group", gg, gcomps)
        bad += len(gcomps)
    n_edges = sum(len(d) for d in graph.values())
    if bad:
        print(f"kernels_dag: FAIL: {bad} cycle(s) in the call graph of {len(graph)} objects ({n_edges} edges)")
        return 1
    print(f"kernels_dag: {len(graph)} objects, {n_edges} file-level call edges, no cycle"
          + (f"; no cycle between the groups {', '.join(prefixes)}" if prefixes else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

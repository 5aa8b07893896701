#!/usr/bin/env python3
"""Where a build's time went, from ninja's own log (build/.ninja_log).

Usage: scripts/build_times.py [build-dir] [--top N]

Prints the compile seconds per group (src/<folder>, tests/<folder>, the
precompiled headers, links, the rest), the slowest edges, and the sum, so a
change to the build (#29: precompiled headers, fewer test executables) is
measured the same way before and after. Each edge is counted once, by its last
run (ninja appends a line every time it reruns an edge).
"""
import argparse
import collections
import os
import re
import sys


def read_log(path):
    edges = {}
    with open(path) as f:
        header = f.readline()
        if not header.startswith("# ninja log"):
            sys.exit(f"{path}: not a ninja log")
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 4:
                continue
            start_ms, end_ms, output = int(parts[0]), int(parts[1]), parts[3]
            edges[output] = (start_ms, end_ms)
    return edges


def group_of(output):
    if output.endswith((".gch", ".pch")) or "cmake_pch" in output:
        return "precompiled headers"
    if not output.endswith(".o"):
        return "links and other steps"
    m = re.search(r"(?:^|/)(src|tests)/([^/]+)/", output)
    if m:
        return f"{m.group(1)}/{m.group(2)}"
    return "other objects"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir", nargs="?", default="build")
    ap.add_argument("--top", type=int, default=10)
    args = ap.parse_args()
    edges = read_log(os.path.join(args.build_dir, ".ninja_log"))
    if not edges:
        sys.exit("no edges in the log")
    by_group = collections.defaultdict(lambda: [0, 0.0])
    for output, (start, end) in edges.items():
        g = by_group[group_of(output)]
        g[0] += 1
        g[1] += (end - start) / 1000.0
    total = sum(s for _, s in by_group.values())
    wall = (max(e for _, e in edges.values()) - min(s for s, _ in edges.values())) / 1000.0
    print(f"{len(edges)} edges, {total:.0f} s of compiler/linker time, {wall:.0f} s from first to last edge")
    print(f"{'group':28} {'edges':>6} {'seconds':>8} {'share':>6}")
    for name, (n, secs) in sorted(by_group.items(), key=lambda kv: -kv[1][1]):
        print(f"{name:28} {n:6d} {secs:8.0f} {secs / total:6.1%}")
    print(f"slowest {args.top}:")
    slowest = sorted(edges.items(), key=lambda kv: kv[1][0] - kv[1][1])[: args.top]
    for output, (start, end) in slowest:
        print(f"  {(end - start) / 1000.0:6.1f} s  {output}")


if __name__ == "__main__":
    main()

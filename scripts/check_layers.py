#!/usr/bin/python3
"""The layer rule of src/: which folder may include which.

Every folder directly under src/ sits in one layer of LAYERS below. A file may
include headers of its own folder, of any folder in a lower layer, and of
another folder in its own layer as long as the folders' includes form no
cycle. An include that goes up a layer, a cycle between folders, or a folder
that LAYERS does not place is an error.

Only `#include "x/..."` lines count, x being a folder under src/ (system and
third-party headers come in with <> or name no such folder). A subfolder
belongs to its top folder: src/connectors/targets is "connectors".

ARCHITECTURE.md shows the same table between its `layers:begin` and
`layers:end` markers; the check fails when the two differ, and
`--markdown` prints the table to paste there.

Usage: check_layers.py [--src DIR] [--doc FILE | --no-doc] [--markdown]
Exit status: 0 clean, 1 a rule broken, 2 bad usage.
"""

import argparse
import os
import re
import sys

# Lowest first. A folder may include folders of lower layers; folders of one
# layer may include each other only without forming a cycle.
LAYERS = [
    ("base", ["common"],
     "Status, UUIDs, time, JSON, processes, HTTP client, TLS"),
    ("infrastructure", ["store", "guard", "secrets", "auth", "kafka", "launch", "license"],
     "one concern each: the data-plane database, the connect policy, "
     "config encryption, passwords and tokens, librdkafka clients, "
     "the worker and loader launch contracts, the license"),
    ("subsystems", ["broker", "registry", "connectors", "events", "metrics", "runtime",
                    "warehouse"],
     "self-contained engines: the Kafka-protocol broker, the schema registry, "
     "sources, targets and connector types, resource events, metrics, worker rows and pod "
     "launchers, transformations"),
    ("data plane", ["dataflow"],
     "the stages inside a worker process"),
    ("model", ["model"],
     "the control-plane model: rows, repositories and domain rules of the "
     "control-plane tables (access, pipelines, metrics, transformations, "
     "operations)"),
    ("control plane", ["orchestrator", "backfill"],
     "the loops of the back end: launching workers, backfill runs and loaders"),
    ("http", ["api"],
     "the HTTP API: framework, handlers"),
    ("processes", ["cli"],
     "the `sluice` binary: one file per subcommand, wiring the layers below"),
]

# Includes the rule lets pass for now: ("src/<file>", "<included header>") ->
# why. Keep it empty; an entry is a debt with its reason, and one that no
# longer matches an include is an error (remove it).
KNOWN_EXCEPTIONS = {}

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE_SUFFIXES = (".h", ".hh", ".hpp", ".c", ".cc", ".cpp", ".inc", ".ipp")
MARK_BEGIN = "<!-- layers:begin -->"
MARK_END = "<!-- layers:end -->"


def layer_of():
    rank = {}
    for i, (_, folders, _) in enumerate(LAYERS):
        for f in folders:
            if f in rank:
                raise SystemExit(f"check_layers: {f} is in two layers")
            rank[f] = i
    return rank


def markdown_table():
    lines = ["| layer | folders under src/ | what it holds |", "| --- | --- | --- |"]
    for i, (name, folders, what) in enumerate(LAYERS):
        lines.append(f"| {i} {name} | {', '.join(f'`{f}`' for f in folders)} | {what} |")
    return "\n".join(lines)


def scan(src):
    """Yields (path relative to src, line number, from folder, to folder, header)."""
    folders = {d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d))}
    for top in sorted(folders):
        for dirpath, dirnames, filenames in os.walk(os.path.join(src, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, src)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or "/" not in m.group(1):
                            continue
                        to = m.group(1).split("/", 1)[0]
                        if to in folders:
                            yield rel, n, top, to, m.group(1)


def cycles(edges):
    """The folder sets that include each other round (strongly connected
    components of more than one folder), each sorted, in sorted order."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)


def check(src):
    rank = layer_of()
    errors = []
    edges = {}  # from folder -> {to folder: first "file:line"}
    folders = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    for f in folders:
        if f not in rank:
            errors.append(f"src/{f}/: folder not placed in any layer; add it to LAYERS in "
                          f"scripts/check_layers.py (and the table in ARCHITECTURE.md)")
    count = 0
    used = set()
    for rel, n, top, to, header in scan(src):
        if top == to or top not in rank or to not in rank:
            continue
        count += 1
        where = f"src/{rel}:{n}"
        if (f"src/{rel}", header) in KNOWN_EXCEPTIONS:
            used.add((f"src/{rel}", header))
            continue
        edges.setdefault(top, {}).setdefault(to, where)
        if rank[to] > rank[top]:
            errors.append(f"{where}: includes \"{header}\": {top} (layer {rank[top]} "
                          f"{LAYERS[rank[top]][0]}) may not include {to} (layer {rank[to]} "
                          f"{LAYERS[rank[to]][0]})")
    for file, header in sorted(set(KNOWN_EXCEPTIONS) - used):
        errors.append(f"{file}: known exception for \"{header}\" matches no include; "
                      f"remove it from KNOWN_EXCEPTIONS")
    for component in cycles({a: set(b) for a, b in edges.items()}):
        inside = [f"{a} -> {b} ({edges[a][b]})" for a in component for b in sorted(edges[a])
                  if b in component]
        errors.append(f"folder cycle among {', '.join(component)}: {'; '.join(inside)}")
    return errors, count, sum(len(v) for v in edges.values())


def check_doc(doc):
    try:
        with open(doc, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        return [f"{doc}: {e.strerror}"]
    begin, end = text.find(MARK_BEGIN), text.find(MARK_END)
    if begin < 0 or end < begin:
        return [f"{doc}: no {MARK_BEGIN} ... {MARK_END} section"]
    shown = text[begin + len(MARK_BEGIN):end].strip()
    if shown != markdown_table():
        return [f"{doc}: the layer table differs from LAYERS in scripts/check_layers.py; "
                f"paste the output of `scripts/check_layers.py --markdown` between the markers"]
    return []


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description="Checks the include layers of src/.")
    p.add_argument("--src", default=os.path.join(root, "src"), help="the source tree (src/)")
    p.add_argument("--doc", default=os.path.join(root, "ARCHITECTURE.md"),
                   help="the document that shows the table (ARCHITECTURE.md)")
    p.add_argument("--no-doc", action="store_true", help="do not compare with the document")
    p.add_argument("--markdown", action="store_true", help="print the layer table and exit")
    args = p.parse_args(argv)
    if args.markdown:
        print(markdown_table())
        return 0
    if not os.path.isdir(args.src):
        print(f"check_layers: {args.src} is not a folder", file=sys.stderr)
        return 2
    errors, count, edges = check(args.src)
    if not args.no_doc:
        errors += check_doc(args.doc)
    for e in errors:
        print(e)
    folders = len([d for d in os.listdir(args.src) if os.path.isdir(os.path.join(args.src, d))])
    print(f"check_layers: {folders} folders, {count} includes across folders "
          f"({edges} folder edges), {len(KNOWN_EXCEPTIONS)} known exceptions, "
          f"{len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/python3
"""Call cycles between source files: file A calls a function defined in file B, and B
(directly, or around a loop through other files) calls one defined in A. Layers call
downwards only (programs -> daemon modules -> lib), so a cycle is a defect.

usage: check-call-cycles.py [SRCDIR]   (default: the tree this script is in)

Reads the non-static function definitions with ctags (universal-ctags) in lib/, daemon/,
cli/ and hook/, then the calls in every file. Prints one line per cycle and, under it,
which functions each file of the cycle calls in the next; exits 1 if there is a cycle,
0 if none, 77 (skip) without ctags. tests/run-tests.sh runs it."""
import os
import re
import shutil
import subprocess
import sys

SOURCE_DIRS = ('lib', 'daemon', 'cli', 'hook')
CALL = re.compile(r'\b([A-Za-z_]\w*)\s*\(')
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)


def source_files(root):
    files = []
    for top in SOURCE_DIRS:
        for d, _, names in os.walk(os.path.join(root, top)):
            files += [os.path.join(d, f) for f in sorted(names) if f.endswith('.c')]
    return files


def definitions(files):
    """name -> the file defining it, for names defined (non-static) in exactly one file:
    main() and help() exist once per program and call nothing across files."""
    out = subprocess.run(['ctags', '-x', '--c-kinds=f', '--extras=-F'] + files,
                         capture_output=True, text=True, check=True).stdout
    where = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) < 5 or f[1] != 'function':
            continue
        before_name = line.split(f[3], 1)[1].split(f[0] + '(', 1)[0]
        if 'static' not in before_name:
            where.setdefault(f[0], set()).add(f[3])
    return {name: next(iter(fs)) for name, fs in where.items() if len(fs) == 1}


def call_edges(files, defs):
    """file -> {called file: sorted function names}."""
    edges = {}
    for f in files:
        with open(f, errors='replace') as fh:
            text = COMMENT.sub('', fh.read())
        for name in set(CALL.findall(text)):
            g = defs.get(name)
            if g and g != f:
                edges.setdefault(f, {}).setdefault(g, []).append(name)
    return edges


def cycles(edges):
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
    if not shutil.which('ctags'):
        print('check-call-cycles: ctags (universal-ctags) not installed, skipping', file=sys.stderr)
        return 77
    files = source_files(root)
    edges = call_edges(files, definitions(files))
    found = cycles(edges)
    for component in found:
        rel = [os.path.relpath(f, root) for f in component]
        print('cycle: ' + ' <-> '.join(rel))
        for a in component:
            for b in component:
                if b in edges.get(a, {}):
                    print('  %s -> %s: %s' % (os.path.relpath(a, root), os.path.relpath(b, root),
                                              ', '.join(sorted(edges[a][b]))))
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())

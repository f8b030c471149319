"""File-level import cycles in each crate of a workspace: file A imports
file B when A names (by `use` or a path in code) an item that B
defines; a re-export (`pub use`) is followed to the file that defines
the item, and is not itself a use."""
import os, re, sys
from collections import defaultdict

root = sys.argv[1]

def crate_srcs():
    for dirpath, dirs, files in os.walk(root):
        parts = dirpath.split(os.sep)
        if 'target' in parts or '.git' in parts or any(p.startswith('target') for p in parts):
            continue
        if os.path.basename(dirpath) == 'src' and os.path.exists(os.path.join(os.path.dirname(dirpath), 'Cargo.toml')):
            yield dirpath

def modpath(src, f):
    rel = os.path.relpath(f, src)[:-3].split(os.sep)
    if rel[-1] in ('mod', 'lib', 'main'):
        rel = rel[:-1]
    return tuple(rel)

def clean(text):
    text = re.sub(r'#\[cfg\(test\)\]\s*mod tests\s*\{.*', '', text, flags=re.S)
    return '\n'.join(l for l in text.split('\n') if not l.strip().startswith('//'))

total = 0
for src in crate_srcs():
    files, texts = {}, {}
    for dp, ds, fs in os.walk(src):
        for f in fs:
            if f.endswith('.rs'):
                p = os.path.join(dp, f)
                mp = modpath(src, p)
                files[mp] = p
                texts[mp] = clean(open(p).read())
    # re-exports: (module, name) -> child module
    reexports = {}
    for mp, text in texts.items():
        for m in re.finditer(r'\bpub(?:\([a-z]+\))? use\s+(?:self::)?([a-z_][a-z0-9_]*)::([^;]*);', text, flags=re.S):
            child = mp + (m.group(1),)
            if child in files:
                for name in re.findall(r'\b([A-Za-z_][A-Za-z0-9_]*)\b', m.group(2)):
                    reexports[(mp, name)] = child
    def resolve(path):
        for k in range(len(path), 0, -1):
            t = tuple(path[:k])
            if t in files:
                seen = 0
                while k < len(path) and (t, path[k]) in reexports and seen < 5:
                    t = reexports[(t, path[k])]
                    seen += 1
                return t
        return None
    edges = defaultdict(set)
    for mp, text in texts.items():
        isdir = os.path.basename(files[mp]) in ('mod.rs', 'lib.rs', 'main.rs')
        here = list(mp) if isdir else list(mp[:-1])
        body = re.sub(r'\bpub(?:\([a-z]+\))? use [^;]*;', '', text, flags=re.S)
        targets = []
        for m in re.finditer(r'\buse\s+(?:self::)?([a-z_][a-z0-9_]*)((?:::\{?[A-Za-z_][A-Za-z0-9_]*)*)', body):
            head = m.group(1)
            if head in ('crate', 'super', 'self') or tuple(here + [head]) not in files:
                continue
            targets.append(here + [head] + [x.strip('{') for x in m.group(2).split('::')[1:]])
        for m in re.finditer(r'\b(crate|super(?:::super)*)((?:::\{?[A-Za-z_][A-Za-z0-9_]*)+)', body):
            kind, path = m.group(1), [x.strip('{') for x in m.group(2).split('::')[1:]]
            if kind == 'crate':
                base = []
            else:
                ups = kind.count('super')
                base = list(here)[:len(here) - ups] if len(here) >= ups else []
            targets.append(base + path)
        for t in targets:
            r = resolve(t)
            if r is not None and r != mp:
                edges[mp].add(r)
    sys.setrecursionlimit(10000)
    idx, low, st, on, res, c = {}, {}, [], set(), [], [0]
    def sc(v):
        idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
        for w in edges[v]:
            if w not in idx:
                sc(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], idx[w])
        if low[v] == idx[v]:
            comp = []
            while True:
                w = st.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                res.append(comp)
    for v in list(files):
        if v not in idx:
            sc(v)
    for comp in res:
        total += 1
        print(os.path.relpath(src, root), sorted('/'.join(x) or 'lib' for x in comp))
        for a in comp:
            for b in sorted(edges[a]):
                if b in comp:
                    print('   ', '/'.join(a) or 'lib', '->', '/'.join(b) or 'lib')
print("file-level import cycles:", total)

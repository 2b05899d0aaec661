"""House rules, checked on the source tree: no import circles, no function over 150 lines, no
file over 800 lines.

Import circles (Python, python/veil). A node is a file. An edge A -> B is any `import veil...` or
`from ... import ...` in A that names B, at module level *or inside a function*: a lazy import
still makes A depend on B (the circle `leak/accept.py` <-> `reproduce_ghost.py` was a lazy one),
and it only hides the circle until the first call. Imports under `if TYPE_CHECKING:` count too:
they run under type checkers, and a type needed on both sides belongs in a module both import.
A name imported from a package (`from veil.core import Row`) is followed through the package's
`__init__` to the module that defines it, so a package's re-exports do not tie every submodule to
every other; a name that names a submodule (`from . import report`) is an edge to that submodule.

Import circles (Rust, each crate's src/). A node is a module (a file; `mod x { ... }` blocks count
as part of their file). An edge A -> B is a path in A (`use crate::...`, `use super::...`,
`use self::...`, a `use` of a child module, or a `crate::`/`super::` path in code) naming an item
defined in B; a path through a `pub use` re-export is followed to the module that defines the
item. A module split across files (`sim.rs` with `sim/functional.rs`: a child adding `impl Sim`
methods, its parent calling them) is one module: the check is made at every level of the module
tree among *sibling subtrees*, each child with its descendants as one node, so edges between a
module and its own ancestors do not count but `config.rs` -> `sim/bitmaps.rs` -> ... -> `config.rs`
does. `#[cfg(test)]` modules and `tests.rs` files are left out (test code reaches everywhere).

Layering: core -> foundations (crypto, trace) -> systems -> front (the `veil` package, its API and
CLI; the bindings crate veil-py). A Python module or a crate may depend only on layers below its
own and on its own package; LAYERS names each package's layer (docs/architecture.md draws it).

Long files: every source or documentation file of the repository (`.py`, `.rs`, `.c`, `.h`, `.md`,
`.sh` under the folders in FILE_DIRS, and README.md) over MAX_FILE_LINES lines fails naming it,
except the files in LONG_FILES_OK, each with its reason.

Long functions: every `def` in python/veil (ast: from `def` to its last line, nested functions
included) and every `fn` with a body in crates/*/src (a brace-matching scan on the source with
strings, chars and comments blanked), over MAX_LINES lines, fails naming it. Left out: test code
(`#[cfg(test)]` modules, `tests.rs`, tests/ folders) and the files in LONG_OK (none: generated
tables are constants, not functions, so they never count).
"""

from __future__ import annotations

import ast
import functools
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PY_ROOT = ROOT / "python"
CRATES = ROOT / "crates"
MAX_LINES = 150
LONG_OK: set[str] = set()  # "path::function" that may exceed MAX_LINES, with the reason beside it
MAX_FILE_LINES = 800
FILE_DIRS = ("benches", "crates", "docs", "examples", "python", "tests", "tools", "tracer", "workloads")
FILE_SUFFIXES = {".py", ".rs", ".c", ".h", ".md", ".sh"}
# "path" that may exceed MAX_FILE_LINES -> why.
LONG_FILES_OK = {
    "tracer/veiltrace.c": "the tracer's version, which keys every cached trace, is this one file's hash "
                          "(python/veil/trace/runner.py): a split would change that key",
}


# ---------------------------------------------------------------- graphs


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (first node repeated at the end) per strongly connected component of size > 1."""
    return [_cycle_in(comp, edges) for comp in knots(edges)]


def knots(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:  # Tarjan; graphs here are a few hundred nodes, recursion is fine
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
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
                comps.append(comp)

    for v in sorted(edges):
        if v not in index:
            strong(v)
    return sorted((sorted(c) for c in comps), key=min)


def _cycle_in(comp: list[str], edges: dict[str, set[str]]) -> list[str]:
    """A shortest cycle through the component's first node (breadth-first inside the component)."""
    start, members = comp[0], set(comp)
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges.get(v, ())):
                if w not in members:
                    continue
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, v, start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp  # unreachable for a strongly connected component


# ---------------------------------------------------------------- Python


def _parse(path: Path) -> ast.Module:
    return _parse_text(path.read_text(), str(path))


@functools.lru_cache(maxsize=None)
def _parse_text(text: str, filename: str) -> ast.Module:
    return ast.parse(text, filename=filename)


def _rust_code(path: Path) -> str:
    """The file's code as the scans read it: literals and comments blanked, test modules left out."""
    return _rust_code_text(path.read_text())


@functools.lru_cache(maxsize=None)
def _rust_code_text(text: str) -> str:
    return strip_test_modules(blank_rust(text))


def _py_modules(root: Path) -> dict[str, Path]:
    mods = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def _is_package(mods: dict[str, Path], name: str) -> bool:
    return name in mods and mods[name].name == "__init__.py"


def _defining_module(mods, trees, pkg: str, name: str, seen=()) -> str | None:
    """Where `from pkg import name` really comes from: a submodule, a re-export's origin, or pkg
    (None: a module outside the tree, such as the compiled `veil._native`)."""
    if f"{pkg}.{name}" in mods:
        return f"{pkg}.{name}"
    if not _is_package(mods, pkg) or pkg in seen:
        return pkg
    bound = False
    for node in trees[pkg].body:  # the names the package binds at its top level
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    src = _resolve_from(mods, pkg, True, node)
                    if src in mods:
                        return _defining_module(mods, trees, src, alias.name, (*seen, pkg))
                    bound = True
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound |= node.name == name
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.Import)):
            names = [a.asname or a.name.split(".")[0] for a in node.names] if isinstance(node, ast.Import) else \
                [t.id for t in ast.walk(node) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)]
            bound |= name in names
    return pkg if bound or name == "__getattr__" else None


def _resolve_from(mods, module: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def python_import_graph(root: Path) -> tuple[dict[str, set[str]], dict[str, Path]]:
    """Edges between modules of the package(s) under `root` (module names -> module names)."""
    mods = _py_modules(root)
    trees = {m: _parse(p) for m, p in mods.items()}
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for mod, tree in trees.items():
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                src = _resolve_from(mods, mod, _is_package(mods, mod), node)
                targets = [_defining_module(mods, trees, src, a.name) or "" for a in node.names if a.name != "*"]
                if not targets or any(a.name == "*" for a in node.names):
                    targets.append(src)
            for t in targets:  # a module outside the tree (`veil._native`, the standard library): no edge
                if t in mods and t != mod:
                    edges[mod].add(t)
    return edges, mods


def python_long_functions(root: Path, limit: int = MAX_LINES) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(_parse(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    out.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}"
                               f"::{node.name} ({n} lines)")
    return out


# ---------------------------------------------------------------- Rust


# A literal's prefix (`r"`, `b'`) counts only where no identifier character comes before it.
_RUST_TOKEN = re.compile(r"""//[^\n]*|/\*|(?<!\w)b?r(\#*)"|(?<!\w)b?"(?:[^"\\]|\\.)*"|(?<!\w)b?'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'\n])'""", re.S)
_NESTED = re.compile(r"/\*|\*/")


def blank_rust(src: str) -> str:
    """`src` with comments, strings and char literals turned to spaces (newlines kept)."""
    out, pos, n = [], 0, len(src)
    while (m := _RUST_TOKEN.search(src, pos)) is not None:
        tok, end = m.group(0), m.end()
        if tok == "/*":  # block comments nest
            depth, end = 1, m.end()
            while depth and end < n:
                nxt = _NESTED.search(src, end)
                if nxt is None:
                    end = n
                    break
                depth += 1 if nxt.group(0) == "/*" else -1
                end = nxt.end()
        elif m.group(1) is not None:  # a raw string: up to the quote and as many #s
            close = src.find('"' + m.group(1), end)
            end = n if close < 0 else close + 1 + len(m.group(1))
        out.append(src[pos: m.start()])
        out.append(re.sub(r"[^\n]", " ", src[m.start(): end]))
        pos = end
    out.append(src[pos:])
    return "".join(out)


def _match_brace(code: str, open_at: int) -> int:
    depth = 0
    for k in range(open_at, len(code)):
        if code[k] == "{":
            depth += 1
        elif code[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    raise ValueError("unbalanced braces")


_CFG_TEST_MOD = re.compile(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{")


def strip_test_modules(code: str) -> str:
    """Blank every `#[cfg(test)] mod x { ... }` (newlines kept)."""
    while m := _CFG_TEST_MOD.search(code):
        end = _match_brace(code, m.end() - 1)
        code = code[: m.start()] + re.sub(r"[^\n]", " ", code[m.start(): end + 1]) + code[end + 1:]
    return code


def _rust_files(src: Path):
    for path in sorted(src.rglob("*.rs")):
        if path.name == "tests.rs" or "tests" in path.relative_to(src).parts[:-1]:
            continue
        yield path


def rust_long_functions(code: str, limit: int = MAX_LINES) -> list[tuple[str, int, int]]:
    """(name, first line, lines) of every `fn` whose body spans more than `limit` lines."""
    out = []
    for m in re.finditer(r"\bfn\s+(\w+)", code):
        depth, k = 0, m.end()
        while k < len(code):  # the body's `{` is the first at bracket depth 0; `;`: no body
            ch = code[k]
            if ch in "(<[":
                depth += 1
            elif ch in ")>]" and not (ch == ">" and code[k - 1] == "-"):
                depth -= 1
            elif depth <= 0 and ch in "{;":
                break
            k += 1
        if k >= len(code) or code[k] == ";":
            continue
        end = _match_brace(code, k)
        first = code.count("\n", 0, m.start()) + 1
        lines = code.count("\n", 0, end) + 1 - first + 1
        if lines > limit:
            out.append((m.group(1), first, lines))
    return out


_ITEM = r"(?:fn|struct|enum|trait|type|const|static|union|mod|macro_rules!)\s+{name}\b"


def _expand_use(tree: str) -> list[str]:
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e] (spaces removed; `as` aliases dropped)."""
    tree = re.sub(r"\s+as\s+\w+", "", tree)
    tree = re.sub(r"\s+", "", tree)
    if "{" not in tree:
        return [tree]
    head, _, rest = tree.partition("{")
    body = rest[: rest.rfind("}")]
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    return [p for part in parts if part for p in _expand_use(head + part)]


class RustCrate:
    """A crate's module tree and the uses between its modules."""

    def __init__(self, src: Path):
        self.src = src
        self.code: dict[tuple[str, ...], str] = {}
        self.files: dict[tuple[str, ...], Path] = {}
        for path in _rust_files(src):
            rel = path.relative_to(src).with_suffix("").parts
            mod = tuple(p for p in rel if p not in ("lib", "main", "mod"))
            if rel[-1] == "mod":
                mod = rel[:-1]
            if rel in (("lib",), ("main",)):
                mod = ()
            self.files[mod] = path
            self.code[mod] = _rust_code(path)

    def name(self, mod: tuple[str, ...]) -> str:
        return str(self.files[mod].relative_to(ROOT) if self.files[mod].is_relative_to(ROOT) else self.files[mod])

    def _defines(self, mod, item: str) -> bool:
        return re.search(_ITEM.format(name=re.escape(item)), self.code[mod]) is not None

    def _reexport(self, mod, item: str, seen) -> tuple[str, ...] | None:
        """The module a `pub use` in `mod` takes `item` from, if it re-exports it."""
        for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", self.code[mod]):
            for path in _expand_use(m.group(1)):
                segs = path.split("::")
                if segs[-1] == item or segs[-1] == "*":
                    target = self.resolve(mod, segs if segs[-1] == item else [*segs[:-1], item], seen)
                    if target is not None and (segs[-1] == item or self._defines(target, item)):
                        return target
        return None

    def resolve(self, here, segs: list[str], seen=()) -> tuple[str, ...] | None:
        """The module defining what the path `segs`, written in module `here`, names."""
        if not segs:
            return None
        head, rest = segs[0], list(segs[1:])
        if head == "crate":
            base = ()
        elif head == "self":
            base = here
        elif head == "super":
            base = here[:-1]
            while rest and rest[0] == "super":
                base, rest = base[:-1], rest[1:]
        elif here + (head,) in self.code:
            base, rest = here + (head,), rest
        else:
            return None  # another crate, std, or a local name
        while rest and base + (rest[0],) in self.code:
            base, rest = base + (rest[0],), rest[1:]
        if not rest or base not in self.code:
            return base if base in self.code else None
        item = rest[0]
        if self._defines(base, item) or (base, item) in seen:
            return base
        return self._reexport(base, item, (*seen, (base, item))) or base

    def uses(self) -> dict[tuple[str, ...], dict[tuple[str, ...], str]]:
        """module -> {module it uses: one path that shows it}."""
        out: dict[tuple[str, ...], dict[tuple[str, ...], str]] = {m: {} for m in self.code}
        for mod, code in self.code.items():
            paths = []
            for m in re.finditer(r"\buse\s+([^;]+);", code):
                paths += _expand_use(m.group(1))
            code_wo_use = re.sub(r"\buse\s+[^;]+;", " ", code)
            paths += [p.group(0) for p in re.finditer(r"\b(?:crate|super|self)(?:::\w+)+", code_wo_use)]
            children = {m[-1] for m in self.code if len(m) == len(mod) + 1 and m[: len(mod)] == mod}
            paths += [p.group(0) for p in re.finditer(r"(?<![\w:])(\w+)(?:::\w+)+", code_wo_use)
                      if p.group(1) in children]
            for path in paths:
                segs = [s for s in path.split("::") if s]
                if segs and segs[-1] == "*":
                    segs = segs[:-1]
                target = self.resolve(mod, segs)
                if target is not None and target != mod:
                    out[mod].setdefault(target, path)
        return out


def rust_sibling_cycles(crate: RustCrate) -> list[str]:
    """Circles among sibling subtrees at every level of the crate's module tree (see the top)."""
    uses = crate.uses()
    problems = []
    parents = {m[:-1] for m in crate.code if m} | {()}
    for parent in sorted(parents):
        depth = len(parent)

        def child_of(m):
            return m[: depth + 1] if len(m) > depth and m[:depth] == parent else None

        edges: dict[str, set[str]] = {}
        why: dict[tuple[str, str], str] = {}
        for a, targets in uses.items():
            ca = child_of(a)
            if ca is None:
                continue
            for b, path in targets.items():
                cb = child_of(b)
                if cb is None or cb == ca:
                    continue
                na, nb = crate.name(ca), crate.name(cb)
                edges.setdefault(na, set()).add(nb)
                why.setdefault((na, nb), f"{crate.name(a)}: {path}")
        for cycle in find_cycles(edges):
            steps = [f"{a} -> {b} ({why[(a, b)]})" for a, b in zip(cycle, cycle[1:])]
            problems.append("circle: " + "; ".join(steps))
    return problems


# ---------------------------------------------------------------- the checks


def _py_cycle_lines(root: Path) -> list[str]:
    edges, mods = python_import_graph(root)
    rel = {m: str(p.relative_to(ROOT) if p.is_relative_to(ROOT) else p) for m, p in mods.items()}
    out = []
    for comp in knots(edges):
        line = "circle: " + " -> ".join(rel[m] for m in _cycle_in(comp, edges))
        if len(comp) > len(_cycle_in(comp, edges)) - 1:
            line += " (all tied together: " + ", ".join(rel[m] for m in comp) + ")"
        out.append(line)
    return out


def _crates() -> list[Path]:
    return sorted(p / "src" for p in CRATES.iterdir() if (p / "src").is_dir())


def test_no_python_import_circles():
    problems = _py_cycle_lines(PY_ROOT)
    assert not problems, "import circles in python/veil:\n" + "\n".join(problems)


def test_no_rust_module_circles():
    problems = [p for src in _crates() for p in rust_sibling_cycles(RustCrate(src))]
    assert not problems, "module circles in crates/*/src:\n" + "\n".join(problems)


def long_files(root: Path, dirs=FILE_DIRS, limit: int = MAX_FILE_LINES) -> list[str]:
    """`path (n lines)` of every file under `dirs` (and README.md) with one of FILE_SUFFIXES and
    more than `limit` lines; build outputs (`target/`) and hidden folders are not walked."""
    paths = [root / "README.md"] if (root / "README.md").exists() else []
    for d in dirs:
        paths += [p for p in sorted((root / d).rglob("*")) if p.suffix in FILE_SUFFIXES and p.is_file()
                  and not {"target", "__pycache__"} & set(p.relative_to(root).parts)
                  and not any(part.startswith(".") for part in p.relative_to(root).parts)]
    out = []
    for path in paths:
        n = len(path.read_text(errors="replace").splitlines())
        if n > limit:
            out.append(f"{path.relative_to(root).as_posix()} ({n} lines)")
    return out


def test_no_long_files():
    long = [entry for entry in long_files(ROOT) if entry.split(" (")[0] not in LONG_FILES_OK]
    assert not long, (f"files over {MAX_FILE_LINES} lines (split before you add: one page or module per "
                      "part):\n" + "\n".join(long))


def test_no_long_functions():
    long = python_long_functions(PY_ROOT / "veil")
    for src in _crates():
        for path in _rust_files(src):
            code = _rust_code(path)
            long += [f"{path.relative_to(ROOT)}::{name} (line {line}, {n} lines)"
                     for name, line, n in rust_long_functions(code)]
    long = [entry for entry in long if entry.split(" (")[0] not in LONG_OK]
    assert not long, f"functions over {MAX_LINES} lines (split along their phases):\n" + "\n".join(long)


# ---------------------------------------------------------------- layering

# Python packages under veil (the root package, the API and the CLI are the front) and crates.
LAYERS = {
    "core": 0, "veil-core": 0,
    "crypto": 1, "trace": 1, "veil-crypto": 1, "veil-trace": 1,
    "memnet": 2, "enclave": 2, "oram": 2, "memcrypt": 2, "he": 2,
    "veil-memnet": 2, "veil-enclave": 2, "veil-oram": 2, "veil-memcrypt": 2, "veil-he-taco": 2,
    "front": 3, "veil-py": 3,
}


def _py_package(module: str) -> str:
    parts = module.split(".")
    return "front" if len(parts) == 1 or parts[1] in ("api", "cli") else parts[1]


def layering_problems(edges: dict[str, set[str]], package=_py_package) -> list[str]:
    """Edges that go up a layer or sideways into another package of the same layer."""
    out = []
    for a, targets in sorted(edges.items()):
        pa = package(a)
        for b in sorted(targets):
            pb = package(b)
            if pa == pb:
                continue
            if pa not in LAYERS or pb not in LAYERS:
                out.append(f"{a} -> {b}: package {pa if pa not in LAYERS else pb!r} has no layer in LAYERS")
            elif LAYERS[pb] >= LAYERS[pa]:
                out.append(f"{a} -> {b}: {pa} (layer {LAYERS[pa]}) may not depend on {pb} (layer {LAYERS[pb]})")
    return out


def crate_edges() -> dict[str, set[str]]:
    edges = {}
    for toml in sorted(CRATES.glob("*/Cargo.toml")):
        meta = tomllib.loads(toml.read_text())
        deps = set(meta.get("dependencies", {})) | set(meta.get("build-dependencies", {}))
        edges[meta["package"]["name"]] = {d for d in deps if d.startswith("veil-")}
    return edges


def test_layering():
    edges, _ = python_import_graph(PY_ROOT)
    problems = layering_problems(edges) + layering_problems(crate_edges(), package=lambda c: c)
    assert not problems, "layering (core -> foundations -> systems -> front):\n" + "\n".join(problems)


# ---------------------------------------------------------------- the checks can fail


def test_layering_check_flags_a_system_importing_another():
    edges = {"veil.oram.engine": {"veil.core.rows", "veil.memnet.sim"}, "veil.core.rows": {"veil.cli"},
             "veil.memcrypt.input": {"veil.trace.format"}, "veil.cli": {"veil.oram.engine"}}
    problems = layering_problems(edges)
    assert len(problems) == 2, problems
    assert "veil.oram.engine -> veil.memnet.sim" in problems[1] and "veil.core.rows -> veil.cli" in problems[0]
    assert layering_problems({"veil-crypto": {"veil-memnet"}}, package=lambda c: c)


def test_python_checker_flags_a_lazy_circle_and_a_long_function(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import A\n")
    (pkg / "a.py").write_text("A = 1\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("def f():\n    from pkg.c import C\n    return C\n")
    (pkg / "c.py").write_text("from pkg import A\nfrom pkg.sub import b\nC = A\n")
    edges, _ = python_import_graph(tmp_path)
    assert "pkg.a" in edges["pkg.c"] and "pkg" not in edges["pkg.c"], "a re-export is followed to its origin"
    cycles = find_cycles(edges)
    assert cycles == [["pkg.c", "pkg.sub.b", "pkg.c"]]
    assert any("b.py" in line and "c.py" in line for line in _py_cycle_lines(tmp_path))
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (pkg / "long.py").write_text(f"def short():\n    pass\n\n\ndef long():\n{body}\n")
    assert [entry.split("::")[1] for entry in python_long_functions(tmp_path)] == [f"long ({MAX_LINES + 1} lines)"]


def _write_crate(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_rust_checker_flags_a_circle_through_a_submodule_and_a_re_export(tmp_path):
    src = _write_crate(tmp_path / "src", {
        "lib.rs": "pub mod config;\npub mod sim;\npub use config::Config;\n",
        "config.rs": "pub struct Config;\nimpl Config { fn check(&self) { crate::sim::Fetch::parse(); } }\n",
        "sim.rs": "mod fetch;\npub use fetch::Fetch;\nuse crate::Config;\npub struct Sim(Config);\n",
        # a child using its parent's type is one module split across files: not a circle by itself
        "sim/fetch.rs": "use super::Sim;\npub struct Fetch;\nimpl Fetch { pub fn parse() {} }\n",
    })
    problems = rust_sibling_cycles(RustCrate(src))
    assert len(problems) == 1 and "config.rs" in problems[0] and "sim.rs" in problems[0], problems
    # the shared type moved to the config: no circle left
    (src / "config.rs").write_text("pub struct Config;\npub struct Fetch;\n")
    (src / "sim.rs").write_text("mod fetch;\nuse crate::Config;\nuse crate::config::Fetch;\npub struct Sim(Config);\n")
    (src / "sim/fetch.rs").write_text("use super::Sim;\n")
    assert rust_sibling_cycles(RustCrate(src)) == []


def test_rust_checker_flags_a_circle_through_use_trees_and_child_paths(tmp_path):
    src = _write_crate(tmp_path / "src", {
        "lib.rs": "mod input;\nmod sampled;\n",
        "input.rs": "use crate::{error::E, sampled::{self, Sampling}};\npub fn for_each() {}\n",
        "sampled.rs": "// use crate::input::for_each; in a comment\nfn go() { let s = \"crate::input\"; "
                      "crate::input::for_each(); }\npub struct Sampling;\n",
    })
    problems = rust_sibling_cycles(RustCrate(src))
    assert len(problems) == 1 and "input.rs" in problems[0] and "sampled.rs" in problems[0], problems
    (src / "sampled.rs").write_text("// crate::input::for_each()\nfn go() { let s = \"crate::input\"; }\n"
                                    "pub struct Sampling;\n")
    assert rust_sibling_cycles(RustCrate(src)) == [], "comments and strings are not uses"


def test_long_file_check_flags_a_long_page_and_skips_build_outputs(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("line\n" * (MAX_FILE_LINES + 1))
    (tmp_path / "docs" / "short.md").write_text("line\n" * MAX_FILE_LINES)
    (tmp_path / "crates" / "target").mkdir(parents=True)
    (tmp_path / "crates" / "target" / "gen.rs").write_text("x\n" * (MAX_FILE_LINES + 1))
    (tmp_path / "README.md").write_text("x\n" * (MAX_FILE_LINES + 5))
    assert long_files(tmp_path) == [f"README.md ({MAX_FILE_LINES + 5} lines)",
                                    f"docs/page.md ({MAX_FILE_LINES + 1} lines)"]


def test_rust_long_function_scan_skips_strings_comments_and_tests():
    body = "\n".join(f"    let x{i} = \"}}\"; // }}" for i in range(MAX_LINES))
    long_fn = f"fn long(a: Vec<u8>) -> Result<(), E> {{\n{body}\n    let c = '}}';\n}}\n"
    short_fn = "fn short<'a>(x: &'a str) -> &'a str { x }\ntrait T { fn decl(&self); }\n"
    code = blank_rust(short_fn + long_fn)
    assert rust_long_functions(code) == [("long", 3, MAX_LINES + 3)]
    in_tests = blank_rust(f"#[cfg(test)]\nmod tests {{\n{long_fn}}}\n")
    assert rust_long_functions(strip_test_modules(in_tests)) == []
    assert rust_long_functions(blank_rust(short_fn + long_fn), limit=MAX_LINES + 3) == []

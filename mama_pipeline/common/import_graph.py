"""The package's import graph, read with ``ast``: which package modules each module imports, and when.

Every import of a ``mama_pipeline`` module counts (module level, inside a function, under ``TYPE_CHECKING``),
each with whether it runs when the module loads. A name imported from an area's face (its package, whose
``DEFINED_IN`` table names the module that defines each public name: ``common/face.py``) counts as an import of
that module, not of the whole area. The architecture test checks its layers on this graph; the assets' code versions
(``common/code_version.py``) hash the modules an asset's definition reaches through it.
"""

from __future__ import annotations

import ast
import functools
import json
from collections.abc import Set
from pathlib import Path

from mama_pipeline.common.derived_cache import kept
from mama_pipeline.common.face import FACE_TABLE
from mama_pipeline.common.project_files import PACKAGE_DIR


def modules(package: Path = PACKAGE_DIR) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package (the wheel's ``_shipped`` copies excluded)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if "_shipped" in parts or "__pycache__" in parts:
            continue
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@functools.cache
def _tree(path: Path, mtime_ns: int) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def module_tree(path: Path) -> ast.Module:
    """The parsed module (cached while the file is unchanged)."""
    return _tree(path, path.stat().st_mtime_ns)


def face_table(init: Path) -> dict[str, str]:
    """A package's face: public name -> the module that defines it (its ``__init__.py``'s ``DEFINED_IN`` literal;
    empty for a package without one)."""
    if not init.is_file():
        return {}
    for node in module_tree(init).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [FACE_TABLE]:
            table = ast.literal_eval(node.value)  # a ValueError names a table that is not a literal
            if not isinstance(table, dict):
                raise ValueError(f"{init}:{node.lineno}: {FACE_TABLE} is not a literal dict")
            return table
    return {}


def imported(
    node: ast.Import | ast.ImportFrom, path: Path, known: Set[str], module: str, through_faces: bool = True
) -> list[tuple[str, str]]:
    """(name the statement binds, package module) for each ``mama_pipeline`` module one import statement of
    ``module`` (the file ``path``) imports; a name imported from a face is an import of the module that defines it
    (``face_table``), or of the face itself when ``through_faces`` is false."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    root = path.parents[module.count(".") + (path.name == "__init__.py")]  # the folder holding the package

    def resolved(base: str, name: str) -> str:
        if f"{base}.{name}" in known:
            return f"{base}.{name}"
        face = face_table(root.joinpath(*base.split("."), "__init__.py")) if through_faces and base in known else {}
        return face.get(name, base)

    if isinstance(node, ast.Import):
        pairs = [(a.asname or a.name.partition(".")[0], a.name) for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join(anchor + ([base] if base else []))
        pairs = [(a.asname or a.name, resolved(base, a.name)) for a in node.names]
    out = []
    for bound, name in pairs:
        if name == "mama_pipeline" or name.startswith("mama_pipeline."):
            while name not in known and "." in name:
                name = name.rpartition(".")[0]
            out.append((bound, name))
    return out


def imports(path: Path, known: set[str], module: str, through_faces: bool = True) -> list[tuple[str, int, bool]]:
    """(imported package module, line, runs at load) for every import of a ``mama_pipeline`` module in a file
    (``imported``)."""
    out: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, at_load: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out.extend(
                    (name, child.lineno, at_load) for _, name in imported(child, path, known, module, through_faces)
                )
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, False)
            elif isinstance(child, ast.If) and _is_type_checking(child):
                visit(child, False)
            elif isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):  # expressions hold no import
                visit(child, at_load)

    visit(module_tree(path), True)
    return out


def found_at_run_time(path: Path) -> bool:
    """A package whose modules are imported by name at run time (``FOUND_AT_RUN_TIME = True`` in its
    ``__init__.py``, e.g. ``retrieval/_kinds/``): importing it reaches every module in it."""
    return path.name == "__init__.py" and any(
        isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "FOUND_AT_RUN_TIME" for t in node.targets)
        and isinstance(node.value, ast.Constant)
        and node.value.value is True
        for node in module_tree(path).body
    )


def graph(package: Path = PACKAGE_DIR) -> dict[str, set[str]]:
    """Module -> the package modules it imports (every kind of import; importing ``a.b.c`` runs ``a`` and
    ``a.b`` too; importing a package found at run time, its modules). Parsing every module costs seconds, paid by
    each process that loads the definitions, so the graph is kept on disk under a digest of every module's name
    and bytes (``derived_cache.kept``)."""
    mods = modules(package)

    def load(path: Path) -> dict[str, set[str]]:
        return {m: set(targets) for m, targets in json.loads(path.read_text()).items()}

    def dump(out: dict[str, set[str]], path: Path) -> None:
        path.write_text(json.dumps({m: sorted(t) for m, t in out.items()}))

    sources = (f"{m}\0".encode() + p.read_bytes() for m, p in mods.items())
    return kept("import_graph", sources, lambda: _graph(mods), load, dump)


def _graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    known = set(mods)
    found = {m for m, p in mods.items() if found_at_run_time(p)}
    out = {}
    for module, path in mods.items():
        targets = {t for t, _, _ in imports(path, known, module)}
        targets |= {m for t in targets & found for m in known if m.startswith(f"{t}.")}
        parents = {".".join(t.split(".")[:i]) for t in targets | {module} for i in range(1, t.count(".") + 1)}
        out[module] = (targets | parents) & known - {module}
    return out


def reached(start: str, edges: dict[str, set[str]]) -> set[str]:
    """``start`` and every module it imports, transitively, in the import graph ``edges`` (``graph``)."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        module = todo.pop()
        if module not in seen and module in edges:
            seen.add(module)
            todo += edges[module]
    return seen

"""The package modules one top-level definition of a module refers to, read statically.

A definition's code (its decorators, defaults and annotations, its body and the lambdas, comprehensions, inner
functions and classes in it) loads names as globals. Each is bound by the module's top-level statements: an import
binds a name to the package module it imports (through a face, the module that defines the name:
``import_graph.imported``); any other statement (an assignment, a ``def``, a ``class``) binds its names to the
package modules it imports itself and to those of the names its own code loads, recursively (a statement binding
nothing, ``HOOKS.append(f)``, counts for each name it loads). Which names a statement binds and loads is read from
its bytecode, the statement compiled alone (the compiler tells a global from a local); a module's table is derived
once per process and kept on disk (``common/derived_cache.py``).
"""

from __future__ import annotations

import ast
import dis
import functools
import hashlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import CodeType

from mama_pipeline.common.derived_cache import kept
from mama_pipeline.common.import_graph import imported, module_tree

_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS"})  # a global's (or builtin's) value


def _codes(code: CodeType) -> Iterator[CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _codes(const)


def _bound_and_loaded(stmt: ast.stmt, path: Path) -> tuple[set[str], set[str]]:
    """(the names a top-level statement binds in its module, the names its code loads as globals)."""
    top = compile(ast.Module(body=[stmt], type_ignores=[]), str(path), "exec", dont_inherit=True)
    bound: set[str] = set()
    loaded: set[str] = set()
    for code in _codes(top):
        for ins in dis.get_instructions(code):
            if ins.opname in _LOADS:
                loaded.add(ins.argval)
            elif ins.opname == "STORE_GLOBAL" or (ins.opname == "STORE_NAME" and code is top):
                bound.add(ins.argval)
    return bound, loaded


Bindings = dict[str, tuple[frozenset[str], frozenset[str]]]  # top-level name -> (package modules, names loaded)


def _derived(path: Path, module: str, known: frozenset[str]) -> Bindings:
    """Top-level name -> (the package modules its binding statements import, the names their code loads)."""
    modules: dict[str, set[str]] = {}
    names: dict[str, set[str]] = {}
    for stmt in module_tree(path).body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for name, target in imported(stmt, path, known, module):
                modules.setdefault(name, set()).add(target)
            continue
        bound, loaded = _bound_and_loaded(stmt, path)
        targets = {
            target
            for node in ast.walk(stmt)
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for _, target in imported(node, path, known, module)
        }
        for name in bound or loaded:  # a statement binding nothing (``HOOKS.append(f)``) changes what it loads
            modules.setdefault(name, set()).update(targets)
            names.setdefault(name, set()).update(loaded)
    return {
        name: (frozenset(modules.get(name, ())), frozenset(names.get(name, ())))
        for name in modules.keys() | names.keys()
    }


@functools.cache
def _resolving(known: frozenset[str], inits: tuple[Path, ...]) -> bytes:
    """What resolves a module's imports besides its own bytes: the package's module names and its faces (every
    package's ``__init__.py``)."""
    h = hashlib.sha256("\0".join(sorted(known)).encode())
    for init in inits:
        h.update(hashlib.sha256(init.read_bytes()).digest())
    return h.digest()


@functools.cache
def _bindings(path: Path, mtime_ns: int, module: str, known: frozenset[str], inits: tuple[Path, ...]) -> Bindings:
    def load(file: Path) -> Bindings:
        return {n: (frozenset(m), frozenset(loaded)) for n, (m, loaded) in json.loads(file.read_text()).items()}

    def dump(table: Bindings, file: Path) -> None:
        file.write_text(json.dumps({n: [sorted(m), sorted(loaded)] for n, (m, loaded) in table.items()}))

    sources = [f"{module}\0".encode() + path.read_bytes(), _resolving(known, inits)]
    return kept("definition_uses", sources, lambda: _derived(path, module, known), load, dump)


def bindings(modules: Mapping[str, Path], module: str) -> Bindings:
    """``module``'s top-level names, each with the package modules its binding statements import and the names
    their code loads: derived once per process, and kept on disk (``derived_cache.kept``) under the module's bytes,
    the package's module names and its faces."""
    path = modules[module]
    inits = tuple(p for _, p in sorted(modules.items()) if p.name == "__init__.py")
    return _bindings(path, path.stat().st_mtime_ns, module, frozenset(modules), inits)


def used_modules(modules: Mapping[str, Path], module: str, qualname: str) -> set[str]:
    """The package modules (of ``modules``, name -> file) that the top-level definition holding the function
    ``qualname`` (its ``__qualname__``) of ``module`` refers to. A function made inside another one
    (``factory.<locals>.f``) is made by the module's statements that call the factory: what they use counts too."""
    table = bindings(modules, module)
    top = qualname.partition(".")[0]
    if top not in table:
        raise ValueError(f"{modules[module]}: {qualname!r} is not defined at the top level of {module}")
    todo = [top]
    if "<locals>" in qualname:
        todo += [name for name, (_, loaded) in table.items() if top in loaded]
    seen: set[str] = set()
    out: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name not in table:
            continue
        seen.add(name)
        targets, loaded = table[name]
        out |= targets
        todo += loaded
    return out

"""The import rules of docs/architecture.md, checked on the package's import graph (``common/import_graph.py``,
read with ``ast``): the picture cannot drift.

The ``layers`` block of the document lists the package's units bottom-up. A unit may import only units on
earlier lines (module-level, function-level and ``TYPE_CHECKING`` imports all count); units on one line do not
import each other. A settings module (``settings.py`` and every ``<area>/settings.py``) forms the ``settings``
unit and may also import its own area's modules. Separately, no two modules of the package import each other,
directly or through others, by any kind of import.

Each area has a public face (docs/architecture.md, "Faces"): another part imports an area's package
(``from mama_pipeline.evaluation import name``, resolved to the defining module by ``common/face.py``'s table) or
one of the entry modules the root wiring loads by name (``settings``, ``definitions``, ``cli``), never another
module of it; an area's other modules are private by name (``_``-prefixed), Dagster wiring aside.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from mama_pipeline.common.import_graph import imports, module_tree, modules
from mama_pipeline.common.settings_base import Section

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "mama_pipeline"
DOC = ROOT / "docs" / "architecture.md"
NAME_RULE_EXEMPT = {
    "__init__",
    "assets",
    "checks",
    "definitions",
    "settings",
    "cli",
    "sensors",
    "schedules",
    "held_out_assets",
}  # docs/architecture.md, "Names"
# folders without a face: libraries imported module by module, the sample scripts, and scale_out (a code location
# that Dagster loads by its module name, -m mama_pipeline.scale_out.dask_definitions)
INFRASTRUCTURE = {"common", "store", "llm", "sample_data", "scale_out"}
FACE_ENTRIES = {"settings", "definitions", "cli"}  # an area's modules another part may import by name


def unit(module: str) -> str:
    """The unit a module belongs to: ``common``, ``settings``, ``cli``, an area folder or a root module."""
    parts = module.split(".")
    if len(parts) == 1:
        return "mama_pipeline"
    if parts[-1] == "settings" and len(parts) <= 3:
        return "settings"
    if parts[-1] == "cli" and len(parts) <= 3:
        return "cli"
    return parts[1]


def documented_layers(doc: Path = DOC) -> list[list[str]]:
    """The ``layers`` block of docs/architecture.md: one line per layer, bottom first."""
    match = re.search(r"```layers\n(.*?)```", doc.read_text(), re.S)
    assert match, f"{doc}: no ```layers block"
    return [
        re.sub(r"#.*", "", line).split() for line in match.group(1).splitlines() if re.sub(r"#.*", "", line).strip()
    ]


def violations(package: Path = PACKAGE, doc: Path = DOC) -> list[str]:
    """Every import against the documented layers, as ``file:line: a -> b (why)``."""
    layers = documented_layers(doc)
    rank = {u: i for i, layer in enumerate(layers) for u in layer}
    mods = modules(package)
    out = [
        f"unit {u!r} is in the code but not in {doc.name}'s layers"
        for u in sorted({unit(m) for m in mods} - set(rank) - {"mama_pipeline"})
    ]
    for module, path in mods.items():
        src = unit(module)
        for target, line, _ in imports(path, set(mods), module):
            dst = unit(target)
            if dst in (src, "mama_pipeline") or src not in rank or dst not in rank:  # unknown units: reported above
                continue
            if src == "settings" and len(module.split(".")) == 3 and target.split(".")[1] == module.split(".")[1]:
                continue  # a settings module may import its own area's modules
            if rank[dst] >= rank[src]:
                where = "a later layer" if rank[dst] > rank[src] else "the same layer"
                out.append(f"{path.relative_to(package.parent)}:{line}: {src} imports {dst} ({target}), {where}")
    return out


def area(module: str, path: Path, package: Path = PACKAGE) -> str | None:
    """The area folder a module belongs to (None: a root module or an infrastructure folder)."""
    parts = path.relative_to(package).parts
    return parts[0] if len(parts) > 1 and parts[0] not in INFRASTRUCTURE else None


def face_violations(package: Path = PACKAGE) -> list[str]:
    """Every import from another area that does not go through its face or an entry module, as
    ``file:line: a reaches into b (target)``."""
    mods = modules(package)
    out = []
    for module, path in mods.items():
        src = area(module, path, package)
        for target, line in sorted({(t, n) for t, n, _ in imports(path, set(mods), module, through_faces=False)}):
            dst = area(target, mods[target], package)
            parts = target.split(".")
            if dst is None or dst == src or len(parts) == 2 or (len(parts) == 3 and parts[2] in FACE_ENTRIES):
                continue
            out.append(
                f"{path.relative_to(package.parent)}:{line}: {src or module} reaches into {dst} ({target}): "
                f"import it from the face, mama_pipeline.{dst}"
            )
    return out


def import_cycles(package: Path = PACKAGE) -> list[list[str]]:
    """Import cycles among modules, every kind of import counted (strongly connected components > 1)."""
    mods = modules(package)
    graph = {m: sorted({t for t, _, _ in imports(p, set(mods), m) if t != m}) for m, p in mods.items()}
    index, low, stack, on, cycles, counter = {}, {}, [], set(), [], [0]

    def strongconnect(v: str) -> None:  # Tarjan, iterative enough for this package's depth
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, []):
            if w not in index:
                strongconnect(w)
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
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            strongconnect(v)
    return cycles


CHECK_DECORATORS = {"asset_check", "multi_asset_check"}


def wiring_problems(package: Path = PACKAGE) -> list[str]:
    """An area (a folder with ``definitions.py``) against docs/architecture.md's "What each folder holds": its
    ``assets.py``; ``build_defs(settings)`` in ``definitions.py``, wired into the root ``definitions.py``; its
    asset checks in ``checks.py`` only, which its ``definitions.py`` imports."""
    mods = modules(package)
    root = imports(package / "definitions.py", set(mods), "mama_pipeline.definitions")
    out = []
    for wiring in sorted(package.glob("*/definitions.py")):
        area, rel = wiring.parent, wiring.parent.relative_to(package.parent)
        if not (area / "assets.py").exists():
            out.append(f"{rel}: an area without assets.py")
        build = [f for f in module_tree(wiring).body if isinstance(f, ast.FunctionDef) and f.name == "build_defs"]
        if [a.arg for f in build for a in f.args.args] != ["settings"]:
            out.append(f"{rel}/definitions.py: no build_defs(settings)")
        if f"mama_pipeline.{area.name}.definitions" not in {t for t, _, _ in root}:
            out.append(f"{rel}: not built by the root definitions.py")
        checks = f"mama_pipeline.{area.name}.checks"
        wired = {t for t, _, _ in imports(wiring, set(mods), f"mama_pipeline.{area.name}.definitions")}
        if (area / "checks.py").exists() and checks not in wired:
            out.append(f"{rel}/definitions.py: does not wire checks.py")
    for path in mods.values():
        if path.name == "checks.py":
            continue
        for node in ast.walk(module_tree(path)):
            for deco in getattr(node, "decorator_list", []):
                func = deco.func if isinstance(deco, ast.Call) else deco
                if getattr(func, "id", getattr(func, "attr", None)) in CHECK_DECORATORS:
                    out.append(f"{path.relative_to(package.parent)}:{deco.lineno}: an asset check outside checks.py")
    return out


def test_every_area_has_its_wiring_files_and_its_checks_live_in_checks_py():
    assert wiring_problems() == []


def test_each_settings_module_is_the_section_of_its_folder():
    """Each ``<folder>/settings.py`` is the section of the configuration named for its folder (docs/architecture.md)."""
    from mama_pipeline.settings import PipelineSettings

    sections = {k for k, f in PipelineSettings.model_fields.items() if isinstance(f.default, Section)}
    folders = {p.parent.name for p in PACKAGE.glob("*/settings.py")}
    assert sections == folders
    for name in sorted(folders):
        field_type = type(PipelineSettings.model_fields[name].default)
        assert field_type.__module__ == f"mama_pipeline.{name}.settings", name


def test_the_document_names_every_common_module():
    """The document's ``common/`` entry names each of its helper modules: a new one is listed too."""
    bullet = re.search(r"^- `common/`:(.*?)^- ", DOC.read_text(), re.S | re.M)
    assert bullet, f"{DOC}: no `common/` entry"
    named = set(re.findall(r"`(\w+)`", bullet.group(1)))
    assert {p.stem for p in (PACKAGE / "common").glob("*.py")} - {"__init__"} - named == set()


def test_every_settings_key_the_document_names_exists():
    from mama_pipeline.settings import PipelineSettings

    mods = modules()

    def is_key(name: str) -> bool:  # not a file (`leaderboard.json`) nor code (`judging._judge.judge_pair_slices`)
        parts = name.split(".")
        file_or_code = (
            parts[-1] in ("json", "html", "py", "md", "yaml") or f"mama_pipeline.{parts[0]}.{parts[1]}" in mods
        )
        return parts[0] in PipelineSettings.model_fields and not file_or_code

    keys = [k for k in re.findall(r"`([a-z_]+(?:\.[a-z_]+)+)`", DOC.read_text()) if is_key(k)]
    assert keys, "the document names no settings key"
    for key in keys:
        model: type = PipelineSettings
        for part in key.split("."):
            assert part in model.model_fields, f"{DOC.name}: `{key}` is not a settings key"
            model = model.model_fields[part].annotation


def test_every_import_follows_the_documented_layers():
    found = violations()
    assert not found, "imports against docs/architecture.md:\n" + "\n".join(found)


def test_common_imports_no_area():
    mods = modules()
    up = [
        f"{m}: {t}"
        for m, p in mods.items()
        if unit(m) == "common"
        for t, _, _ in imports(p, set(mods), m)
        if unit(t) not in ("common", "mama_pipeline")
    ]
    assert not up


def test_the_package_has_no_import_cycle():
    assert import_cycles() == []


def test_no_module_name_repeats_outside_the_wiring_names():
    seen: dict[str, list[str]] = {}
    for module, path in modules().items():
        name = path.stem if path.stem == "__init__" else path.stem.removeprefix("_")  # private: the same name
        if name not in NAME_RULE_EXEMPT and "sample_data" not in module:
            seen.setdefault(name, []).append(module)
    assert {n: m for n, m in seen.items() if len(m) > 1} == {}


def test_other_parts_import_an_area_through_its_face():
    found = face_violations()
    assert not found, "imports past an area's face (docs/architecture.md, Faces):\n" + "\n".join(found)


def test_an_area_module_outside_the_wiring_is_private_by_name():
    public = [
        module
        for module, path in modules().items()
        if area(module, path)
        and path.stem not in NAME_RULE_EXEMPT
        and not any(part.startswith("_") for part in path.relative_to(PACKAGE).parts[1:])
    ]
    assert public == []


@pytest.fixture
def scratch_package(tmp_path):
    """A three-unit package and its document, to show the checks can fail."""
    pkg = tmp_path / "mama_pipeline"
    for rel, text in {
        "__init__.py": "",
        "common/__init__.py": "",
        "common/helpers.py": "X = 1\n",
        "corpus/__init__.py": "",
        "corpus/assets.py": "from mama_pipeline.common.helpers import X\n",
        "release/__init__.py": "",
        "release/assets.py": "from mama_pipeline.corpus.assets import X\n",
    }.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    doc = tmp_path / "architecture.md"
    doc.write_text("```layers\ncommon\ncorpus\nrelease\n```\n")
    return pkg, doc


def test_an_upward_import_a_function_level_one_and_a_cycle_are_caught(scratch_package):
    pkg, doc = scratch_package
    assert violations(pkg, doc) == [] and import_cycles(pkg) == []
    (pkg / "common/helpers.py").write_text("X = 1\n\n\ndef f():\n    from mama_pipeline.release import assets\n")
    assert violations(pkg, doc) == [
        "mama_pipeline/common/helpers.py:5: common imports release (mama_pipeline.release.assets), a later layer"
    ]
    cycle = ["mama_pipeline.common.helpers", "mama_pipeline.corpus.assets", "mama_pipeline.release.assets"]
    assert import_cycles(pkg) == [cycle]  # a function-level import closes a cycle too
    (pkg / "corpus/assets.py").write_text(
        "from mama_pipeline.common.helpers import X\nfrom mama_pipeline.release.assets import X as Y\n"
    )
    assert (
        "mama_pipeline/corpus/assets.py:2: corpus imports release (mama_pipeline.release.assets), a later layer"
        in violations(pkg, doc)
    )
    (pkg / "plan").mkdir()
    (pkg / "plan/__init__.py").write_text("")
    assert "unit 'plan' is in the code but not in architecture.md's layers" in violations(pkg, doc)


def test_a_check_in_assets_py_and_an_area_without_its_wiring_are_caught(scratch_package):
    pkg, _ = scratch_package
    (pkg / "definitions.py").write_text("from mama_pipeline.corpus.definitions import build_defs\n")
    (pkg / "corpus/definitions.py").write_text("def build_defs(settings):\n    return None\n")
    assert wiring_problems(pkg) == []
    (pkg / "corpus/assets.py").write_text("import dagster as dg\n\n\n@dg.asset_check(asset='x')\ndef c():\n    pass\n")
    (pkg / "corpus/checks.py").write_text("X = 1\n")
    (pkg / "release/definitions.py").write_text("def build_defs():\n    return None\n")
    (pkg / "release/assets.py").unlink()
    assert wiring_problems(pkg) == [
        "mama_pipeline/corpus/definitions.py: does not wire checks.py",
        "mama_pipeline/release: an area without assets.py",
        "mama_pipeline/release/definitions.py: no build_defs(settings)",
        "mama_pipeline/release: not built by the root definitions.py",
        "mama_pipeline/corpus/assets.py:4: an asset check outside checks.py",
    ]


@pytest.mark.parametrize(
    "back",
    [
        "def f():\n    from mama_pipeline.corpus.assets import X\n",
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from mama_pipeline.corpus.assets import X\n",
    ],
    ids=["function level", "TYPE_CHECKING"],
)
def test_a_cycle_inside_one_part_is_caught_whatever_its_kind_of_import(scratch_package, back):
    """The layers allow imports inside a part; the cycle rule still forbids two modules importing each other."""
    pkg, doc = scratch_package
    (pkg / "corpus/_sampling.py").write_text(back)
    (pkg / "corpus/assets.py").write_text("from mama_pipeline.corpus import _sampling\n\nX = 1\n")
    assert violations(pkg, doc) == []
    assert import_cycles(pkg) == [["mama_pipeline.corpus._sampling", "mama_pipeline.corpus.assets"]]


def test_only_the_root_definitions_read_the_settings_at_import():
    """Settings enter in one place (docs/architecture.md): no other module calls ``load_settings`` at load time."""
    found = []
    for module, path in modules().items():
        for node in module_tree(path).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for call in ast.walk(node):
                name = (
                    getattr(call.func, "id", getattr(call.func, "attr", None)) if isinstance(call, ast.Call) else None
                )
                if name == "load_settings":
                    found.append(module)
    assert found == ["mama_pipeline.definitions"]


def _writing_area(asset_def) -> str:
    """The area folder of the module that defines an asset (its op's function)."""
    fn = asset_def.op.compute_fn
    return getattr(fn, "decorated_fn", fn).__module__.split(".")[1]


def test_every_ddl_file_sits_under_the_area_that_writes_its_table():
    """``sql/tables/<area>/<table>.sql``: an asset's table under its defining module's area; a table no asset is
    named for (caches, logs, registries, submissions' records) under the area whose module names it."""
    from mama_pipeline.common.sql_contracts import contract_files
    from mama_pipeline.definitions import defs

    stray = [p.relative_to(ROOT) for p in (ROOT / "sql").rglob("*.sql") if p.parent.parent != ROOT / "sql" / "tables"]
    assert not stray, f"DDL files outside sql/tables/<area>/: {stray}"
    writers = {
        key.path[-1]: _writing_area(a) for a in defs.get_repository_def().assets_defs_by_key.values() for key in a.keys
    }
    misplaced = []
    for table, path in contract_files().items():
        area = path.parent.name
        if table in writers:
            ok = writers[table] == area
        else:
            folder = PACKAGE / area
            ok = folder.is_dir() and any(re.search(rf"[\"']{table}[\"']", p.read_text()) for p in folder.glob("*.py"))
        if not ok:
            misplaced.append(f"{path.relative_to(ROOT)}: written by {writers.get(table, 'no module of ' + area)}")
    assert not misplaced, "\n".join(misplaced)


def test_an_import_past_a_face_is_caught_and_a_face_name_resolves_to_its_module(scratch_package):
    pkg, _ = scratch_package
    (pkg / "corpus/_chunking.py").write_text("X = 1\n")
    (pkg / "corpus/_other.py").write_text("Y = 2\n")
    (pkg / "corpus/__init__.py").write_text('DEFINED_IN = {"X": "mama_pipeline.corpus._chunking"}\n')
    (pkg / "release/assets.py").write_text("from mama_pipeline.corpus import X\n")
    assert face_violations(pkg) == []
    mods = modules(pkg)
    assert [t for t, _, _ in imports(pkg / "release/assets.py", set(mods), "mama_pipeline.release.assets")] == [
        "mama_pipeline.corpus._chunking"
    ]  # the defining module, not the whole area
    (pkg / "release/assets.py").write_text(
        "from mama_pipeline.corpus import X\nfrom mama_pipeline.corpus._other import Y\n"
    )
    assert face_violations(pkg) == [
        "mama_pipeline/release/assets.py:2: release reaches into corpus (mama_pipeline.corpus._other): "
        "import it from the face, mama_pipeline.corpus"
    ]

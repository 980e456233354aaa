"""Each asset's code version moves with what its definition reaches, its tables' contracts and its settings only."""

from __future__ import annotations

import pytest

from mama_pipeline.common import code_version as cv
from mama_pipeline.common.import_graph import _graph, modules

PAGE = "mama_pipeline.evaluation._retrieval_page"  # the evaluation report's page module
EVALUATION = "mama_pipeline.evaluation.assets"


def clear() -> None:
    for cached in (cv.definition_reach, cv._reach_digest, cv._named_tables):
        cached.cache_clear()


@pytest.fixture
def edited(monkeypatch):
    """Versions computed with one module's or one contract's bytes changed (the files on disk untouched)."""
    paths, files, edges = cv._package()
    contracts = cv.table_contracts()

    def edit(module: str | None = None, table: str | None = None) -> None:
        changed = {**files, module: files[module] + b"\n# edited\n"} if module else files
        monkeypatch.setattr(cv, "_package", lambda: (paths, changed, edges))
        if table:
            monkeypatch.setattr(cv, "table_contracts", lambda: {**contracts, table: contracts[table] + b"-- edited\n"})
        clear()

    yield edit
    clear()


def versions() -> dict[str, str]:
    return {
        "corpus_chunks": cv.asset_code_version("mama_pipeline.corpus.assets", "corpus_chunks", ["corpus_chunks"], {}),
        "scoreboard": cv.asset_code_version(EVALUATION, "scoreboard", ["scoreboard"], {}),
        "evaluation_report": cv.asset_code_version(EVALUATION, "evaluation_report", ["evaluation_report"], {}),
        "leaderboard": cv.asset_code_version(
            "mama_pipeline.leaderboard.assets", "mamaretrieval_leaderboard", ["mamaretrieval_leaderboard"], {}
        ),
    }


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {k for k in before if before[k] != after[k]}


def test_the_evaluation_report_reaches_its_page_and_the_scoreboard_of_the_same_module_does_not():
    # evaluation_report calls write_report, ReportInputs and label_mix; the scoreboard's function uses none of the
    # page's names nor any module importing the page (evaluation/_beir_evaluation.py, the area's cli)
    assert PAGE in cv.definition_reach(EVALUATION, "evaluation_report")
    assert PAGE not in cv.definition_reach(EVALUATION, "scoreboard")


def test_the_segment_and_held_out_scoreboards_reach_neither_the_page_nor_the_assets_module():
    # they share table names and a store read with the evaluation assets (evaluation/_evaluation_tables.py), not
    # the assets' module, which imports the page
    for module, qualname in (
        ("mama_pipeline.evaluation._segment_assets", "segment_scoreboard"),  # and segment_significance, one function
        ("mama_pipeline.evaluation.held_out_assets", "held_out_scoreboard"),
    ):
        reach = cv.definition_reach(module, qualname)
        assert "mama_pipeline.evaluation._evaluation_tables" in reach
        assert PAGE not in reach and EVALUATION not in reach, qualname


def test_a_page_edit_moves_the_assets_whose_function_uses_it_only(edited):
    before = versions()
    assert versions() == before
    edited(module=PAGE)
    assert changed(before, versions()) == {"evaluation_report"}


def test_an_edit_to_the_asset_module_moves_each_of_its_assets(edited):
    before = versions()
    edited(module=EVALUATION)  # its constants and decorators' arguments live there
    assert changed(before, versions()) == {"scoreboard", "evaluation_report"}


def test_a_shared_module_edit_moves_every_asset_that_reaches_it(edited):
    before = versions()
    edited(module="mama_pipeline.resources")  # every one of these functions takes the settings or the store
    assert changed(before, versions()) == {"corpus_chunks", "scoreboard", "evaluation_report", "leaderboard"}


SCRATCH = {
    "__init__.py": "",
    "area/__init__.py": "",
    "area/_deep.py": "X = 1\n",
    "area/_left.py": "from mama_pipeline.area import _deep\n\n\ndef left():\n    return _deep.X\n",
    "area/_right.py": "def right(x):\n    return x + 1\n",
    "area/_late.py": "def late():\n    return 2\n",
    "area/_hook.py": "def hook():\n    return 4\n",
    "area/_kinds.py": "KINDS = ['a', 'b']\n",
    "area/_unused.py": "def unused():\n    return 3\n",
    "area/assets.py": """from mama_pipeline.area._hook import hook
from mama_pipeline.area._kinds import KINDS
from mama_pipeline.area._left import left
from mama_pipeline.area._right import right
from mama_pipeline.area._unused import unused

OFFSET = right(1)  # a constant made with a helper
HOOKS = []
HOOKS.append(hook)


def one():
    from mama_pipeline.area._late import late

    return left() + late()


def two():
    shifted = lambda: OFFSET  # noqa: E731
    return [shifted() for _ in range(2)] + HOOKS


def _made(kind):
    def made():
        return kind

    return made


MADE = [_made(k) for k in KINDS]
""",
}


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A package of one asset module and its helpers, read from its files at each version."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # its kept definition uses
    package = tmp_path / "mama_pipeline"
    for rel, text in SCRATCH.items():
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text(text)
    mods = modules(package)
    monkeypatch.setattr(cv, "_package", lambda: (mods, {m: p.read_bytes() for m, p in mods.items()}, _graph(mods)))
    clear()

    def edit(rel: str) -> None:
        (package / rel).write_text((package / rel).read_text() + "# edited\n")
        clear()

    yield edit
    clear()


def scratch_versions() -> dict[str, str]:
    return {q: cv.asset_code_version("mama_pipeline.area.assets", q, [q], {}) for q in ("one", "two")}


def test_each_asset_reaches_the_helpers_its_own_function_uses(scratch):
    area = "mama_pipeline.area"
    assert set(cv.definition_reach(f"{area}.assets", "one")) == {
        "mama_pipeline",
        area,
        f"{area}.assets",
        f"{area}._left",
        f"{area}._deep",  # what _left imports
        f"{area}._late",  # imported inside the function
    }
    assert set(cv.definition_reach(f"{area}.assets", "two")) == {
        "mama_pipeline",
        area,
        f"{area}.assets",
        f"{area}._right",  # through the constant the lambda returns
        f"{area}._hook",  # through the list a statement of the module appends it to
    }
    # a function made by a factory: the statement calling the factory counts
    assert f"{area}._kinds" in cv.definition_reach(f"{area}.assets", "_made.<locals>.made")
    with pytest.raises(ValueError, match="'three' is not defined at the top level of mama_pipeline.area.assets"):
        cv.definition_reach(f"{area}.assets", "three")


def test_a_helper_edit_moves_the_asset_using_it_and_an_asset_module_edit_moves_both(scratch):
    before = scratch_versions()
    scratch("area/_unused.py")
    assert scratch_versions() == before
    scratch("area/_deep.py")
    assert changed(before, after := scratch_versions()) == {"one"}
    scratch("area/_right.py")
    assert changed(after, again := scratch_versions()) == {"two"}
    scratch("area/assets.py")
    assert changed(again, scratch_versions()) == {"one", "two"}


def test_a_contract_edit_moves_the_assets_of_that_table(edited):
    before = versions()
    edited(table="corpus_chunks")
    assert "corpus_chunks" in changed(before, versions())
    assert "leaderboard" not in changed(before, versions())


def test_the_settings_count_by_the_declared_paths_and_retrievers_by_their_names():
    dump = {
        "retrieval": {"pool_depth": 10, "retrievers": [{"name": "bm25", "kind": "bm25", "params": {"k1": 0.9}}]},
        "evaluation": {"resamples": 1000, "seed": 0},
    }
    assert cv.settings_values(dump, ["retrieval.retrievers", "evaluation.resamples"]) == {
        "retrieval.retrievers": ["bm25"],
        "evaluation.resamples": 1000,
    }
    assert cv.settings_values(dump, ["evaluation"]) == {"evaluation": {"resamples": 1000, "seed": 0}}
    corpus = "mama_pipeline.corpus.assets"
    one = cv.asset_code_version(corpus, "corpus_chunks", ["x"], {"evaluation.resamples": 1000})
    assert one != cv.asset_code_version(corpus, "corpus_chunks", ["x"], {"evaluation.resamples": 2000})


def test_an_asset_without_a_declaration_is_an_error_naming_it():
    import types

    module = types.SimpleNamespace(__name__="mama_pipeline.example.assets", SETTINGS_READ={"a": "judging"})
    assert cv.declared_settings(module, "a") == ("judging",)
    with pytest.raises(ValueError, match="mama_pipeline.example.assets: asset 'b' has no entry in SETTINGS_READ"):
        cv.declared_settings(module, "b")

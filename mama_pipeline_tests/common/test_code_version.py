"""Each asset's code version moves with what its definition reaches, its tables' contracts and its settings only."""

from __future__ import annotations

import pytest

from mama_pipeline.common import code_version as cv

PAGE = "mama_pipeline.evaluation._retrieval_page"  # the evaluation report's page module


@pytest.fixture
def edited(monkeypatch):
    """Versions computed with one module's or one contract's bytes changed (the files on disk untouched)."""
    files, edges = cv._package()
    contracts = cv.table_contracts()

    def edit(module: str | None = None, table: str | None = None) -> None:
        changed = {**files, module: files[module] + b"\n# edited\n"} if module else files
        monkeypatch.setattr(cv, "_package", lambda: (changed, edges))
        if table:
            monkeypatch.setattr(cv, "table_contracts", lambda: {**contracts, table: contracts[table] + b"-- edited\n"})
        cv._reached_digest.cache_clear()
        cv._named_tables.cache_clear()

    yield edit
    cv._reached_digest.cache_clear()
    cv._named_tables.cache_clear()


def versions() -> dict[str, str]:
    return {
        "corpus_chunks": cv.asset_code_version("mama_pipeline.corpus.assets", ["corpus_chunks"], {}),
        "scoreboard": cv.asset_code_version("mama_pipeline.evaluation.assets", ["scoreboard"], {}),
        "leaderboard": cv.asset_code_version("mama_pipeline.leaderboard.assets", ["mamaretrieval_leaderboard"], {}),
    }


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {k for k in before if before[k] != after[k]}


def test_a_page_edit_moves_the_assets_whose_module_imports_it_only(edited):
    before = versions()
    assert versions() == before
    edited(module=PAGE)
    assert changed(before, versions()) == {"scoreboard"}


def test_a_shared_module_edit_moves_every_asset_that_reaches_it(edited):
    before = versions()
    edited(module="mama_pipeline.resources")  # every area's assets import the resources
    assert changed(before, versions()) == {"corpus_chunks", "scoreboard", "leaderboard"}


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
    one = cv.asset_code_version("mama_pipeline.corpus.assets", ["x"], {"evaluation.resamples": 1000})
    assert one != cv.asset_code_version("mama_pipeline.corpus.assets", ["x"], {"evaluation.resamples": 2000})


def test_an_asset_without_a_declaration_is_an_error_naming_it():
    import types

    module = types.SimpleNamespace(__name__="mama_pipeline.example.assets", SETTINGS_READ={"a": "judging"})
    assert cv.declared_settings(module, "a") == ("judging",)
    with pytest.raises(ValueError, match="mama_pipeline.example.assets: asset 'b' has no entry in SETTINGS_READ"):
        cv.declared_settings(module, "b")

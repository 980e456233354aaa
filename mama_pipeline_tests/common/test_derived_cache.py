"""Values derived from the package's files, kept on disk (``common/derived_cache.py``): the kept import graph,
definition uses and table schemas equal freshly derived ones, any change to a source derives again, and a broken or
unwritable cache only costs the derivation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mama_pipeline.common import definition_uses, import_graph
from mama_pipeline.common.derived_cache import cache_dir, kept
from mama_pipeline.common.project_files import PACKAGE_DIR
from mama_pipeline.common.sql_contracts import contract_files
from mama_pipeline.store import table_schema as schemas


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "mama_pipeline"


def counted(value):
    calls = []

    def derive():
        calls.append(1)
        return value

    return derive, calls


def text_kept(kind, sources, derive):
    return kept(kind, sources, derive, lambda p: json.loads(p.read_text()), lambda v, p: p.write_text(json.dumps(v)))


def test_the_same_sources_derive_once_and_other_sources_derive_again(cache):
    derive, calls = counted({"a": [1, 2]})
    assert text_kept("k", [b"x", b"y"], derive) == {"a": [1, 2]}
    assert text_kept("k", [b"x", b"y"], derive) == {"a": [1, 2]}
    assert len(calls) == 1
    assert cache_dir() == cache and len(list((cache / "k").iterdir())) == 1
    text_kept("k", [b"x", b"z"], derive)  # one byte of one source changed
    text_kept("k", [b"xy"], derive)  # the same bytes cut otherwise
    text_kept("other", [b"x", b"y"], derive)  # another kind of value
    assert len(calls) == 4


def test_a_broken_or_unwritable_cache_derives_again(cache, tmp_path, monkeypatch):
    derive, calls = counted([1])
    text_kept("k", [b"s"], derive)
    [path] = (cache / "k").iterdir()
    path.write_text("{not json")
    assert text_kept("k", [b"s"], derive) == [1] and len(calls) == 2
    assert json.loads(path.read_text()) == [1], "the broken file was replaced"
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert text_kept("k", [b"s"], derive) == [1] and len(calls) == 3


def test_the_kept_import_graph_is_the_derived_one_and_an_edit_derives_it_again(cache, tmp_path):
    fresh = import_graph._graph(import_graph.modules())
    assert import_graph.graph() == fresh  # derived and written
    assert import_graph.graph() == fresh  # read back
    [kept_file] = (cache / "import_graph").iterdir()
    package = tmp_path / "copy" / "mama_pipeline"
    shutil.copytree(PACKAGE_DIR, package, ignore=shutil.ignore_patterns("__pycache__", "_shipped"))
    edited = package / "plan" / "__init__.py"
    edited.write_text(edited.read_text() + "\nimport mama_pipeline.corpus._hashing  # noqa\n")
    copied = import_graph.graph(package)
    assert "mama_pipeline.corpus._hashing" in copied["mama_pipeline.plan"]
    assert "mama_pipeline.corpus._hashing" not in fresh["mama_pipeline.plan"]
    assert len(list((cache / "import_graph").iterdir())) == 2 and kept_file.exists()


def test_kept_table_schemas_are_the_derived_ones(cache):
    derived = schemas._derived(contract_files())
    for _ in range(2):  # written, then read back
        schemas._every_schema.cache_clear()
        kept_schemas = schemas._every_schema()
        assert list(kept_schemas) == list(derived)
        for table, columns in derived.items():
            assert [(n, repr(d)) for n, d in kept_schemas[table]] == [(n, repr(d)) for n, d in columns], table
    assert len(list((cache / "table_schemas").iterdir())) == 1
    schemas._every_schema.cache_clear()


def test_kept_definition_uses_are_the_derived_ones_and_a_face_edit_derives_them_again(cache, tmp_path):
    module = "mama_pipeline.evaluation.assets"
    mods = import_graph.modules()
    fresh = definition_uses._derived(mods[module], module, frozenset(mods))
    assert "mama_pipeline.evaluation._retrieval_page" in fresh["write_report"][0]
    for _ in range(2):  # written, then read back
        definition_uses._bindings.cache_clear()
        assert definition_uses.bindings(mods, module) == fresh
    assert len(list((cache / "definition_uses").iterdir())) == 1
    package = tmp_path / "copy" / "mama_pipeline"
    shutil.copytree(PACKAGE_DIR, package, ignore=shutil.ignore_patterns("__pycache__", "_shipped"))
    face = package / "circularity" / "__init__.py"  # the face evaluation/assets.py imports circularity_flags from
    face.write_text(face.read_text() + "\n# edited\n")
    assert definition_uses.bindings(import_graph.modules(package), module) == fresh
    assert len(list((cache / "definition_uses").iterdir())) == 2
    definition_uses._bindings.cache_clear()

"""The retriever kinds found in ``retrieval/_kinds/``, their capabilities as the other areas ask them, and the
import graph that hashes their modules into the rankings' code version."""

from __future__ import annotations

from mama_pipeline.common.code_version import definition_reach
from mama_pipeline.retrieval._retriever_kinds import kinds
from mama_pipeline.retrieval.settings import kinds_that

PACKAGE_KINDS = {"bm25", "dense", "imported", "openai_embeddings", "rerank", "rrf", "sparse"}


def test_every_kind_module_is_found_with_the_capabilities_the_areas_relied_on():
    # the registered toy kind of test_toy_kind may be there too, so the package's kinds are compared
    assert set(kinds()) - {"shared_words"} == PACKAGE_KINDS
    assert set(kinds_that("answers_free_text")) & PACKAGE_KINDS == {"bm25", "dense", "sparse", "openai_embeddings"}
    assert set(kinds_that("dense_vectors")) & PACKAGE_KINDS == {"dense", "openai_embeddings"}
    assert set(kinds_that("tokenizer")) & PACKAGE_KINDS == {"dense", "sparse"}
    assert set(kinds_that("reads_runs")) & PACKAGE_KINDS == {"rrf", "rerank"}
    assert "imported" not in kinds_that("ranks_free_text")


def test_the_rankings_code_version_reaches_every_kind_module():
    reach = set(definition_reach("mama_pipeline.retrieval.assets", "rankings"))
    assert {f"mama_pipeline.retrieval._kinds.{k}_kind" for k in PACKAGE_KINDS} <= reach

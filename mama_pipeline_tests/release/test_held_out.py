"""The declared held-out split: the hash rule, and the public and held-out folders of mamaretrieval."""

from __future__ import annotations

import hashlib
import json

import polars as pl
import pytest

from mama_pipeline.common.held_out import HeldOutRule, held_out_path
from mama_pipeline.release._configurations import ConfigurationPart
from mama_pipeline.release._mamaretrieval import ReleaseError, write_mamaretrieval_release
from mama_pipeline.release._verify import verify_release
from mama_pipeline_tests.release import fixtures as fx
from mama_pipeline_tests.support.llm_stages import with_embedded


def _by_hand(item_id: str, salt: str, share: float) -> bool:
    return int(hashlib.sha256(f"{salt}:{item_id}".encode()).hexdigest()[:16], 16) / 16**16 < share


def test_rule_is_the_declared_hash_and_an_items_side_never_moves_when_items_are_added():
    rule = HeldOutRule(0.3, "s1", "item_id")
    few = pl.Series([f"id-{i}" for i in range(50)])
    many = pl.Series([f"id-{i}" for i in range(5000)])
    held_few, held_many = rule.held_ids(few), rule.held_ids(many)
    assert held_few == {i for i in few.to_list() if _by_hand(i, "s1", 0.3)}
    assert held_few == held_many & set(few.to_list())  # the 4,950 added ids moved none of the first 50
    assert rule.held_ids(few) == held_few  # deterministic
    assert HeldOutRule(0.3, "s2", "item_id").held_ids(many) != held_many  # the salt matters


def test_share_is_met_within_a_stated_tolerance_on_many_ids():
    ids = pl.Series([f"q_{i:06d}" for i in range(20_000)])
    for share in (0.1, 0.25, 0.5):
        got = len(HeldOutRule(share, "mama", "query_id").held_ids(ids)) / ids.len()
        # binomial sd at 20,000 ids is at most 0.0036: 0.015 is over four sd
        assert abs(got - share) < 0.015, (share, got)
    assert not HeldOutRule(0.0, "mama", "query_id").held_ids(ids)


def _salt_splitting_the_two_fixture_queries() -> str:
    """A salt under which, at share 0.5, q_00001 is held out and q_00002 is public (found by hand-checked rule)."""
    for i in range(100):
        salt = f"salt-{i}"
        if _by_hand("q_00001", salt, 0.5) and not _by_hand("q_00002", salt, 0.5):
            return salt
    raise AssertionError("no salt found")


def test_held_out_folder_holds_exactly_the_held_out_queries_and_the_public_folder_none(tmp_path):
    salt = _salt_splitting_the_two_fixture_queries()
    rule = HeldOutRule(0.5, salt, "query_id")
    public = tmp_path / "releases" / "mamaretrieval" / "0.3.0"
    manifest = write_mamaretrieval_release(public, fx.inputs(), held_out=rule)
    held = tmp_path / "releases" / "mamaretrieval-held-out" / "0.3.0"
    assert held_out_path(public, "mamaretrieval") == held
    for rel in (
        "data/queries.parquet",
        "data/rankings.parquet",
        "data/judgments.parquet",
        "audit/judgment_reasoning.parquet",
    ):
        assert set(pl.read_parquet(public / rel)["query_id"].to_list()) == {"q_00002"}, rel
        assert set(pl.read_parquet(held / rel)["query_id"].to_list()) == {"q_00001"}, rel
    # q_00001: pool depth 3 of bm25 [0,1,2] and dense [4,2,1] -> 4 pooled pairs, 4 labels, 2 x 3 ranking rows
    assert pl.read_parquet(held / "data/judgments.parquet").height == 4
    assert pl.read_parquet(held / "data/rankings.parquet").height == 6
    assert not (held / "data/chunks.parquet").exists()
    assert "q_00001" not in (public / "README.md").read_text()
    assert not any("q_00001" in p.read_bytes().decode("latin-1") for p in public.rglob("*.json"))
    for p in public.rglob("*.parquet"):  # no table of the public folder names a held-out query, the BEIR triple's too
        frame = pl.read_parquet(p)
        assert not any("q_00001" in str(v) for c in frame.columns for v in frame[c].to_list()), p
    for rel, column in (
        ("queries/queries-00000-of-00001.parquet", "_id"),
        ("qrels/test-00000-of-00001.parquet", "query-id"),
    ):
        assert set(pl.read_parquet(public / rel)[column].to_list()) == {"q_00002"}, rel
        assert set(pl.read_parquet(held / rel)[column].to_list()) == {"q_00001"}, rel
    split = {
        "rule": 'held out iff int(sha256(salt + ":" + id).hexdigest()[:16], 16) / 16**16 < share',
        "share": 0.5,
        "salt": salt,
        "id": "query_id",
        "public_items": 1,
        "held_out_items": 1,
    }
    assert manifest["held_out"] == split
    assert manifest["figures"]["queries"] == 1 and manifest["figures"]["judged_pairs"] == 4
    held_manifest = json.loads((held / "manifest.json").read_text())
    assert held_manifest["held_out"] == split
    assert held_manifest["figures"]["queries"] == 1 and held_manifest["figures"]["judged_pairs"] == 4
    assert verify_release(public).ok and verify_release(held).ok  # each folder's own hashes
    card = (public / "README.md").read_text()
    assert "### Held-out split" in card and "1 of 2 queries are held out" in card and f"salt `{salt}`" in card


def test_share_zero_writes_what_no_rule_writes(tmp_path):
    a = write_mamaretrieval_release(tmp_path / "a" / "mamaretrieval" / "v", fx.inputs())
    b = write_mamaretrieval_release(
        tmp_path / "b" / "mamaretrieval" / "v", fx.inputs(), held_out=HeldOutRule(0.0, "x", "query_id")
    )
    assert a == b and "held_out" not in b
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    assert not (tmp_path / "b" / "mamaretrieval-held-out").exists()


def test_a_configuration_not_split_is_refused_with_a_held_out_share(tmp_path):
    part = ConfigurationPart("robustness", {"robustness/queries.parquet": pl.DataFrame({"query_id": ["q_00001"]})})
    with pytest.raises(ReleaseError, match=r"configuration\(s\) \['robustness'\].*not split"):
        write_mamaretrieval_release(
            tmp_path / "r" / "mamaretrieval" / "v", fx.inputs(), [part], HeldOutRule(0.5, "x", "query_id")
        )
    assert not (tmp_path / "r").exists()


def test_settings_refuse_a_share_of_one_and_an_unknown_trained_pool():
    from pydantic import ValidationError

    from mama_pipeline.settings import PipelineSettings

    assert PipelineSettings.model_validate(with_embedded({})).release.held_out.share == 0.0
    assert PipelineSettings.model_validate(with_embedded({})).mamabench.widely_trained_pools == [
        "medmcqa",
        "medqa_usmle",
    ]
    with pytest.raises(ValidationError, match="held_out.share"):
        PipelineSettings.model_validate(with_embedded({"release": {"held_out": {"share": 1.0}}}))
    with pytest.raises(ValidationError, match=r"widely_trained_pools \['medqa'\]: not mamabench pools"):
        PipelineSettings.model_validate(with_embedded({"mamabench": {"widely_trained_pools": ["medqa"]}}))

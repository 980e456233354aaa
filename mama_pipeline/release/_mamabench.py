"""The mamabench release folder in the Hugging Face dataset layout.

Layout (all text, byte-identical for identical inputs)::

    README.md                               dataset card generated from the figures
    data/{mcq,open_ended,open_ended_rubric}/test.jsonl
    data/criteria/test.jsonl                rubric criterion text keyed by criterion_id
    data/calibration/test.jsonl             judge-calibration side-file (when given)
    schema/canonical_item.schema.json
    manifests/manifest.json                 counts, refusals, defects, provenance, classifier, file hashes
    audit/scope_verdicts.jsonl              every verdict with rationale and reasoning
    audit/accounting.jsonl                  the fate of every upstream row
    audit/agreement.json, audit/kenya_parity.json
    audit/scope_classifier_prompt.txt

The folder is written next to its destination and swapped in by rename, so a
failed run leaves the previous release in place.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from mama_pipeline.common.file_ops import atomic_folder
from mama_pipeline.common.held_out import HeldOutRule, held_out_path
from mama_pipeline.llm.client import SMOKE_TEST_NOTE
from mama_pipeline.mamabench import (
    SCHEMA_VERSION,
    cosmetic_defect_counts,
    item_json_schema,
    refusals_by_reason,
    split_key,
)
from mama_pipeline.release._mamabench_card import render_card
from mama_pipeline.release._mamabench_inputs import ReleaseInputs

SET_TYPES = ("mcq", "open_ended", "open_ended_rubric")


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":"), default=str) + "\n" for r in rows).encode()


def _json(obj: Any) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode()


def _records(df: pl.DataFrame) -> list[dict[str, Any]]:
    return df.to_dicts()


def release_files(inp: ReleaseInputs) -> dict[str, bytes]:
    """Every file of the release, path -> bytes (pure; no I/O)."""
    files: dict[str, bytes] = {}
    items = inp.items.sort("item_id")
    for set_type in SET_TYPES:
        part = items.filter(pl.col("set_type") == set_type)["item_json"]
        files[f"data/{set_type}/test.jsonl"] = "".join(j + "\n" for j in part).encode()
    files["data/criteria/test.jsonl"] = _jsonl(_records(inp.criteria.sort("criterion_id")))
    if inp.calibration is not None:
        files["data/calibration/test.jsonl"] = _jsonl(_records(inp.calibration))
    for c in inp.extra:
        files[c.path] = _jsonl(_records(c.frame))
    files.update(inp.extra_files)
    files["schema/canonical_item.schema.json"] = _json(item_json_schema())
    # whether a verdict came from the cache says how a build ran, not what it found: a warm rebuild is the same release
    files["audit/scope_verdicts.jsonl"] = _jsonl(
        _records(inp.verdicts.sort("item_id").drop("from_cache", strict=False))
    )
    files["audit/accounting.jsonl"] = _jsonl(_records(inp.accounting.sort("pool", "origin", "upstream_index")))
    if inp.agreement is not None:
        files["audit/agreement.json"] = _json({**(inp.agreement_info or {}), **inp.agreement.to_dict()})
    if inp.parity is not None:
        files["audit/kenya_parity.json"] = _json(inp.parity.to_dict())
    if inp.classifier is not None:
        files["audit/scope_classifier_prompt.txt"] = inp.classifier.prompt_text.encode()
    manifest = build_manifest(inp, {p: hashlib.sha256(b).hexdigest() for p, b in sorted(files.items())})
    files["manifests/manifest.json"] = _json(manifest)
    files["README.md"] = render_card(inp, manifest).encode()
    return files


def build_manifest(inp: ReleaseInputs, file_hashes: dict[str, str]) -> dict[str, Any]:
    items = inp.items
    by_category = (
        items.group_by("set_type", "category").len("items").sort("set_type", "category", nulls_last=True).to_dicts()
    )
    sources = []
    for pool_row in inp.yields.to_dicts():
        prov = inp.provenance.filter(pl.col("pool") == pool_row["pool"]).sort("origin")
        sources.append(
            {
                **pool_row,
                "licence": prov["licence"][0] if prov.height else None,
                "location": prov["location"][0] if prov.height else None,
                "files": prov.select("origin", "sha256", "revision", "rows").to_dicts(),
            }
        )
    return {
        "name": inp.name,
        "version": inp.version,
        "schema_version": SCHEMA_VERSION,
        "items": {"total": items.height, **{s: int((items["set_type"] == s).sum()) for s in SET_TYPES}},
        "items_by_category": by_category,
        "sources": sources,
        "refusals": refusals_by_reason(inp.accounting).to_dicts(),
        "cosmetic_defects": cosmetic_defect_counts(inp.accounting).to_dicts(),
        "criteria": inp.criteria.height,
        **embedded_model(inp),
        "classifier": None
        if inp.classifier is None
        else {
            "model": inp.classifier.model,
            "prompt_id": inp.classifier.prompt_id,
            "prompt_hash": inp.classifier.prompt_hash,
            "smoke_test": inp.classifier.smoke_test,
        },
        "agreement": None
        if inp.agreement is None
        else {
            **(inp.agreement_info or {}),
            "items": inp.agreement.items,
            "jointly_labelled": inp.agreement.jointly_labelled,
            "agreement_pct": inp.agreement.agreement_pct,
            "agreement_ci95": inp.agreement.agreement_ci95,
            "cohens_kappa": inp.agreement.cohens_kappa,
            "note": inp.agreement.note,
        },
        "kenya_parity": None
        if inp.parity is None
        else {
            "items": inp.parity.items,
            "jointly_labelled": inp.parity.jointly_labelled,
            "agreement_pct": inp.parity.agreement_pct,
            "agreement_ci95": inp.parity.agreement_ci95,
        },
        "calibration_rows": None if inp.calibration is None else inp.calibration.height,
        "widely_trained_pools": inp.widely_trained,
        **({"held_out": inp.held_out} if inp.held_out else {}),
        **({"circularity": inp.circularity} if inp.circularity else {}),
        "files": file_hashes,
    }


def _referenced_criteria(items: pl.DataFrame) -> set[str]:
    return {r["criterion_id"] for raw in items["item_json"] for r in json.loads(raw).get("rubrics") or []}


SPLIT_ID = "item_id; a HealthBench item by healthbench:<prompt_id>"


def split_inputs(inp: ReleaseInputs, rule: HeldOutRule) -> tuple[ReleaseInputs, ReleaseInputs]:
    """(public inputs, held-out inputs) by the rule on :func:`split_key`: items, their verdicts and accounting
    rows, the criteria only held-out items use, the calibration rows of held-out HealthBench prompts and the rows
    of other areas' configurations (which must carry item_id)."""
    unsplit = [c.name for c in inp.extra if "item_id" not in c.frame.columns]
    if unsplit:
        raise ValueError(
            f"release {inp.name} {inp.version}: release.held_out.share > 0, but configuration(s) "
            f"{unsplit} have no item_id to split by; switch them off or set release.held_out.share: 0"
        )
    held = sorted(rule.held_ids(inp.items.select(split_key()).to_series()))

    def sides(df: pl.DataFrame | None, key: pl.Expr = split_key()) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
        if df is None:
            return None, None
        mask = key.is_in(held).fill_null(False)
        return df.filter(~mask), df.filter(mask)

    items, held_items = sides(inp.items)
    verdicts, held_verdicts = sides(inp.verdicts)
    accounting, held_accounting = sides(inp.accounting)
    calibration, held_calibration = sides(inp.calibration, pl.lit("healthbench:") + pl.col("prompt_id"))
    public_criteria = _referenced_criteria(items)
    criteria = inp.criteria.filter(pl.col("criterion_id").is_in(sorted(public_criteria)))
    held_criteria = inp.criteria.filter(
        pl.col("criterion_id").is_in(sorted(_referenced_criteria(held_items) - public_criteria))
    )
    extra = [(c, *sides(c.frame)) for c in inp.extra]
    split = {**rule.manifest(items.height, held_items.height), "id": SPLIT_ID}
    public = replace(
        inp,
        items=items,
        verdicts=verdicts,
        accounting=accounting,
        criteria=criteria,
        calibration=calibration,
        extra=[replace(c, frame=f) for c, f, _ in extra],
        held_out=split,
    )
    private = replace(
        inp,
        items=held_items,
        verdicts=held_verdicts,
        accounting=held_accounting,
        criteria=held_criteria,
        calibration=held_calibration,
        extra=[replace(c, frame=f) for c, _, f in extra],
        held_out=split,
    )
    return public, private


def embedded_model(inp: ReleaseInputs) -> dict[str, Any]:
    """The manifest's smoke-test flag: true when the classifier's answers or any stage the configuration serves
    with the embedded model fed the release, with those stages and the note."""
    smoke = bool(inp.embedded_stages) or (inp.classifier is not None and inp.classifier.smoke_test)
    return {
        "smoke_test": smoke,
        "embedded_model_stages": inp.embedded_stages,
        "note": SMOKE_TEST_NOTE if smoke else None,
    }


def held_out_files(inp: ReleaseInputs) -> dict[str, bytes]:
    """The held-out folder: its items, criteria, calibration rows, verdicts, accounting, configuration rows and a
    manifest with the rule and every file's sha256 (no card: the folder is private)."""
    files: dict[str, bytes] = {}
    items = inp.items.sort("item_id")
    for set_type in SET_TYPES:
        files[f"data/{set_type}/test.jsonl"] = "".join(
            j + "\n" for j in items.filter(pl.col("set_type") == set_type)["item_json"]
        ).encode()
    files["data/criteria/test.jsonl"] = _jsonl(_records(inp.criteria.sort("criterion_id")))
    if inp.calibration is not None:
        files["data/calibration/test.jsonl"] = _jsonl(_records(inp.calibration))
    for c in inp.extra:
        files[c.path] = _jsonl(_records(c.frame))
    files["audit/scope_verdicts.jsonl"] = _jsonl(_records(inp.verdicts.sort("item_id")))
    files["audit/accounting.jsonl"] = _jsonl(_records(inp.accounting.sort("pool", "origin", "upstream_index")))
    files["manifests/manifest.json"] = _json(
        {
            "name": f"{inp.name}-held-out",
            "version": inp.version,
            "private": "the held-out part of the release: keep this folder private; never publish it",
            "held_out": inp.held_out,
            **embedded_model(inp),
            "items": {"total": items.height, **{s: int((items["set_type"] == s).sum()) for s in SET_TYPES}},
            "items_by_pool": dict(items.group_by("pool").len().sort("pool").iter_rows()),
            "files": {p: hashlib.sha256(b).hexdigest() for p, b in sorted(files.items())},
        }
    )
    return files


def _write_folder(out_dir: Path, files: dict[str, bytes]) -> dict[str, str]:
    with atomic_folder(Path(out_dir)) as tmp:
        for rel, data in files.items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    return {rel: hashlib.sha256(data).hexdigest() for rel, data in sorted(files.items())}


def write_release(out_dir: Path, inp: ReleaseInputs, held_out: HeldOutRule | None = None) -> dict[str, str]:
    """Write the release folder atomically; returns path -> sha256 of every file. With an active ``held_out``
    rule the held-out part goes to :func:`held_out_path` instead (its own manifest), and the public card says so."""
    if held_out is None or not held_out.active:
        return _write_folder(out_dir, release_files(inp))
    public, private = split_inputs(inp, held_out)
    hashes = _write_folder(out_dir, release_files(public))
    _write_folder(held_out_path(Path(out_dir), inp.name), held_out_files(private))
    return hashes

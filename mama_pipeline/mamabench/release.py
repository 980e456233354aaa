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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from mama_pipeline.mamabench.agreement import AgreementStats
from mama_pipeline.mamabench.dataset_card import render_card
from mama_pipeline.mamabench.schema import SCHEMA_VERSION, item_json_schema
from mama_pipeline.mamabench.yields import cosmetic_defect_counts, refusals_by_reason
from mama_pipeline.file_ops import atomic_folder

SET_TYPES = ("mcq", "open_ended", "open_ended_rubric")


@dataclass
class ClassifierInfo:
    model: str
    prompt_id: str
    prompt_hash: str
    prompt_text: str
    smoke_test: bool  # answers came from the embedded smoke-test model


@dataclass
class ReleaseInputs:
    name: str
    version: str
    items: pl.DataFrame  # item_id, pool, set_type, category, item_json
    criteria: pl.DataFrame  # criterion_id, criterion, tags
    accounting: pl.DataFrame
    verdicts: pl.DataFrame
    yields: pl.DataFrame
    provenance: pl.DataFrame  # pool, origin, sha256, revision, rows, licence, location
    classifier: ClassifierInfo | None
    agreement: AgreementStats | None = None
    agreement_info: dict[str, Any] | None = None
    parity: AgreementStats | None = None
    calibration: pl.DataFrame | None = None
    extra: list[Any] = field(default_factory=list)  # other areas' release configurations


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
    files["schema/canonical_item.schema.json"] = _json(item_json_schema())
    # whether a verdict came from the cache says how a build ran, not what it found: a warm rebuild is the same release
    files["audit/scope_verdicts.jsonl"] = _jsonl(_records(inp.verdicts.sort("item_id").drop("from_cache", strict=False)))
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
        sources.append({
            **pool_row,
            "licence": prov["licence"][0] if prov.height else None,
            "location": prov["location"][0] if prov.height else None,
            "files": prov.select("origin", "sha256", "revision", "rows").to_dicts(),
        })
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
        "classifier": None if inp.classifier is None else {
            "model": inp.classifier.model,
            "prompt_id": inp.classifier.prompt_id,
            "prompt_hash": inp.classifier.prompt_hash,
            "smoke_test": inp.classifier.smoke_test,
        },
        "agreement": None if inp.agreement is None else {
            **(inp.agreement_info or {}),
            "items": inp.agreement.items,
            "jointly_labelled": inp.agreement.jointly_labelled,
            "agreement_pct": inp.agreement.agreement_pct,
            "agreement_ci95": inp.agreement.agreement_ci95,
            "cohens_kappa": inp.agreement.cohens_kappa,
            "note": inp.agreement.note,
        },
        "kenya_parity": None if inp.parity is None else {
            "items": inp.parity.items,
            "jointly_labelled": inp.parity.jointly_labelled,
            "agreement_pct": inp.parity.agreement_pct,
            "agreement_ci95": inp.parity.agreement_ci95,
        },
        "calibration_rows": None if inp.calibration is None else inp.calibration.height,
        "files": file_hashes,
    }


def write_release(out_dir: Path, inp: ReleaseInputs) -> dict[str, str]:
    """Write the release folder atomically; returns path -> sha256 of every file."""
    files = release_files(inp)
    with atomic_folder(Path(out_dir)) as tmp:
        for rel, data in files.items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    return {rel: hashlib.sha256(data).hexdigest() for rel, data in sorted(files.items())}

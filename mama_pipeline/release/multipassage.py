"""The multi-passage configuration of the mamaretrieval release (folder ``mamaretrieval-multipassage/<version>``).

Layout (deterministic bytes: rows sorted, fixed parquet settings, no timestamps)::

    README.md                              card: the multi-passage section with the figures
    manifest.json                          versions, models, prompt hashes, retrievers, figures, file hashes
    data/questions.parquet                 query_id, query_text, chunk_ids (the required pieces), kind, size, source, tier
    data/rankings.parquet                  query_id, retriever, rank, chunk_id, score (pooled retrievers, pool depth)
    data/judgments.parquet                 query_id, chunk_id, required_piece, d1..d4, score
    data/chunks.parquet                    chunk_id, source, page, breadcrumb, text
    qrels/pieces.diversity.txt             ndeval diversity qrels: query subtopic chunk 1 (one subtopic per piece)
    audit/decisions.parquet                every sampled chunk set: status, verdicts (question text only when kept)
    audit/*_prompt.txt, schema/*.json      the writer's, verifier's and judge's prompts and answer schemas

Refused when a released question was not verified (its set's decision is not
``kept``), when a question, ranking or label names a chunk outside the corpus
version, or when labels come from a prompt other than the one shipped.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from mama_pipeline.llm.client import SMOKE_TEST_NOTE
from mama_pipeline.release.files import json_bytes, write_release_folder
from mama_pipeline.release.mamaretrieval import PromptInfo, ReleaseError, _corpus_version

NAME = "mamaretrieval-multipassage"
CARD = "README.md"
PROMPTS = {"writer": "audit/multipassage_writer_prompt.txt", "verifier": "audit/multipassage_verifier_prompt.txt",
           "judge": "audit/judge_relevance_prompt.txt"}


@dataclass
class MultipassageInputs:
    version: str
    chunks: pl.DataFrame
    questions: pl.DataFrame
    decisions: pl.DataFrame
    rankings: pl.DataFrame
    labels: pl.DataFrame  # multipassage_labels (status labelled | failed)
    writer: PromptInfo
    verifier: PromptInfo
    judge: PromptInfo
    retrievers: list[str]
    pool_depth: int
    lenient: int = 3
    strict: int = 5
    scoreboard: pl.DataFrame | None = None  # tier 'all' means, reported in the card
    producer: dict[str, Any] = field(default_factory=dict)


def check_inputs(inp: MultipassageInputs) -> None:
    """Refuse a release that would ship an unverified question or a chunk outside the corpus version."""
    version = _corpus_version(inp.chunks)
    kept = set(inp.decisions.filter(pl.col("status") == "kept")["set_id"].to_list())
    unverified = inp.questions.filter(~pl.col("set_id").is_in(list(kept)))
    if unverified.height:
        raise ReleaseError(f"release {NAME} {inp.version} refused: {unverified.height} question(s) whose verification "
                           f"did not pass (e.g. {unverified['query_id'][0]})")
    ids = set(inp.chunks["chunk_id"].to_list())
    named = {
        "questions": inp.questions.select(pl.col("chunk_ids").explode())["chunk_ids"].to_list(),
        "rankings": inp.rankings["chunk_id"].to_list(),
        "labels": inp.labels["chunk_id"].to_list(),
    }
    for what, chunk_ids in named.items():
        outside = sorted(set(chunk_ids) - ids)
        if outside:
            raise ReleaseError(f"release {NAME} {inp.version} refused: {what} name {len(outside)} chunk(s) not in corpus "
                               f"version {version} (e.g. {outside[0]})")
    hashes = set(inp.labels.filter(pl.col("status") == "labelled")["prompt_hash"].unique().to_list())
    if hashes - {inp.judge.version_hash}:
        raise ReleaseError(f"release {NAME} {inp.version} refused: labels made with prompt hash(es) {sorted(hashes)}, "
                           f"the shipped judge prompt has {inp.judge.version_hash}")


def release_tables(inp: MultipassageInputs) -> dict[str, pl.DataFrame]:
    grade = pl.Int8
    labelled = inp.labels.filter(pl.col("status") == "labelled")
    qids = inp.questions["query_id"].to_list()
    decisions = inp.decisions.with_columns(
        question=pl.when(pl.col("status") == "kept").then(pl.col("question")))  # failed questions are never shipped
    return {
        "data/questions.parquet": inp.questions.select(
            pl.col("query_id", "query_text", "set_id").cast(pl.String), pl.col("chunk_ids").cast(pl.List(pl.String)),
            pl.col("kind").cast(pl.String), pl.col("size").cast(pl.Int8), pl.col("source", "tier").cast(pl.String),
        ).sort("query_id"),
        "data/rankings.parquet": inp.rankings.filter(
            pl.col("retriever").is_in(inp.retrievers) & (pl.col("rank") <= inp.pool_depth)
            & pl.col("query_id").is_in(qids)
        ).select(pl.col("query_id", "retriever").cast(pl.String), pl.col("rank").cast(pl.Int32),
                 pl.col("chunk_id").cast(pl.String), pl.col("score").cast(pl.Float64)).sort("retriever", "query_id", "rank"),
        "data/judgments.parquet": labelled.select(
            pl.col("query_id", "chunk_id").cast(pl.String), pl.col("required_piece").cast(pl.Boolean),
            pl.col("d1_topic").cast(pl.Boolean), pl.col("d2_meaningful", "d3_actionable", "d4_density", "score").cast(grade),
        ).sort("query_id", "chunk_id"),
        "data/chunks.parquet": inp.chunks.select(
            pl.col("chunk_id", "source").cast(pl.String), pl.col("page").cast(pl.Int64),
            pl.col("breadcrumb").cast(pl.List(pl.String)), pl.col("text").cast(pl.String),
        ).sort("chunk_id"),
        "audit/decisions.parquet": decisions.select(
            pl.col("set_id", "kind").cast(pl.String), pl.col("size").cast(pl.Int8),
            pl.col("chunk_ids").cast(pl.List(pl.String)), pl.col("source", "tier", "status", "question").cast(pl.String),
            pl.col("set_verdict").cast(pl.String), pl.col("alone_verdicts").cast(pl.List(pl.String)),
        ).sort("set_id"),
    }


def diversity_qrels(questions: pl.DataFrame) -> bytes:
    """ndeval's qrels format: ``query_id subtopic chunk_id 1``, one subtopic per required piece."""
    lines = [f"{q} {i} {c} 1\n" for q, ids in questions.sort("query_id").select("query_id", "chunk_ids").iter_rows()
             for i, c in enumerate(ids)]
    return "".join(lines).encode()


def figures(inp: MultipassageInputs, tables: dict[str, pl.DataFrame]) -> dict[str, Any]:
    q = tables["data/questions.parquet"]
    j = tables["data/judgments.parquet"]
    statuses = dict(inp.decisions.group_by("status").len().sort("status").iter_rows())
    return {
        "questions": q.height,
        "questions_by_size": {str(k): v for k, v in q.group_by("size").len().sort("size").iter_rows()},
        "questions_by_kind": dict(q.group_by("kind").len().sort("kind").iter_rows()),
        "questions_by_tier": dict(q.group_by("tier").len().sort("tier").iter_rows()),
        "sets_written": inp.decisions.height,
        "sets_by_status": statuses,
        "not_released": inp.decisions.height - q.height,
        "judged_pairs": j.height,
        "unlabelled_pairs": int((inp.labels["status"] == "failed").sum()),
        "required_pieces": int(q["chunk_ids"].list.len().sum() or 0),
        "pieces_judged_lenient": int(j.filter(pl.col("required_piece") & (pl.col("score") >= inp.lenient)).height),
        "other_pairs_lenient": int(j.filter(~pl.col("required_piece") & (pl.col("score") >= inp.lenient)).height),
        "rankings": tables["data/rankings.parquet"].height,
        "chunks": tables["data/chunks.parquet"].height,
    }


def _stage(info: PromptInfo, model: str | None, prompt_file: str) -> dict[str, Any]:
    return {"model": model, "prompt_id": info.template.id, "prompt_hash": info.version_hash,
            "answer_schema_version": info.schema_version, "temperature": info.temperature,
            "smoke_test": info.smoke_test, "prompt_file": prompt_file}


def _one(values: pl.Series) -> str | None:
    found = sorted(set(values.drop_nulls().to_list()))
    return found[0] if len(found) == 1 else (", ".join(found) or None)


def build_manifest(inp: MultipassageInputs, tables: dict[str, pl.DataFrame]) -> dict[str, Any]:
    smoke = inp.writer.smoke_test or inp.verifier.smoke_test or inp.judge.smoke_test
    board = None
    if inp.scoreboard is not None and inp.scoreboard.height:
        board = [
            {"retriever": r, "measure": m, "mean": round(v, 4)}
            for r, m, v in inp.scoreboard.filter((pl.col("tier") == "all") & pl.col("track"))
            .select("retriever", "measure", "mean").iter_rows()
        ]
    return {
        "name": NAME,
        "version": inp.version,
        "smoke_test": smoke,
        "note": SMOKE_TEST_NOTE if smoke else None,
        "corpus": {"version": _corpus_version(inp.chunks), "chunks": inp.chunks.height},
        "question_writer": _stage(inp.writer, _one(inp.decisions["writer_model"]), PROMPTS["writer"]),
        "verifier": _stage(inp.verifier, _one(inp.decisions["verifier_model"]), PROMPTS["verifier"]),
        "judge": _stage(inp.judge, _one(inp.labels["judge_model"]), PROMPTS["judge"]),
        "verification": "kept only when no chunk of the set alone answers the question completely and the set as "
                        "a whole does (the verifier grades each chunk alone, then the set)",
        "retrieval": {"retrievers": inp.retrievers, "pool_depth": inp.pool_depth},
        "thresholds": {"lenient": inp.lenient, "strict": inp.strict},
        "measures": "alpha_nDCG@k (ndeval, one subtopic per required piece); R@k[pieces]; AllIn@k[pieces] "
                    "(every piece in the top k); single-chunk headline measures on the labels with pieces relevant",
        "scoreboard": board,
        "figures": figures(inp, tables),
        "producer": inp.producer,
    }


def render_card_section(manifest: dict[str, Any]) -> str:
    """The card's multi-passage section (Markdown)."""
    f = manifest["figures"]
    lines = [f"# mamaretrieval multi-passage track {manifest['version']}\n"]
    if manifest["smoke_test"]:
        lines.append(f"> **Smoke test, not a benchmark.** {manifest['note']}\n")
    lines.append(
        "Questions that can only be answered by combining two or three guideline chunks. Candidate sets are "
        "neighbours in one guideline section or chunks of different sources that a dense retriever places close "
        "together; an LLM wrote one question per set, and a verifier kept it only when "
        f"{manifest['verification'].split('when ', 1)[1]}. The chunks of a question's set are its required "
        "pieces; other pooled chunks count as relevant when the judge grades them so.\n")
    lines.append("## Figures\n")
    rows = [("questions", f["questions"]), ("by size", f["questions_by_size"]), ("by kind", f["questions_by_kind"]),
            ("by tier", f["questions_by_tier"]), ("sets written", f["sets_written"]),
            ("not released (failed writing or verification)", f["not_released"]),
            ("outcomes", f["sets_by_status"]), ("judged pairs", f["judged_pairs"]),
            ("required pieces", f["required_pieces"]), ("pieces the judge grades lenient", f["pieces_judged_lenient"])]
    lines.append("| figure | value |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows) + "\n")
    if manifest["scoreboard"]:
        lines.append("## Scoreboard (all questions)\n")
        lines.append("| retriever | measure | mean |\n|---|---|---|\n" + "\n".join(
            f"| {r['retriever']} | {r['measure']} | {r['mean']:.4f} |" for r in manifest["scoreboard"]) + "\n")
    lines.append(f"## Measures\n\n{manifest['measures']}. `qrels/pieces.diversity.txt` is ready for ndeval.\n")
    return "\n".join(lines)


def write_multipassage_release(out_dir: Path, inp: MultipassageInputs) -> dict[str, Any]:
    """Check the inputs, write the folder atomically and return its manifest."""
    check_inputs(inp)
    tables = release_tables(inp)
    manifest = build_manifest(inp, tables)
    texts = {
        PROMPTS["writer"]: inp.writer.template.text.encode(),
        PROMPTS["verifier"]: inp.verifier.template.text.encode(),
        PROMPTS["judge"]: inp.judge.template.text.encode(),
        "schema/writer_answer.schema.json": json_bytes(inp.writer.answer_schema),
        "schema/verifier_answer.schema.json": json_bytes(inp.verifier.answer_schema),
        "schema/judge_answer.schema.json": json_bytes(inp.judge.answer_schema),
        "qrels/pieces.diversity.txt": diversity_qrels(inp.questions),
        CARD: render_card_section(manifest).encode(),
    }
    return write_release_folder(out_dir, tables, texts, manifest)

"""The ``multipassage`` configuration of the mamaretrieval release.

Files (hub layout, beside the main configuration; the chunks are the release's
``data/chunks.parquet``, the judge's prompt and schema its ``audit/`` and ``schema/`` files)::

    multipassage/questions.parquet          query_id, query_text, set_id, chunk_ids (the required pieces), kind, size, source, tier
    multipassage/rankings.parquet           query_id, retriever, rank, chunk_id, score (pooled retrievers, pool depth)
    multipassage/judgments.parquet          query_id, chunk_id, required_piece, d1..d4, score
    multipassage/pieces.diversity.txt       ndeval diversity qrels: query subtopic chunk 1 (one subtopic per piece)
    multipassage/decisions.parquet          every sampled chunk set: status, verdicts (question text only when kept)
    multipassage/prompts/*.txt, multipassage/schema/*.json   the writer's and verifier's prompts and answer schemas

Refused when a released question was not verified (its set's decision is not
``kept``), when a question, ranking or label names a chunk outside the corpus
version, or when labels come from a judge prompt other than the one shipped.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from mama_pipeline.multipassage.prompts import verifier_model, verifier_template, writer_model, writer_template
from mama_pipeline.release.configurations import ConfigurationPart
from mama_pipeline.release.files import json_bytes
from mama_pipeline.release.mamaretrieval import MamaretrievalInputs, PromptInfo, ReleaseError
from mama_pipeline.settings import PipelineSettings
from mama_pipeline.store import Store

NAME = "multipassage"
FOLDER = "multipassage"
TABLES = ("multipassage_questions", "multipassage_decisions", "multipassage_labels", "multipassage_scoreboard")
QRELS = f"{FOLDER}/pieces.diversity.txt"
PROMPTS = {"writer": f"{FOLDER}/prompts/multipassage_writer.txt",
           "verifier": f"{FOLDER}/prompts/multipassage_verifier.txt"}
SCHEMAS = {"writer": f"{FOLDER}/schema/writer_answer.schema.json",
           "verifier": f"{FOLDER}/schema/verifier_answer.schema.json"}


@dataclass
class TrackInputs:
    questions: pl.DataFrame
    decisions: pl.DataFrame
    rankings: pl.DataFrame
    labels: pl.DataFrame  # multipassage_labels (status labelled | failed)
    writer: PromptInfo
    verifier: PromptInfo
    retrievers: list[str]
    pool_depth: int
    scoreboard: pl.DataFrame | None = None  # tier 'all' means, reported in the card


def prompt_infos(s: PipelineSettings) -> tuple[PromptInfo, PromptInfo]:
    """The shipped prompts of the question writer and the verifier."""
    mp = s.multipassage
    w, v = getattr(s.llm, mp.writer_stage), getattr(s.llm, mp.verifier_stage)
    w_tpl, v_tpl = writer_template(mp.max_words, w.reasoning == "json_field"), verifier_template(
        v.reasoning == "json_field")
    return (
        PromptInfo(w_tpl, writer_model(w.reasoning == "json_field").model_json_schema(), w_tpl.hash, w.temperature,
                   w.embedded),
        PromptInfo(v_tpl, verifier_model(v.reasoning == "json_field").model_json_schema(), v_tpl.hash, v.temperature,
                   v.embedded),
    )


def multipassage_part(s: PipelineSettings, store: Store, inp: MamaretrievalInputs) -> ConfigurationPart | None:
    """The configuration from the multipassage assets in the store; None when ``multipassage.release`` is off."""
    from mama_pipeline.multipassage.assets import stored_track_rankings

    if not s.multipassage.release:
        return None
    tables = {}
    for name in TABLES:
        if not store.table_exists(name):
            raise ReleaseError(f"release configuration {NAME}: table {name} is not in the store; materialise it "
                               "first (or set multipassage.release: false)")
        tables[name] = store.read_table(name)
    pooled = s.multipassage.pool_retrievers or s.retrieval.pooled
    questions = tables["multipassage_questions"]
    writer, verifier = prompt_infos(s)
    return build_part(inp, TrackInputs(
        questions=questions, decisions=tables["multipassage_decisions"],
        rankings=stored_track_rankings(store, pooled, questions), labels=tables["multipassage_labels"],
        writer=writer, verifier=verifier, retrievers=pooled, pool_depth=s.multipassage.pool_depth,
        scoreboard=tables["multipassage_scoreboard"]))


def _refuse(why: str) -> None:
    raise ReleaseError(f"release configuration {NAME} refused: {why}; re-materialise the multipassage assets")


def check(inp: MamaretrievalInputs, t: TrackInputs) -> None:
    """Refuse a configuration that would ship an unverified question, a chunk outside the corpus or stale labels."""
    kept = t.decisions.filter(pl.col("status") == "kept")["set_id"].to_list()
    unverified = t.questions.filter(~pl.col("set_id").is_in(kept))
    if unverified.height:
        _refuse(f"{unverified.height} question(s) whose verification did not pass (e.g. {unverified['query_id'][0]})")
    ids = set(inp.chunks["chunk_id"].to_list())
    version = inp.chunks["corpus_version"].unique().sort().to_list()
    named = {
        "questions": t.questions.select(pl.col("chunk_ids").explode())["chunk_ids"].drop_nulls().to_list(),
        "rankings": t.rankings["chunk_id"].to_list(),
        "labels": t.labels["chunk_id"].to_list(),
    }
    for what, chunk_ids in named.items():
        outside = sorted(set(chunk_ids) - ids)
        if outside:
            _refuse(f"{what} name {len(outside)} chunk(s) not in corpus version {', '.join(version)} "
                    f"(e.g. {outside[0]})")
    hashes = set(t.labels.filter(pl.col("status") == "labelled")["prompt_hash"].unique().to_list())
    if hashes - {inp.judge.version_hash}:
        _refuse(f"labels made with prompt hash(es) {sorted(hashes)}, the shipped judge prompt has "
                f"{inp.judge.version_hash}")


def release_tables(t: TrackInputs) -> dict[str, pl.DataFrame]:
    grade = pl.Int8
    labelled = t.labels.filter(pl.col("status") == "labelled")
    qids = t.questions["query_id"].to_list()
    decisions = t.decisions.with_columns(
        question=pl.when(pl.col("status") == "kept").then(pl.col("question")))  # failed questions are never shipped
    return {
        f"{FOLDER}/questions.parquet": t.questions.select(
            pl.col("query_id", "query_text", "set_id").cast(pl.String), pl.col("chunk_ids").cast(pl.List(pl.String)),
            pl.col("kind").cast(pl.String), pl.col("size").cast(pl.Int8), pl.col("source", "tier").cast(pl.String),
        ).sort("query_id"),
        f"{FOLDER}/rankings.parquet": t.rankings.filter(
            pl.col("retriever").is_in(t.retrievers) & (pl.col("rank") <= t.pool_depth) & pl.col("query_id").is_in(qids)
        ).select(pl.col("query_id", "retriever").cast(pl.String), pl.col("rank").cast(pl.Int32),
                 pl.col("chunk_id").cast(pl.String), pl.col("score").cast(pl.Float64)).sort("retriever", "query_id", "rank"),
        f"{FOLDER}/judgments.parquet": labelled.select(
            pl.col("query_id", "chunk_id").cast(pl.String), pl.col("required_piece").cast(pl.Boolean),
            pl.col("d1_topic").cast(pl.Boolean), pl.col("d2_meaningful", "d3_actionable", "d4_density", "score").cast(grade),
        ).sort("query_id", "chunk_id"),
        f"{FOLDER}/decisions.parquet": decisions.select(
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


def figures(inp: MamaretrievalInputs, t: TrackInputs, tables: dict[str, pl.DataFrame]) -> dict[str, Any]:
    q = tables[f"{FOLDER}/questions.parquet"]
    j = tables[f"{FOLDER}/judgments.parquet"]
    return {
        "questions": q.height,
        "questions_by_size": {str(k): v for k, v in q.group_by("size").len().sort("size").iter_rows()},
        "questions_by_kind": dict(q.group_by("kind").len().sort("kind").iter_rows()),
        "questions_by_tier": dict(q.group_by("tier").len().sort("tier").iter_rows()),
        "sets_written": t.decisions.height,
        "sets_by_status": dict(t.decisions.group_by("status").len().sort("status").iter_rows()),
        "not_released": t.decisions.height - q.height,
        "judged_pairs": j.height,
        "unlabelled_pairs": int((t.labels["status"] == "failed").sum()),
        "required_pieces": int(q["chunk_ids"].list.len().sum() or 0),
        "pieces_judged_lenient": int(j.filter(pl.col("required_piece") & (pl.col("score") >= inp.lenient)).height),
        "other_pairs_lenient": int(j.filter(~pl.col("required_piece") & (pl.col("score") >= inp.lenient)).height),
        "rankings": tables[f"{FOLDER}/rankings.parquet"].height,
    }


def _stage(info: PromptInfo, model: str | None, stage: str) -> dict[str, Any]:
    return {"model": model, "prompt_id": info.template.id, "prompt_hash": info.version_hash,
            "answer_schema_version": info.schema_version, "temperature": info.temperature,
            "smoke_test": info.smoke_test, "prompt_file": PROMPTS[stage], "answer_schema_file": SCHEMAS[stage]}


def _one(values: pl.Series) -> str | None:
    found = sorted(set(values.drop_nulls().to_list()))
    return found[0] if len(found) == 1 else (", ".join(found) or None)


def build_manifest(inp: MamaretrievalInputs, t: TrackInputs, tables: dict[str, pl.DataFrame]) -> dict[str, Any]:
    board = None
    if t.scoreboard is not None and t.scoreboard.height:
        board = [
            {"retriever": r, "measure": m, "mean": round(v, 4)}
            for r, m, v in t.scoreboard.filter((pl.col("tier") == "all") & pl.col("track"))
            .select("retriever", "measure", "mean").iter_rows()
        ]
    return {
        "folder": FOLDER,
        "smoke_test": t.writer.smoke_test or t.verifier.smoke_test or inp.judge.smoke_test,
        "question_writer": _stage(t.writer, _one(t.decisions["writer_model"]), "writer"),
        "verifier": _stage(t.verifier, _one(t.decisions["verifier_model"]), "verifier"),
        "judge": {"model": _one(t.labels["judge_model"]), "prompt_hash": inp.judge.version_hash,
                  "prompt": "the release's judge prompt and answer schema (manifest judge)"},
        "verification": "kept only when no chunk of the set alone answers the question completely and the set as "
                        "a whole does (the verifier grades each chunk alone, then the set)",
        "retrieval": {"retrievers": t.retrievers, "pool_depth": t.pool_depth},
        "qrels": QRELS,
        "measures": "alpha_nDCG@k (ndeval, one subtopic per required piece); R@k[pieces]; AllIn@k[pieces] "
                    "(every piece in the top k); single-chunk headline measures on the labels with pieces relevant",
        "scoreboard": board,
        "figures": figures(inp, t, tables),
    }


def card_section(manifest: dict[str, Any]) -> str:
    """The card's multi-passage section (Markdown)."""
    f = manifest["figures"]
    lines = ["## Multi-passage configuration\n"]
    if manifest["smoke_test"]:
        lines.append("> **Smoke test.** The questions, verdicts or labels of this configuration come from the "
                     "embedded smoke-test model: they exercise the pipeline and are not meaningful.\n")
    lines.append(
        "Questions that can only be answered by combining two or three guideline chunks (files under "
        f"`{FOLDER}/`). Candidate sets are neighbours in one guideline section or chunks of different sources that "
        "a dense retriever places close together; an LLM wrote one question per set, and a verifier kept it only "
        f"when {manifest['verification'].split('when ', 1)[1]}. The chunks of a question's set are its required "
        "pieces; other pooled chunks count as relevant when the judge grades them so. Questions whose writing or "
        f"verification failed are counted in `{FOLDER}/decisions.parquet`, never shipped.\n")
    rows = [("questions", f["questions"]), ("by size", f["questions_by_size"]), ("by kind", f["questions_by_kind"]),
            ("by tier", f["questions_by_tier"]), ("sets written", f["sets_written"]),
            ("not released (failed writing or verification)", f["not_released"]),
            ("outcomes", f["sets_by_status"]), ("judged pairs", f["judged_pairs"]),
            ("required pieces", f["required_pieces"]), ("pieces the judge grades lenient", f["pieces_judged_lenient"])]
    lines.append("| figure | value |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows) + "\n")
    if manifest["scoreboard"]:
        lines.append("### Multi-passage scoreboard (all questions)\n")
        lines.append("| retriever | measure | mean |\n|---|---|---|\n" + "\n".join(
            f"| {r['retriever']} | {r['measure']} | {r['mean']:.4f} |" for r in manifest["scoreboard"]) + "\n")
    lines.append(f"Measures: {manifest['measures']}. `{QRELS}` is ready for ndeval.\n")
    return "\n".join(lines)


def build_part(inp: MamaretrievalInputs, t: TrackInputs) -> ConfigurationPart:
    check(inp, t)
    tables = release_tables(t)
    manifest = build_manifest(inp, t, tables)
    texts = {
        PROMPTS["writer"]: t.writer.template.text.encode(),
        PROMPTS["verifier"]: t.verifier.template.text.encode(),
        SCHEMAS["writer"]: json_bytes(t.writer.answer_schema),
        SCHEMAS["verifier"]: json_bytes(t.verifier.answer_schema),
        QRELS: diversity_qrels(t.questions),
    }
    return ConfigurationPart(
        name=NAME, tables=tables, texts=texts,
        viewer_configs=(
            ("multipassage_questions", f"{FOLDER}/questions.parquet", "multi-passage questions and their required pieces"),
            ("multipassage_judgments", f"{FOLDER}/judgments.parquet", "labels of the multi-passage questions"),
            ("multipassage_rankings", f"{FOLDER}/rankings.parquet", "pooled retrievers' rankings of the questions"),
        ),
        card_section=card_section(manifest),
        manifest=manifest,
    )

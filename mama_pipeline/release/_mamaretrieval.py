"""The mamaretrieval release folder in the Hugging Face dataset layout.

Layout (deterministic bytes: rows sorted, fixed parquet settings, no timestamps)::

    README.md                              dataset card with the figures (YAML configs for the viewer)
    manifest.json                          versions, models, prompt hashes, retrievers, figures, file hashes
    data/queries.parquet                   query_id, query_text, seed_chunk_id, source, tier
    data/rankings.parquet                  query_id, retriever, rank, chunk_id, score (pooled retrievers, pool depth)
    data/judgments.parquet                 query_id, chunk_id, d1_topic, d2_meaningful, d3_actionable, d4_density, score
    data/chunks.parquet                    chunk_id, source, page, breadcrumb, text (the canonical text judged)
    corpus/, queries/, qrels/              the BEIR/MTEB triple (release/_beir_layout.py): corpus, queries, qrels
    audit/judgment_reasoning.parquet       every label with the judge's reasoning, model and prompt hash
    audit/judge_relevance_prompt.txt       the judge's prompt template
    audit/query_writer_prompt.txt          the query writer's prompt template
    schema/judge_answer.schema.json        the judge's answer schema
    schema/query_answer.schema.json        the query writer's answer schema

The (chunk set, queries, labels) triple is one version: a release is refused when a
query, ranking, pooled pair or label names a chunk id outside the corpus version,
or when labels or queries come from a prompt other than the one shipped.

The tables are read sorted by DuckDB and streamed into the files (:mod:`mama_pipeline.release._sorted_tables`),
so the release's memory does not grow with its rows; checks and figures are lazy queries over them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from mama_pipeline.common.held_out import HeldOutRule, held_out_path
from mama_pipeline.judging import DIMENSIONS, GRADES
from mama_pipeline.llm.client import SMOKE_TEST_NOTE
from mama_pipeline.llm.prompt_template import PromptTemplate
from mama_pipeline.llm.reference_audit import audit_title
from mama_pipeline.release._beir_layout import QRELS as BEIR_QRELS
from mama_pipeline.release._beir_layout import QUERIES as BEIR_QUERIES
from mama_pipeline.release._beir_layout import triple_tables
from mama_pipeline.release._configurations import ConfigurationPart
from mama_pipeline.release._files import json_bytes, rows_of, write_release_folder
from mama_pipeline.release._mamaretrieval_card import render_card
from mama_pipeline.release._sorted_tables import SortedTables, Source, columns_of, process_sorted_tables, sql_strings

NAME = "mamaretrieval"
CARD = "README.md"
JUDGE_PROMPT_FILE = "audit/judge_relevance_prompt.txt"
QUERY_PROMPT_FILE = "audit/query_writer_prompt.txt"
EXAMPLES_SHOWN = 5
REASONING = "audit/judgment_reasoning.parquet"
# query-keyed tables (path -> query id column) that a held-out split divides: the BEIR/MTEB triple's too
HELD_OUT_TABLES = {
    "data/queries.parquet": "query_id",
    "data/rankings.parquet": "query_id",
    "data/judgments.parquet": "query_id",
    REASONING: "query_id",
    BEIR_QUERIES: "_id",
    BEIR_QRELS: "query-id",
}

REQUIRED = {
    "chunks": ["chunk_id", "source", "page", "breadcrumb", "text", "corpus_version"],
    "queries": ["query_id", "query_text", "seed_chunk_id", "source", "tier", "model", "prompt_hash"],
    "rankings": ["query_id", "retriever", "rank", "chunk_id", "score"],
    "judgments": [
        "query_id",
        "chunk_id",
        "judge_model",
        "prompt_hash",
        *DIMENSIONS,
        "structural_violation",
        "score",
        "reasoning",
        "corpus_version",
    ],
    "pooled_pairs": ["query_id", "chunk_id"],
}
OPTIONAL = {"judgments": ["judge_identity"]}  # read when the table has them
RELEASE_ORDER = {
    "chunks": ["chunk_id"],
    "queries": ["query_id"],
    "rankings": ["retriever", "query_id", "rank"],
    "judgments": ["query_id", "chunk_id"],
    "pooled_pairs": [],
}


class ReleaseError(ValueError):
    """A release that must not be built, with the reason and examples of the offending rows."""


@dataclass(frozen=True)
class PromptInfo:
    """An LLM stage's prompt as shipped: the rows it produced must carry ``version_hash``."""

    template: PromptTemplate
    answer_schema: dict[str, Any]
    version_hash: str  # queries: the template hash; labels: template + answer schema
    temperature: float
    smoke_test: bool  # answers from the embedded smoke-test model

    @property
    def schema_version(self) -> str:
        canonical = json.dumps(self.answer_schema, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class CorpusInfo:
    source: str  # bundle location as configured
    commit: str | None  # hub commit the bundle was read at; None for a local file
    bundle_sha256: str | None
    canonical_text: str


@dataclass
class MamaretrievalInputs:
    """What a release is made of; the tables are frames or stored tables (``rankings``: every retriever's, at
    any depth), read through :meth:`frame`."""

    version: str
    chunks: Source
    queries: Source
    rankings: Source
    judgments: Source
    pooled_pairs: Source
    corpus: CorpusInfo
    query_writer: PromptInfo
    judge: PromptInfo
    retrievers: list[dict[str, Any]]  # configuration of each pooled retriever (with "name")
    pool_depth: int
    include_seed_chunk: bool
    lenient: int = 3
    strict: int = 5
    previous_version: str | None = None
    licence: str = "other"
    producer: dict[str, Any] = field(default_factory=dict)
    reliability: pl.DataFrame | None = None  # judge_reliability (reference_stage, audit, ..., note): on the card
    reference_decoding: dict[str, str] = field(default_factory=dict)  # reference stage -> its decoding, as stated
    circularity: list[dict[str, str]] = field(default_factory=list)  # the relevance judge's flags (circularity/)
    judging: dict[str, Any] | None = None  # judging_record: strategy, budget, judged share, estimated recall
    embedded_stages: list[str] = field(default_factory=list)  # stages the embedded smoke-test model served
    sorted_tables: SortedTables = field(default_factory=process_sorted_tables)  # where the tables are sorted

    @property
    def retriever_names(self) -> list[str]:
        return [r["name"] for r in self.retrievers]

    def frame(self, table: str) -> pl.LazyFrame:
        """The table's columns the release reads, its rows in release order (``rankings``: the pooled
        retrievers' to the pool depth, what the release ships)."""
        source = getattr(self, table)
        have = columns_of(source)
        columns = REQUIRED[table] + [c for c in OPTIONAL.get(table, []) if c in have]
        where = self.released_rankings if table == "rankings" else None
        return self.sorted_tables.scan(source, columns, RELEASE_ORDER[table], where)

    @property
    def released_rankings(self) -> str:
        """The SQL condition of the ranking rows a release ships: the pooled retrievers' to the pool depth."""
        return f'"retriever" IN ({sql_strings(self.retriever_names)}) AND "rank" <= {int(self.pool_depth)}'


def _require_columns(inp: MamaretrievalInputs) -> None:
    for table, columns in REQUIRED.items():
        have = columns_of(getattr(inp, table))
        missing = [c for c in columns if c not in have]
        if missing:
            raise ReleaseError(f"release {NAME} {inp.version}: table {table} lacks column(s) {missing}; it has {have}")


def _examples(df: pl.DataFrame) -> str:
    return "; ".join(
        ", ".join(f"{k}={v}" for k, v in row.items()) for row in df.head(EXAMPLES_SHOWN).iter_rows(named=True)
    )


def _refused_rows(rows: pl.LazyFrame) -> tuple[int, pl.DataFrame]:
    """(how many, the first few) of rows that refuse a release: one scan when there are none."""
    first = rows.head(EXAMPLES_SHOWN).collect()
    return (rows.select(pl.len()).collect().item() if first.height else 0), first


def _refuse_outside(
    inp: MamaretrievalInputs, what: str, rows: pl.LazyFrame, column: str, known: pl.LazyFrame, known_as: str
) -> None:
    """Refuse ``rows`` whose non-null ``column`` is not among ``known`` (one column of ids)."""
    ids = known.select(pl.all().alias(column)).unique()
    outside = rows.filter(pl.col(column).is_not_null()).join(ids, on=column, how="anti", maintain_order="left")
    count, first = _refused_rows(outside)
    if count:
        raise ReleaseError(
            f"release {NAME} {inp.version} refused: {count} {what} name a {column} not in {known_as} "
            f"(e.g. {_examples(first)}); re-materialise them for the current corpus and queries"
        )


def _corpus_version(chunks: pl.LazyFrame) -> str:
    versions = chunks.select(pl.col("corpus_version").unique().sort()).collect().to_series().to_list()
    if len(versions) != 1:
        raise ReleaseError(f"chunks carry {len(versions)} corpus versions {versions[:5]}; expected exactly one")
    return versions[0]


def _single_version(
    inp: MamaretrievalInputs, table: str, df: pl.LazyFrame, model_col: str, expected: str
) -> str | None:
    versions = df.select(model_col, "prompt_hash").unique().sort(model_col, "prompt_hash").collect()
    if versions.height > 1:
        raise ReleaseError(
            f"release {NAME} {inp.version} refused: {table} come from {versions.height} (model, prompt) versions "
            f"({_examples(versions)}); re-materialise {table} so one model and prompt produced them all"
        )
    if versions.height == 1 and versions["prompt_hash"][0] != expected:
        raise ReleaseError(
            f"release {NAME} {inp.version} refused: {table} were made with prompt hash {versions['prompt_hash'][0]}, "
            f"the prompt shipped with this release has hash {expected}; re-materialise {table}"
        )
    return versions[model_col][0] if versions.height else None


def _refuse_gated_dimensions(inp: MamaretrievalInputs) -> None:
    """Scoring stops at the D1 gate: a label with D1 false must leave D2..D4 null."""
    bad = inp.frame("judgments").filter(~pl.col("d1_topic") & pl.any_horizontal(pl.col(GRADES).is_not_null()))
    count, rows = _refused_rows(bad)
    if count:
        first = rows.row(0, named=True)
        raise ReleaseError(
            f"release {NAME} {inp.version} refused: {count} label(s) set D2..D4 while D1 is false, first "
            f"(query_id={first['query_id']}, chunk_id={first['chunk_id']}: "
            + ", ".join(f"{d}={first[d]}" for d in GRADES)
            + "); a label gated off by D1 has null D2..D4"
        )


def _refuse_mixed_judges(inp: MamaretrievalInputs) -> None:
    """Labels of one release come from one judge identity (endpoint, model, decoding) when it is recorded."""
    judgments = inp.frame("judgments")
    if "judge_identity" not in judgments.collect_schema().names():
        return
    identities = judgments.select(pl.col("judge_identity").drop_nulls().unique().sort()).collect().to_series().to_list()
    if len(identities) > 1:
        raise ReleaseError(
            f"release {NAME} {inp.version} refused: judgments come from {len(identities)} judge identities "
            f"{identities[:5]} (endpoint, model or decoding changed between shards); re-materialise judged_labels "
            "under one judge configuration"
        )


def check_inputs(inp: MamaretrievalInputs) -> tuple[str | None, str | None]:
    """Refuse inconsistent inputs; returns (query writer model, judge model)."""
    _require_columns(inp)
    chunks, queries, rankings = inp.frame("chunks"), inp.frame("queries"), inp.frame("rankings")
    _corpus_version(chunks)
    for what, frame, column in (("chunks", chunks, "chunk_id"), ("queries", queries, "query_id")):
        _, dupes = _refused_rows(frame.select(column).filter(pl.col(column).is_duplicated()))
        if dupes.height:
            raise ReleaseError(f"{what} repeat {column.replace('_', ' ')}s (e.g. {_examples(dupes)})")
    present = set(rankings.select(pl.col("retriever").unique()).collect().to_series().to_list())
    missing = sorted(set(inp.retriever_names) - present)
    if missing:
        raise ReleaseError(f"release {NAME} {inp.version} refused: no rankings of pooled retriever(s) {missing}")
    checks = [
        ("queries", queries.select("query_id", "seed_chunk_id"), "seed_chunk_id"),
        ("ranking rows", rankings.select("query_id", "retriever", "rank", "chunk_id"), "chunk_id"),
        ("pooled pairs", inp.frame("pooled_pairs"), "chunk_id"),
        ("labels", inp.frame("judgments").select("query_id", "chunk_id"), "chunk_id"),
    ]
    corpus = f"corpus version {_corpus_version(chunks)}"
    for what, rows, column in checks:
        _refuse_outside(inp, what, rows, column, chunks.select("chunk_id"), corpus)
    for what, rows, _ in checks[1:]:
        _refuse_outside(inp, what, rows, "query_id", queries.select("query_id"), "the released queries")
    _refuse_gated_dimensions(inp)
    _refuse_mixed_judges(inp)
    writer = _single_version(inp, "queries", queries, "model", inp.query_writer.version_hash)
    judge = _single_version(inp, "judgments", inp.frame("judgments"), "judge_model", inp.judge.version_hash)
    return writer, judge


def release_tables(inp: MamaretrievalInputs) -> dict[str, pl.LazyFrame]:
    """The released tables, path -> lazy frame, with fixed column types and sorted rows."""
    grade = pl.Int8
    judgments, chunks = inp.frame("judgments"), inp.frame("chunks")
    return {
        "data/queries.parquet": inp.frame("queries").select(
            pl.col("query_id", "query_text", "seed_chunk_id", "source", "tier").cast(pl.String)
        ),
        "data/rankings.parquet": inp.frame("rankings").select(
            pl.col("query_id").cast(pl.String),
            pl.col("retriever").cast(pl.String),
            pl.col("rank").cast(pl.Int32),
            pl.col("chunk_id").cast(pl.String),
            pl.col("score").cast(pl.Float64),
        ),
        "data/judgments.parquet": judgments.select(
            pl.col("query_id", "chunk_id").cast(pl.String),
            pl.col("d1_topic").cast(pl.Boolean),
            pl.col(*GRADES, "score").cast(grade),
        ),
        "data/chunks.parquet": chunks.select(
            pl.col("chunk_id", "source").cast(pl.String),
            pl.col("page").cast(pl.Int64),
            pl.col("breadcrumb").cast(pl.List(pl.String)),
            pl.col("text").cast(pl.String),
        ),
        REASONING: judgments.select(
            pl.col("query_id", "chunk_id", "judge_model").cast(pl.String),
            pl.col("prompt_hash").cast(pl.String).alias("label_prompt_hash"),
            pl.col("d1_topic").cast(pl.Boolean),
            pl.col(*GRADES).cast(grade),
            pl.col("structural_violation").cast(pl.Boolean),
            pl.col("score").cast(grade),
            pl.col("reasoning").cast(pl.String),
            pl.col("corpus_version").cast(pl.String).alias("judged_in_corpus_version"),
        ),
        **triple_tables(None, inp.frame("queries"), judgments, chunks),
    }


def figures(inp: MamaretrievalInputs, tables: dict[str, pl.LazyFrame]) -> dict[str, Any]:
    """The counts the manifest and card report."""
    queries = tables["data/queries.parquet"].select("query_id", "source", "tier").collect()
    judgments = tables["data/judgments.parquet"]
    rankings = tables["data/rankings.parquet"]
    keys = ["query_id", "chunk_id"]
    pool = inp.frame("pooled_pairs").unique().join(queries.lazy().select("query_id"), on="query_id", how="semi")
    best = judgments.group_by("query_id").agg(pl.col("score").max().alias("best"))
    best = queries.lazy().select("query_id").join(best, on="query_id", how="left").select(pl.col("best").fill_null(-1))
    chunks = tables["data/chunks.parquet"].select(pl.len().alias("chunks"), pl.col("source").n_unique())
    score = pl.col("score")
    counts, by_score, by_retriever, best, chunks, violations = pl.collect_all(
        [
            pl.concat(
                [
                    pool.select(pl.len().alias("pool")),
                    pool.join(judgments.select(keys), on=keys, how="anti").select(pl.len().alias("unjudged")),
                    judgments.select(
                        pl.len().alias("judged"),
                        (score >= inp.lenient).sum().alias("lenient"),
                        (score >= inp.strict).sum().alias("strict"),
                    ),
                    rankings.select(pl.len().alias("rankings")),
                ],
                how="horizontal",
            ),
            judgments.group_by("score").len().sort("score"),
            rankings.group_by("retriever").len().sort("retriever"),
            best.select(
                (pl.col("best") < inp.lenient).sum().alias("lenient"),
                (pl.col("best") < inp.strict).sum().alias("strict"),
            ),
            chunks,
            tables[REASONING].select(pl.col("structural_violation").sum()),
        ]
    )
    c = counts.row(0, named=True)
    score_counts = {str(s): 0 for s in range(7)}
    score_counts.update({str(s): int(n) for s, n in by_score.iter_rows()})
    return {
        "queries": queries.height,
        "queries_by_tier": dict(queries.group_by("tier").len().sort("tier").iter_rows()),
        "sources_with_queries": queries.get_column("source").n_unique(),
        "chunks": chunks["chunks"].item(),
        "chunk_sources": chunks["source"].item(),
        "rankings": c["rankings"],
        "rankings_by_retriever": dict(by_retriever.iter_rows()),
        "pooled_pairs": c["pool"],
        "pooled_pairs_per_query": round(c["pool"] / queries.height, 2) if queries.height else 0.0,
        "judged_pairs": c["judged"],
        "pooled_pairs_without_label": c["unjudged"],
        "score_distribution": score_counts,
        "lenient_relevant_pairs": int(c["lenient"]),
        "strict_relevant_pairs": int(c["strict"]),
        "queries_without_lenient_chunk": int(best["lenient"].item()),
        "queries_without_strict_chunk": int(best["strict"].item()),
        "structural_violations": int(violations.item() or 0),
    }


def reliability_summary(inp: MamaretrievalInputs) -> list[dict[str, Any]] | None:
    """The judge-reliability audits as released, one per reference judge: what it measures, its figures or why
    there are none."""
    if inp.reliability is None:
        return None
    audits = []
    for stage, kind, model in (
        inp.reliability.select("reference_stage", "audit", "reference_model").unique(maintain_order=True).iter_rows()
    ):
        rows = inp.reliability.filter(pl.col("reference_stage") == stage).sort("metric")
        notes = rows.get_column("note").drop_nulls().unique().sort().to_list()
        audits.append(
            {
                "reference_stage": stage,
                "audit": kind,
                "title": audit_title(kind),
                "reference_judge": model,
                "decoding": inp.reference_decoding.get(stage),
                "pairs": int(rows.get_column("pairs").max() or 0) if rows.height else 0,
                "refused": notes[0] if notes else None,
                "figures": None
                if notes
                else {m: (None if v is None else round(v, 4)) for m, v in rows.select("metric", "value").iter_rows()},
            }
        )
    return audits


def build_manifest(
    inp: MamaretrievalInputs, tables: dict[str, pl.LazyFrame], writer_model: str | None, judge_model: str | None
) -> dict[str, Any]:
    """Everything about the release except its file list."""
    smoke = inp.judge.smoke_test or inp.query_writer.smoke_test or bool(inp.embedded_stages)
    return {
        "name": NAME,
        "version": inp.version,
        "previous_version": inp.previous_version,
        "licence": inp.licence,
        "smoke_test": smoke,
        "embedded_model_stages": inp.embedded_stages,
        "note": SMOKE_TEST_NOTE if smoke else None,
        "corpus": {
            "version": _corpus_version(inp.frame("chunks")),
            "source": inp.corpus.source,
            "commit": inp.corpus.commit,
            "bundle_sha256": inp.corpus.bundle_sha256,
            "canonical_text": inp.corpus.canonical_text,
            "chunks": rows_of(inp.frame("chunks")),
        },
        "query_writer": {
            "model": writer_model,
            "prompt_id": inp.query_writer.template.id,
            "prompt_hash": inp.query_writer.version_hash,
            "answer_schema_version": inp.query_writer.schema_version,
            "temperature": inp.query_writer.temperature,
            "smoke_test": inp.query_writer.smoke_test,
            "prompt_file": QUERY_PROMPT_FILE,
        },
        "judge": {
            "model": judge_model,
            "prompt_id": inp.judge.template.id,
            "template_hash": inp.judge.template.hash,
            "prompt_hash": inp.judge.version_hash,
            "answer_schema_version": inp.judge.schema_version,
            "temperature": inp.judge.temperature,
            "smoke_test": inp.judge.smoke_test,
            "prompt_file": JUDGE_PROMPT_FILE,
            "score": "d1_topic x (d2_meaningful + d3_actionable + d4_density); d2..d4 are null when d1_topic is false",
        },
        "retrieval": {
            "retrievers": inp.retrievers,
            "pool_depth": inp.pool_depth,
            "include_seed_chunk": inp.include_seed_chunk,
        },
        "thresholds": {"lenient": inp.lenient, "strict": inp.strict},
        "figures": figures(inp, tables),
        **({"judging": inp.judging} if inp.judging is not None else {}),
        "judge_reliability": reliability_summary(inp),
        **({"circularity": inp.circularity} if inp.circularity else {}),
        "producer": inp.producer,
    }


def split_tables(
    tables: dict[str, pl.LazyFrame], rule: HeldOutRule
) -> tuple[dict[str, pl.LazyFrame], dict[str, pl.LazyFrame]]:
    """(public tables, held-out tables): the query-keyed tables split by the rule on query_id; chunks stay public."""
    public, held = dict(tables), {}
    for path, column in HELD_OUT_TABLES.items():
        public[path], held[path] = rule.split(tables[path], column)
    return public, held


def _held_out_manifest(
    inp: MamaretrievalInputs,
    rule: HeldOutRule,
    public: dict[str, Any],
    tables: dict[str, pl.LazyFrame],
    split: dict[str, Any],
) -> dict[str, Any]:
    return {
        "name": f"{NAME}-held-out",
        "version": inp.version,
        "private": "the held-out part of the release: keep this folder private; never publish it",
        "public_release": {
            "name": NAME,
            "version": inp.version,
            "corpus_version": public["corpus"]["version"],
            "chunks": "data/chunks.parquet of the public release",
        },
        "held_out": split,
        **{k: public[k] for k in ("smoke_test", "embedded_model_stages", "note")},
        "figures": figures(inp, tables),
        "producer": inp.producer,
    }


def write_mamaretrieval_release(
    out_dir: Path,
    inp: MamaretrievalInputs,
    parts: Sequence[ConfigurationPart] = (),
    held_out: HeldOutRule | None = None,
) -> dict[str, Any]:
    """Check the inputs, write the release folder (with extra configurations) atomically; return its manifest.

    With an active ``held_out`` rule, the held-out queries' rows (queries, rankings, labels, reasoning) are
    written to :func:`held_out_path` instead, with their own manifest, and the public manifest and card record
    the rule; so are each configuration's held-out rows (``ConfigurationPart.held_out``, split by its builder
    with the same rule); a configuration that was not split is refused, except one whose files hold public rows
    only (``public_only``, the leaderboard)."""
    writer_model, judge_model = check_inputs(inp)
    tables = release_tables(inp)
    held: dict[str, pl.LazyFrame] = {}
    if held_out is not None and held_out.active:
        unsplit = sorted(p.name for p in parts if p.split is None and not p.public_only)
        if unsplit:
            raise ReleaseError(
                f"release {NAME} {inp.version} refused: release.held_out.share > 0 with "
                f"configuration(s) {unsplit}, whose rows were not split by the held-out rule"
            )
        tables, held = split_tables(tables, held_out)
    manifest = build_manifest(inp, tables, writer_model, judge_model)
    if held:
        manifest["held_out"] = held_out.manifest(
            rows_of(tables["data/queries.parquet"]), rows_of(held["data/queries.parquet"])
        )
        if parts:
            manifest["held_out"]["configurations"] = {p.name: p.split for p in parts if p.split is not None}
    if parts:
        manifest["configurations"] = {p.name: p.manifest for p in parts}
        if any(p.manifest.get("smoke_test") or p.manifest.get("rewrites_by_smoke_test_model") for p in parts):
            manifest["smoke_test"], manifest["note"] = True, SMOKE_TEST_NOTE  # a track's answers came from it
    texts = {
        JUDGE_PROMPT_FILE: inp.judge.template.text.encode(),
        QUERY_PROMPT_FILE: inp.query_writer.template.text.encode(),
        "schema/judge_answer.schema.json": json_bytes(inp.judge.answer_schema),
        "schema/query_answer.schema.json": json_bytes(inp.query_writer.answer_schema),
    }
    for part in parts:
        clash = (set(part.tables) | set(part.texts)) & (set(tables) | set(texts) | {CARD})
        if clash:
            raise ReleaseError(
                f"release configuration {part.name!r} writes files the release already has: {sorted(clash)}"
            )
        tables = {**tables, **part.tables}
        texts = {**texts, **part.texts}
    rows = {path: rows_of(df) for path, df in tables.items()}
    texts[CARD] = render_card(manifest, parts, rows).encode()
    written = write_release_folder(out_dir, tables, texts, manifest)
    if held:
        held_manifest = _held_out_manifest(
            inp,
            held_out,
            manifest,
            {**held, "data/chunks.parquet": tables["data/chunks.parquet"]},
            manifest["held_out"],
        )
        held_texts: dict[str, bytes] = {}
        for part in parts:
            if part.held_out is not None:
                held, held_texts = {**held, **part.held_out.tables}, {**held_texts, **part.held_out.texts}
                held_manifest.setdefault("configurations", {})[part.name] = part.held_out.manifest
        write_release_folder(held_out_path(Path(out_dir), NAME), held, held_texts, held_manifest)
    return written

"""The ``robustness`` configuration of the mamaretrieval release.

Files (hub layout, beside the main configuration)::

    robustness/queries.parquet      query_id (<parent>~<kind>), parent_id, kind, query_text, tier
    robustness/judgments.parquet    query_id, chunk_id, d1..d4, score, origin (inherited | hole)
    robustness/rankings.parquet     the pooled retrievers' rankings of the variants, to the pool depth
    robustness/decisions.parquet    every attempted variant with its status, gate verdict and recipe (audit)
    robustness/beir/                the variants' BEIR/MTEB queries and qrels (configs robustness-corpus/-queries/-qrels)
    robustness/abbreviations.tsv    the shorthand table used
    robustness/prompts/*.txt        the rewrite and gate prompts

A release is refused when a variant's parent is not a released query (or its
text changed), or a label or ranking names a chunk outside the corpus version,
or labels come from a judge prompt other than the one shipped.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from mama_pipeline.common.held_out import HeldOutRule, configuration_split
from mama_pipeline.common.markdown import table
from mama_pipeline.judging import GRADES, RUBRIC_LABEL
from mama_pipeline.release._beir_layout import triple_configs, triple_tables
from mama_pipeline.release._configurations import ConfigurationPart
from mama_pipeline.release._files import rows_of
from mama_pipeline.release._mamaretrieval import RELEASE_ORDER, REQUIRED, MamaretrievalInputs, ReleaseError
from mama_pipeline.release._sorted_tables import Source, StoredTable, columns_of
from mama_pipeline.robustness import SEPARATOR, AbbreviationTable, gate_template, load_table, rewrite_template
from mama_pipeline.robustness.settings import KindSettings, RobustnessSettings
from mama_pipeline.settings import PipelineSettings
from mama_pipeline.store import Store

NAME = "robustness"
FOLDER = "robustness"
GRADE = pl.Int8
LABEL_COLUMNS = ["variant_id", "chunk_id", *RUBRIC_LABEL, "origin", "prompt_hash"]  # what the release reads of a label


def robustness_part(s: PipelineSettings, store: Store, inp: MamaretrievalInputs) -> ConfigurationPart | None:
    """The configuration from the robustness assets in the store; None when ``robustness.release`` is off."""
    r = s.robustness
    if not r.release:
        return None
    tables = {}
    for name in ("query_variants", "variant_decisions", "variant_labels", "variant_rankings"):
        if not store.table_exists(name):
            raise ReleaseError(
                f"release configuration {NAME}: table {name} is not in the store; materialise it "
                "first (or set robustness.release: false)"
            )
        tables[name] = StoredTable(store, name)
    table = load_table(s.resolve(r.abbreviations) if r.abbreviations else None)
    prompts = {
        f"{FOLDER}/prompts/{t.id}.txt": t.text.encode()
        for t in [
            *(
                rewrite_template(k.rewrite, r.max_rewrite_words, s.llm.query_rewriter.reasoning == "json_field")
                for k in r.kinds
                if k.rewrite
            ),
            gate_template(s.llm.rewrite_gate.reasoning == "json_field"),
        ]
    }
    smoke = s.llm.query_rewriter.embedded or s.llm.rewrite_gate.embedded
    return build_part(
        inp,
        r,
        table,
        tables["query_variants"],
        tables["variant_decisions"],
        tables["variant_labels"],
        tables["variant_rankings"],
        prompts,
        smoke,
        s.release.held_out.rule("query_id"),
    )


def _refuse(what: str, bad: pl.LazyFrame, why: str) -> None:
    first = bad.head(1).collect()
    if first.height:
        example = ", ".join(f"{k}={v}" for k, v in first.row(0, named=True).items())
        raise ReleaseError(
            f"release configuration {NAME} refused: {rows_of(bad)} {what} {why} (e.g. {example}); "
            "re-materialise the robustness assets"
        )


def check(inp: MamaretrievalInputs, variants: pl.LazyFrame, labels: pl.LazyFrame, rankings: pl.LazyFrame) -> None:
    released = inp.frame("queries").select(pl.col("query_id").alias("parent_id"), pl.col("query_text").alias("_t"))
    joined = variants.join(released, on="parent_id", how="left", maintain_order="left")
    _refuse(
        "variants",
        joined.filter(pl.col("_t").is_null()).select("variant_id", "parent_id"),
        "have a parent that is not a released query",
    )
    _refuse(
        "variants",
        joined.filter(pl.col("_t").is_not_null() & (pl.col("_t") != pl.col("parent_text"))).select(
            "variant_id", "parent_id"
        ),
        "were made from an older text of their parent",
    )
    chunks = inp.frame("chunks").select("chunk_id")
    for what, frame, key in (("variant labels", labels, "variant_id"), ("variant ranking rows", rankings, "query_id")):
        _refuse(
            what,
            frame.join(chunks, on="chunk_id", how="anti", maintain_order="left").select(key, "chunk_id"),
            "name a chunk outside the corpus version",
        )
    _refuse(
        "variant labels",
        labels.filter(pl.col("prompt_hash") != inp.judge.version_hash).select("variant_id", "chunk_id", "prompt_hash"),
        f"come from a judge prompt other than the shipped one ({inp.judge.version_hash})",
    )


def how_made(kind: KindSettings, r: RobustnessSettings, table: AbbreviationTable, decisions: pl.DataFrame) -> str:
    """One sentence per kind for the card."""
    if kind.rewrite:
        mine = decisions.filter(pl.col("kind") == kind.name)
        models = ", ".join(sorted(set(mine.get_column("model").drop_nulls().to_list()))) or "(no answer)"
        gates = ", ".join(sorted(set(mine.get_column("gate_model").drop_nulls().to_list()))) or "(not reached)"
        style = "telegraphic nurse phrasing" if kind.rewrite == "telegraphic" else "code-switched Swahili-English"
        return (
            f"LLM rewrite into {style} by {models} (prompt `{FOLDER}/prompts/query_rewrite_{kind.rewrite}.txt`), "
            f"kept only when a second call, the same-information gate ({gates}, "
            f"`{FOLDER}/prompts/rewrite_gate.txt`), answered yes; {mine.height} queries rewritten"
        )
    steps = []
    for step in kind.steps:
        if step == "shorthand":
            steps.append(
                f"clinical shorthand from the {len(table.entries)}-entry reviewed table "
                f"`{FOLDER}/abbreviations.tsv` (sha256 `{table.sha256[:16]}`), long forms replaced as whole "
                "words, longest first"
            )
        else:
            n = r.noise
            steps.append(
                f"character noise by the typo library, seeded per variant from seed {r.seed}, the parent id "
                f"and the kind; expected edits per letter: keyboard-adjacent substitution {n.nearby_char}, "
                f"dropped letter {n.missing_char}, doubled letter {n.repeated_char}, transposition "
                f"{n.char_swap}"
            )
    return ", then ".join(steps)


def build_part(
    inp: MamaretrievalInputs,
    r: RobustnessSettings,
    table: AbbreviationTable,
    variants: Source,
    decisions: Source,
    labels: Source,
    rankings: Source,
    prompts: dict[str, bytes],
    smoke_test: bool = False,
    held_out: HeldOutRule | None = None,
) -> ConfigurationPart:
    """The configuration; under an active ``held_out`` rule a variant (its decision, labels and rankings) follows
    its source query's side: the public part carries the public ones, ``held_out`` the others. The tables are
    read sorted in release order (:meth:`MamaretrievalInputs.frame`'s way); the rankings those of the pooled
    retrievers to the pool depth."""
    scan = inp.sorted_tables.scan
    variants = scan(variants, columns_of(variants), ["variant_id"])
    decisions = scan(decisions, columns_of(decisions), ["variant_id"])
    labels = scan(labels, LABEL_COLUMNS, ["variant_id", "chunk_id"])
    rankings = scan(rankings, REQUIRED["rankings"], RELEASE_ORDER["rankings"], inp.released_rankings)
    check(inp, variants, labels, rankings)
    if held_out is None or not held_out.active:
        return _assemble(inp, r, table, variants, decisions, labels, rankings, prompts, smoke_test)
    public, held = (
        _assemble(
            inp,
            r,
            table,
            _side(variants, "variant_id", held_out, h),
            _side(decisions, "variant_id", held_out, h),
            _side(labels, "variant_id", held_out, h),
            _side(rankings, "query_id", held_out, h),
            prompts,
            smoke_test,
        )
        for h in (False, True)
    )
    split = configuration_split(
        "variants",
        "the query_id of their source query (the variant id before `~`)",
        public.manifest["figures"]["variants"],
        held.manifest["figures"]["variants"],
    )
    return replace(public, held_out=ConfigurationPart(NAME, held.tables, manifest=held.manifest), split=split)


def _side(df: pl.LazyFrame, column: str, rule: HeldOutRule, held: bool) -> pl.LazyFrame:
    """The rows of ``df`` whose variant id (``column``) has a source query on the held-out side (``held``) or not."""
    parent = pl.col(column).str.split(SEPARATOR).list.first()
    parents = df.select(parent.unique()).collect().to_series()
    mask = parent.is_in(sorted(rule.held_ids(parents)))
    return df.filter(mask if held else ~mask)


def _assemble(
    inp: MamaretrievalInputs,
    r: RobustnessSettings,
    table: AbbreviationTable,
    variants: pl.LazyFrame,
    decisions: pl.LazyFrame,
    labels: pl.LazyFrame,
    rankings: pl.LazyFrame,
    prompts: dict[str, bytes],
    smoke_test: bool,
) -> ConfigurationPart:
    tables = {
        f"{FOLDER}/queries.parquet": variants.select(
            pl.col("variant_id").alias("query_id"), "parent_id", "kind", "query_text", "tier"
        ).cast(pl.String),
        f"{FOLDER}/judgments.parquet": labels.select(
            pl.col("variant_id").cast(pl.String).alias("query_id"),
            pl.col("chunk_id").cast(pl.String),
            pl.col("d1_topic").cast(pl.Boolean),
            pl.col(*GRADES, "score").cast(GRADE),
            pl.col("origin").cast(pl.String),
        ),
        f"{FOLDER}/rankings.parquet": rankings.select(
            pl.col("query_id", "retriever").cast(pl.String),
            pl.col("rank").cast(pl.Int32),
            pl.col("chunk_id").cast(pl.String),
            pl.col("score").cast(pl.Float64),
        ),
        f"{FOLDER}/decisions.parquet": decisions.select(
            "variant_id",
            "parent_id",
            "kind",
            "method",
            "status",
            "gate",
            "variant_text",
            "reason",
            pl.col("seed").cast(pl.Int64),
            "recipe",
            "model",
            "prompt_hash",
            "gate_model",
            "gate_prompt_hash",
        ),
    }
    tables |= triple_tables(NAME, tables[f"{FOLDER}/queries.parquet"], tables[f"{FOLDER}/judgments.parquet"])
    texts = {f"{FOLDER}/abbreviations.tsv": Path(table.path).read_bytes(), **prompts}
    variants, decisions = variants.select("kind").collect(), decisions.collect()
    counts = {
        k: dict(sorted(g.group_by("status").len().iter_rows()))
        for (k,), g in decisions.group_by("kind", maintain_order=True)
    }
    kinds: list[dict[str, Any]] = [
        {
            "name": k.name,
            "steps": k.steps,
            "rewrite": k.rewrite,
            "how": how_made(k, r, table, decisions),
            "decisions": counts.get(k.name, {}),
            "variants": int((variants.get_column("kind") == k.name).sum()),
        }
        for k in r.kinds
    ]
    origin = dict(labels.group_by("origin").len().collect().iter_rows())
    manifest = {
        "folder": FOLDER,
        "seed": r.seed,
        "noise_rates_per_letter": r.noise.model_dump(),
        "noise_library": "typo 0.1.7",
        "abbreviation_table_sha256": table.sha256,
        "keep_when_gate_fails": r.keep_when_gate_fails,
        "rewrites_by_smoke_test_model": smoke_test,
        "kinds": kinds,
        "figures": {
            "variants": variants.height,
            "labels_inherited": origin.get("inherited", 0),
            "labels_from_holes": origin.get("hole", 0),
            "rankings": rows_of(rankings),
        },
    }
    return ConfigurationPart(
        name=NAME,
        tables=tables,
        texts=texts,
        viewer_configs=(
            ("robustness_queries", f"{FOLDER}/queries.parquet", "query variants"),
            ("robustness_judgments", f"{FOLDER}/judgments.parquet", "labels of the query variants"),
            ("robustness_rankings", f"{FOLDER}/rankings.parquet", "pooled retrievers' rankings of the variants"),
            *triple_configs(NAME, "query variants"),
        ),
        card_section=card_section(kinds, manifest["figures"], r, smoke_test),
        manifest=manifest,
    )


def card_section(
    kinds: list[dict[str, Any]], figures: dict[str, int], r: RobustnessSettings, smoke_test: bool = False
) -> str:
    rows = [
        (
            k["name"],
            k["how"],
            k["variants"],
            ", ".join(f"{s}: {n}" for s, n in sorted(k["decisions"].items()) if s != "kept") or "none",
        )
        for k in kinds
    ]
    return (
        "## Robustness configuration\n\n"
        "Variants of the released queries as a hurried nurse-midwife types them: misspelt, abbreviated, "
        "telegraphic and code-switched (Swahili-English). A variant's id is its parent's id and its kind "
        "(`q_00042~typo`). A variant identical to its parent (case and spacing aside) is not kept. A variant asks "
        "for its parent's information, so it inherits the parent's labels (`origin = inherited`); chunks that the "
        "parent never had judged, in the top-k of a variant's ranking or of the parent's own clean ranking, were "
        "judged by the same judge and prompt for the parent's question (`origin = hole`), so both sides of a "
        f"comparison are judged to the same depth. Labels: {figures['labels_inherited']} inherited, "
        f"{figures['labels_from_holes']} from holes; {figures['variants']} variants. `robustness-queries` and "
        "`robustness-qrels` (with `robustness-corpus`) are the variants and all their labels in the BEIR/MTEB "
        "layout.\n\n"
        + table(("kind", "how it was made", "variants kept", "not kept (by reason)"), rows)
        + "\n"
        + (
            "\nA rewrite whose gate answer failed is kept (robustness.keep_when_gate_fails).\n"
            if r.keep_when_gate_fails
            else ""
        )
        + (
            "\n> The rewrites and gate verdicts come from the embedded smoke-test model: they exercise the "
            "pipeline and are not meaningful.\n"
            if smoke_test
            else ""
        )
    )

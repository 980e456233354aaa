"""The ``multipassage`` configuration of the mamaretrieval release.

Files (hub layout, beside the main configuration; the chunks are the release's
``data/chunks.parquet``, the judge's prompt and schema its ``audit/`` and ``schema/`` files)::

    multipassage/questions.parquet          query_id, query_text, set_id, chunk_ids (the set), facts, fact_chunk_ids
                                            (the chunk each fact was taken from), kind, size, source, tier
    multipassage/rankings.parquet           query_id, retriever, rank, chunk_id, score (pooled retrievers, pool depth)
    multipassage/judgments.parquet          query_id, chunk_id, required_piece, d1..d4, score (relevance labels)
    multipassage/fact_judgments.parquet     query_id, chunk_id, required_piece, facts (numbers of the facts it states)
    multipassage/facts.diversity.txt        ndeval diversity qrels: query fact chunk 1, every chunk stating each fact
    multipassage/decisions.parquet          every sampled chunk set: status, verdicts (question and facts only when kept)
    multipassage/beir/                      BEIR/MTEB queries and qrels (configs multipassage-corpus/-queries/-qrels)
    multipassage/prompts/*.txt, multipassage/schema/*.json   the writer's, verifier's, fact checker's and fact
                                            judge's prompts and answer schemas (keyed by set size / number of facts)

Refused when a released question was not verified (its set's decision is not
``kept``), when a question, ranking or label names a chunk outside the corpus
version, when labels come from a judge prompt other than the one shipped, or when
the judge left more pooled pairs unlabelled (relevance or facts) than
``llm.judge.max_failure_rate`` allows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from mama_pipeline.common.held_out import HeldOutRule, configuration_split
from mama_pipeline.common.markdown import VERBATIM, table
from mama_pipeline.judging import GRADES
from mama_pipeline.multipassage import (
    FACTS_PER_PASSAGE,
    fact_check_template,
    fact_judge_template,
    fact_qrels,
    facts_stated_model,
    label_bounds,
    over_bound,
    verifier_model,
    verifier_template,
    writer_model,
    writer_template,
)
from mama_pipeline.release._beir_layout import triple_configs, triple_tables
from mama_pipeline.release._configurations import ConfigurationPart
from mama_pipeline.release._files import json_bytes
from mama_pipeline.release._mamaretrieval import MamaretrievalInputs, PromptInfo, ReleaseError
from mama_pipeline.settings import PipelineSettings
from mama_pipeline.store import Store

NAME = "multipassage"
FOLDER = "multipassage"
TABLES = (
    "multipassage_questions",
    "multipassage_decisions",
    "multipassage_labels",
    "multipassage_fact_labels",
    "multipassage_scoreboard",
)
QRELS = f"{FOLDER}/facts.diversity.txt"
STAGES = ("writer", "verifier", "fact_check", "fact_judge")
PROMPTS = {k: f"{FOLDER}/prompts/multipassage_{k}.txt" for k in STAGES}
SCHEMAS = {k: f"{FOLDER}/schema/{k}_answer.schema.json" for k in STAGES}
MAX_FACTS = 3 * FACTS_PER_PASSAGE  # a question of three passages with the most facts each


@dataclass
class TrackInputs:
    questions: pl.DataFrame
    decisions: pl.DataFrame
    rankings: pl.DataFrame
    labels: pl.DataFrame  # multipassage_labels (status labelled | failed)
    fact_labels: pl.DataFrame  # multipassage_fact_labels (status labelled | failed)
    prompts: dict[str, PromptInfo]  # per stage of STAGES
    retrievers: list[str]
    pool_depth: int
    max_failure_rate: float  # llm.judge.max_failure_rate
    scoreboard: pl.DataFrame | None = None  # tier 'all' means, reported in the card
    scoreboard_scope: str = "all questions"  # which questions the scoreboard's means are over, as the card says


def prompt_infos(max_words: int, set_sizes: list[int], writer, verifier, judge) -> dict[str, PromptInfo]:
    """The shipped prompts of each stage (``writer``/``verifier``/``judge``: their llm stage settings); the writer's
    answer schemas keyed by set size, the fact checker's and the fact judge's by number of facts shown."""
    w, v, j = (x.reasoning == "json_field" for x in (writer, verifier, judge))
    tpl = {
        "writer": writer_template(max_words, w),
        "verifier": verifier_template(v),
        "fact_check": fact_check_template(v),
        "fact_judge": fact_judge_template(j),
    }
    schemas = {
        "writer": {f"set size {n}": writer_model(w, n).model_json_schema() for n in set_sizes},
        "verifier": verifier_model(v).model_json_schema(),
        "fact_check": {
            f"{n} facts": facts_stated_model(v, n).model_json_schema() for n in range(1, FACTS_PER_PASSAGE + 1)
        },
        "fact_judge": {f"{n} facts": facts_stated_model(j, n).model_json_schema() for n in range(2, MAX_FACTS + 1)},
    }
    stage = {"writer": writer, "verifier": verifier, "fact_check": verifier, "fact_judge": judge}
    return {k: PromptInfo(tpl[k], schemas[k], tpl[k].hash, stage[k].temperature, stage[k].embedded) for k in STAGES}


def multipassage_part(s: PipelineSettings, store: Store, inp: MamaretrievalInputs) -> ConfigurationPart | None:
    """The configuration from the multipassage assets in the store; None when ``multipassage.release`` is off."""
    from mama_pipeline.multipassage import stored_track_rankings

    if not s.multipassage.release:
        return None
    tables = {}
    for name in TABLES:
        if not store.table_exists(name):
            raise ReleaseError(
                f"release configuration {NAME}: table {name} is not in the store; materialise it "
                "first (or set multipassage.release: false)"
            )
        tables[name] = store.read_table(name)
    pooled = s.multipassage.pool_retrievers or s.retrieval.pooled
    questions = tables["multipassage_questions"]
    mp = s.multipassage
    prompts = prompt_infos(
        mp.max_words, mp.set_sizes, getattr(s.llm, mp.writer_stage), getattr(s.llm, mp.verifier_stage), s.llm.judge
    )
    return build_part(
        inp,
        TrackInputs(
            questions=questions,
            decisions=tables["multipassage_decisions"],
            rankings=stored_track_rankings(store, pooled, questions),
            labels=tables["multipassage_labels"],
            fact_labels=tables["multipassage_fact_labels"],
            prompts=prompts,
            retrievers=pooled,
            pool_depth=mp.pool_depth,
            max_failure_rate=s.llm.judge.max_failure_rate,
            scoreboard=tables["multipassage_scoreboard"],
        ),
        s.release.held_out.rule("query_id"),
    )


def _refuse(why: str) -> None:
    raise ReleaseError(f"release configuration {NAME} refused: {why}; re-materialise the multipassage assets")


def check(inp: MamaretrievalInputs, t: TrackInputs) -> None:
    """Refuse a configuration that would ship an unverified question, a chunk outside the corpus, stale labels or
    more unlabelled pairs than the judge's failure bound allows."""
    kept = t.decisions.filter(pl.col("status") == "kept")["set_id"].to_list()
    unverified = t.questions.filter(~pl.col("set_id").is_in(kept))
    if unverified.height:
        _refuse(f"{unverified.height} question(s) whose verification did not pass (e.g. {unverified['query_id'][0]})")
    chunks = inp.frame("chunks").select("chunk_id", "corpus_version").collect()
    ids = set(chunks["chunk_id"].to_list())
    version = chunks["corpus_version"].unique().sort().to_list()
    named = {
        "questions": t.questions.select(pl.col("chunk_ids").explode())["chunk_ids"].drop_nulls().to_list(),
        "rankings": t.rankings["chunk_id"].to_list(),
        "labels": t.labels["chunk_id"].to_list(),
        "fact labels": t.fact_labels["chunk_id"].to_list(),
    }
    for what, chunk_ids in named.items():
        outside = sorted(set(chunk_ids) - ids)
        if outside:
            _refuse(
                f"{what} name {len(outside)} chunk(s) not in corpus version {', '.join(version)} (e.g. {outside[0]})"
            )
    hashes = set(t.labels.filter(pl.col("status") == "labelled")["prompt_hash"].unique().to_list())
    if hashes - {inp.judge.version_hash}:
        _refuse(
            f"labels made with prompt hash(es) {sorted(hashes)}, the shipped judge prompt has {inp.judge.version_hash}"
        )
    shipped = t.prompts["fact_judge"].version_hash
    hashes = set(t.fact_labels.filter(pl.col("status") == "labelled")["prompt_hash"].unique().to_list())
    if hashes - {shipped}:
        _refuse(f"fact labels made with prompt hash(es) {sorted(hashes)}, the shipped fact judge prompt has {shipped}")
    if over := over_bound(label_bounds(t.labels, t.fact_labels, t.max_failure_rate)):
        _refuse(over)


def release_tables(t: TrackInputs) -> dict[str, pl.DataFrame]:
    grade = pl.Int8
    labelled = t.labels.filter(pl.col("status") == "labelled")
    qids = t.questions["query_id"].to_list()
    kept = pl.col("status") == "kept"  # failed questions and their facts are never shipped
    decisions = t.decisions.with_columns(
        question=pl.when(kept).then(pl.col("question")), facts=pl.when(kept).then(pl.col("facts"))
    )
    strings = pl.List(pl.String)
    return {
        f"{FOLDER}/questions.parquet": t.questions.select(
            pl.col("query_id", "query_text", "set_id").cast(pl.String),
            pl.col("chunk_ids").cast(strings),
            pl.col("facts", "fact_chunk_ids").cast(strings),
            pl.col("kind").cast(pl.String),
            pl.col("size").cast(pl.Int8),
            pl.col("source", "tier").cast(pl.String),
        ).sort("query_id"),
        f"{FOLDER}/rankings.parquet": t.rankings.filter(
            pl.col("retriever").is_in(t.retrievers) & (pl.col("rank") <= t.pool_depth) & pl.col("query_id").is_in(qids)
        )
        .select(
            pl.col("query_id", "retriever").cast(pl.String),
            pl.col("rank").cast(pl.Int32),
            pl.col("chunk_id").cast(pl.String),
            pl.col("score").cast(pl.Float64),
        )
        .sort("retriever", "query_id", "rank"),
        f"{FOLDER}/judgments.parquet": labelled.select(
            pl.col("query_id", "chunk_id").cast(pl.String),
            pl.col("required_piece").cast(pl.Boolean),
            pl.col("d1_topic").cast(pl.Boolean),
            pl.col(*GRADES, "score").cast(grade),
        ).sort("query_id", "chunk_id"),
        f"{FOLDER}/fact_judgments.parquet": t.fact_labels.filter(pl.col("status") == "labelled")
        .select(
            pl.col("query_id", "chunk_id").cast(pl.String),
            pl.col("required_piece").cast(pl.Boolean),
            pl.col("facts").cast(pl.List(pl.Int8)),
        )
        .sort("query_id", "chunk_id"),
        f"{FOLDER}/decisions.parquet": decisions.select(
            pl.col("set_id", "kind").cast(pl.String),
            pl.col("size").cast(pl.Int8),
            pl.col("chunk_ids").cast(strings),
            pl.col("source", "tier", "status", "question").cast(pl.String),
            pl.col("facts").cast(strings),
            pl.col("fact_verdicts").cast(strings),
            pl.col("set_verdict").cast(pl.String),
            pl.col("alone_verdicts").cast(strings),
        ).sort("set_id"),
    }


def diversity_qrels(questions: pl.DataFrame, fact_labels: pl.DataFrame) -> bytes:
    """ndeval's qrels format: ``query_id fact chunk_id 1``, one subtopic per fact (numbered from 1), every chunk
    stating it (``fact_labels``: the labelled pairs)."""
    qrels = fact_qrels(questions, fact_labels).sort("query_id", pl.col("iteration").cast(pl.Int64), "doc_id")
    return "".join(f"{q} {f} {c} {r}\n" for q, c, r, f in qrels.iter_rows()).encode()


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
        "fact_judged_pairs": tables[f"{FOLDER}/fact_judgments.parquet"].height,
        "fact_unlabelled_pairs": int((t.fact_labels["status"] == "failed").sum()),
        "required_pieces": int(q["chunk_ids"].list.len().sum() or 0),
        "facts": int(q["facts"].list.len().sum() or 0),
        "facts_stated_by_another_chunk": int(facts_elsewhere(t)),
        "pieces_judged_lenient": int(j.filter(pl.col("required_piece") & (pl.col("score") >= inp.lenient)).height),
        "other_pairs_lenient": int(j.filter(~pl.col("required_piece") & (pl.col("score") >= inp.lenient)).height),
        "rankings": tables[f"{FOLDER}/rankings.parquet"].height,
    }


def facts_elsewhere(t: TrackInputs) -> int:
    """Facts that some pooled chunk other than the one they were taken from states (the redundancy alpha weighs)."""
    labelled = t.fact_labels.filter(pl.col("status") == "labelled")
    qrels = fact_qrels(t.questions, labelled)
    return qrels.group_by("query_id", "iteration").len().filter(pl.col("len") > 1).height


def _stage(info: PromptInfo, model: str | None, stage: str) -> dict[str, Any]:
    return {
        "model": model,
        "prompt_id": info.template.id,
        "prompt_hash": info.version_hash,
        "answer_schema_version": info.schema_version,
        "temperature": info.temperature,
        "smoke_test": info.smoke_test,
        "prompt_file": PROMPTS[stage],
        "answer_schema_file": SCHEMAS[stage],
    }


def _one(values: pl.Series) -> str | None:
    found = sorted(set(values.drop_nulls().to_list()))
    return found[0] if len(found) == 1 else (", ".join(found) or None)


def build_manifest(inp: MamaretrievalInputs, t: TrackInputs, tables: dict[str, pl.DataFrame]) -> dict[str, Any]:
    board = None
    if t.scoreboard is not None and t.scoreboard.height:
        board = [
            {"retriever": r, "measure": m, "mean": round(v, 4)}
            for r, m, v in t.scoreboard.filter((pl.col("tier") == "all") & pl.col("track"))
            .select("retriever", "measure", "mean")
            .iter_rows()
        ]
    return {
        "folder": FOLDER,
        "smoke_test": any(p.smoke_test for p in t.prompts.values()) or inp.judge.smoke_test,
        "question_writer": _stage(t.prompts["writer"], _one(t.decisions["writer_model"]), "writer"),
        "verifier": _stage(t.prompts["verifier"], _one(t.decisions["verifier_model"]), "verifier"),
        "fact_checker": _stage(t.prompts["fact_check"], _one(t.decisions["verifier_model"]), "fact_check"),
        "judge": {
            "model": _one(t.labels["judge_model"]),
            "prompt_hash": inp.judge.version_hash,
            "prompt": "the release's judge prompt and answer schema (manifest judge)",
        },
        "fact_judge": _stage(t.prompts["fact_judge"], _one(t.fact_labels["judge_model"]), "fact_judge"),
        "verification": "kept only when every fact is stated by the chunk it was taken from, no chunk of the set "
        "alone answers the question completely and the set as a whole does (the verifier checks "
        "each fact against its chunk, grades each chunk alone, then the set)",
        "max_failure_rate": t.max_failure_rate,
        "retrieval": {"retrievers": t.retrievers, "pool_depth": t.pool_depth},
        "qrels": QRELS,
        "measures": "alpha_nDCG@k (ndeval, one subtopic per fact, every chunk stating it relevant to it, so a "
        "chunk repeating a fact already ranked higher gains (1 - alpha) per repeat); R@k[pieces] (share "
        "of the facts stated in the top k, ndeval subtopic recall); AllIn@k[pieces] (every fact stated "
        "in the top k); single-chunk headline measures on the relevance labels with the set's chunks "
        "relevant",
        "scoreboard": board,
        "scoreboard_scope": t.scoreboard_scope,
        "figures": figures(inp, t, tables),
    }


def card_section(manifest: dict[str, Any]) -> str:
    """The card's multi-passage section (Markdown)."""
    f = manifest["figures"]
    lines = ["## Multi-passage configuration\n"]
    if not f["questions"]:
        lines.append(
            f"**This track produced nothing**: none of the {f['sets_written']} chunk sets written became a "
            f"verified question ({_outcomes(f['sets_by_status'])}), so its configurations are not listed."
            "\n"
        )
    if manifest["smoke_test"]:
        lines.append(
            "> **Smoke test.** The questions, verdicts or labels of this configuration come from the "
            "embedded smoke-test model: they exercise the pipeline and are not meaningful.\n"
        )
    lines.append(
        "Questions that can only be answered by combining two or three guideline chunks (files under "
        f"`{FOLDER}/`). Candidate sets are neighbours in one guideline section or chunks of different sources that "
        "an embedding retriever places close together; an LLM wrote one question per set with the facts a complete "
        "answer needs, each taken from one chunk of the set, and a verifier kept it only "
        f"when {manifest['verification'].split('when ', 1)[1]}. The judge then said, for every pooled chunk, which "
        f"of the question's facts it states (`{FOLDER}/fact_judgments.parquet`): a fact is relevant in every chunk "
        "stating it, so two chunks carrying the same fact are redundant. The chunks of a question's set also count "
        "as relevant for the single-chunk measures, other pooled chunks when the judge grades them so. Questions "
        f"whose writing or verification failed are counted in `{FOLDER}/decisions.parquet`, never shipped. Pairs "
        "the judge could not label are counted below; the configuration is refused when they exceed "
        f"{manifest['max_failure_rate']:.2%} of the pooled pairs.\n"
    )
    rows = [
        ("questions", f["questions"]),
        ("by size", f["questions_by_size"]),
        ("by kind", f["questions_by_kind"]),
        ("by tier", f["questions_by_tier"]),
        ("sets written", f["sets_written"]),
        ("not released (failed writing or verification)", f["not_released"]),
        ("outcomes", f["sets_by_status"]),
        ("judged pairs", f["judged_pairs"]),
        ("chunks in the questions' sets", f["required_pieces"]),
        ("set chunks the judge grades lenient", f["pieces_judged_lenient"]),
        ("facts", f["facts"]),
        ("facts stated by another pooled chunk too", f["facts_stated_by_another_chunk"]),
        ("pairs without a relevance label", f"{f['unlabelled_pairs']} of {f['unlabelled_pairs'] + f['judged_pairs']}"),
        (
            "pairs without a fact label",
            f"{f['fact_unlabelled_pairs']} of {f['fact_unlabelled_pairs'] + f['fact_judged_pairs']}",
        ),
    ]
    lines.append(table(("figure", "value"), rows, VERBATIM) + "\n")
    if manifest["scoreboard"]:
        lines.append(f"### Multi-passage scoreboard ({manifest['scoreboard_scope']})\n")
        lines.append(
            table(
                ("retriever", "measure", "mean"),
                [(r["retriever"], r["measure"], r["mean"]) for r in manifest["scoreboard"]],
                replace(VERBATIM, digits=4),
            )
            + "\n"
        )
    lines.append(
        f"Measures: {manifest['measures']}. `{QRELS}` is ready for ndeval."
        + (
            " The configs `multipassage-queries` and `multipassage-qrels` (with `multipassage-corpus`) are the "
            "questions and their graded relevance labels in the BEIR/MTEB layout; they carry no facts, so "
            f"alpha-nDCG needs `{QRELS}`."
            if f["questions"]
            else ""
        )
        + "\n"
    )
    return "\n".join(lines)


def _outcomes(by_status: dict[str, int]) -> str:
    return ", ".join(f"{status}: {n}" for status, n in by_status.items()) or "no set was sampled"


def split_track(t: TrackInputs, rule: HeldOutRule) -> tuple[TrackInputs, TrackInputs]:
    """(public, held-out) track inputs by the rule on each question's own id: its set's decision, rankings and
    labels go with it; decisions of sets that became no question stay public. The scoreboard (means over all
    questions) is reported with the public part only, saying it covers both."""
    held_ids = sorted(rule.held_ids(t.questions["query_id"]))
    held_sets = t.questions.filter(pl.col("query_id").is_in(held_ids))["set_id"].to_list()

    def side(held: bool) -> TrackInputs:
        by_id = pl.col("query_id").is_in(held_ids)
        keep = by_id if held else ~by_id
        in_sets = pl.col("set_id").is_in(held_sets)
        return replace(
            t,
            questions=t.questions.filter(keep),
            decisions=t.decisions.filter(in_sets if held else ~in_sets),
            rankings=t.rankings.filter(keep),
            labels=t.labels.filter(keep),
            fact_labels=t.fact_labels.filter(keep),
            scoreboard=None if held else t.scoreboard,
            scoreboard_scope=f"all {t.questions.height} questions, the {len(held_ids)} held-out ones included",
        )

    return side(False), side(True)


def build_part(inp: MamaretrievalInputs, t: TrackInputs, held_out: HeldOutRule | None = None) -> ConfigurationPart:
    """The configuration; under an active ``held_out`` rule the public part carries the public questions and
    ``held_out`` the others (by :func:`split_track`)."""
    check(inp, t)
    if held_out is None or not held_out.active:
        return _assemble(inp, t)
    public_t, held_t = split_track(t, held_out)
    public, held = _assemble(inp, public_t), _assemble(inp, held_t)
    split = configuration_split(
        "questions", "their own query_id (mq_NNNNN)", public_t.questions.height, held_t.questions.height
    )
    return replace(
        public,
        split=split,
        held_out=ConfigurationPart(NAME, held.tables, {QRELS: held.texts[QRELS]}, manifest=held.manifest),
    )


def _assemble(inp: MamaretrievalInputs, t: TrackInputs) -> ConfigurationPart:
    tables = release_tables(t)
    tables |= triple_tables(NAME, tables[f"{FOLDER}/questions.parquet"], tables[f"{FOLDER}/judgments.parquet"])
    manifest = build_manifest(inp, t, tables)
    texts = {PROMPTS[k]: t.prompts[k].template.text.encode() for k in STAGES}
    texts |= {SCHEMAS[k]: json_bytes(t.prompts[k].answer_schema) for k in STAGES}
    texts[QRELS] = diversity_qrels(t.questions, t.fact_labels.filter(pl.col("status") == "labelled"))
    return ConfigurationPart(
        name=NAME,
        tables=tables,
        texts=texts,
        viewer_configs=(
            (
                "multipassage_questions",
                f"{FOLDER}/questions.parquet",
                "multi-passage questions, their chunk sets and facts",
            ),
            ("multipassage_judgments", f"{FOLDER}/judgments.parquet", "labels of the multi-passage questions"),
            (
                "multipassage_fact_judgments",
                f"{FOLDER}/fact_judgments.parquet",
                "facts of the multi-passage questions each pooled chunk states",
            ),
            ("multipassage_rankings", f"{FOLDER}/rankings.parquet", "pooled retrievers' rankings of the questions"),
            *triple_configs(NAME, "multi-passage questions"),
        ),
        card_section=card_section(manifest),
        manifest=manifest,
    )

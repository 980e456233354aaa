"""Per LLM-calling asset: the runs it would send each stage, rendered from the inputs in the store.

Each planner reads its asset's inputs from the store (tables named as the IO manager names them)
and builds the requests with the functions the asset itself uses; an input that is not in the
store makes the plan say so (:data:`~mama_pipeline.plan._bill.NOT_BUILT`). Runs whose requests
depend on answers asked in the same step (the rewrite gate, the multi-passage verifier) or on a
retrieval the plan does not run (RAG answering systems) are listed with the reason they are not
computed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import polars as pl

from mama_pipeline.llm.client import LLMClient
from mama_pipeline.llm.reference_audit import reference_judge_stages
from mama_pipeline.llm.settings import StageSettings
from mama_pipeline.plan._bill import NOT_BUILT, Bill, PlannedRun, StagePlan, bill, bound_seconds, slots_of
from mama_pipeline.plan._prompt_bounds import prompt_token_bound
from mama_pipeline.plan._stage_bounds import BOUNDS, RawInputs
from mama_pipeline.resources import LLMResource
from mama_pipeline.settings import PipelineSettings
from mama_pipeline.store import Store

if TYPE_CHECKING:
    from mama_pipeline.robustness import StoredHoles


SLICE_PAIRS = 200_000  # pairs a judge's plan joins with their chunks' texts at a time


class NotBuilt(Exception):
    """An input table (or partition) is not in the store."""


@dataclass(frozen=True)
class Inputs:
    """The store's tables as the planners read them: each table (or partition, or columns of it) is read once per
    planner, as the plan writes nothing into them, and let go when the planner is done (:meth:`release`), so the
    plan holds one planner's inputs at a time."""

    s: PipelineSettings
    store: Store
    _read: dict[tuple, pl.DataFrame] = field(default_factory=dict, repr=False, compare=False)

    @property
    def built(self) -> bool:
        """Whether the store file exists (without it, nothing is opened: opening would create it)."""
        return self.store.path.exists()

    def table(
        self,
        name: str,
        partition: str | None = None,
        columns: tuple[str, ...] | None = None,
        where: tuple[str, tuple[str, ...]] | None = None,
    ) -> pl.DataFrame:
        """A table, or one partition of it; ``columns``: those only; ``where``: (column, values) the rows whose
        column holds one of the values (in the table's order)."""
        if (name, partition, columns, where) not in self._read:
            if not self.built:
                raise NotBuilt(name)
            try:  # one connection: read_table says KeyError of a table not in the store
                self._read[name, partition, columns, where] = self.store.read_table(
                    name,
                    partitions=None if partition is None else [partition],
                    columns=columns,
                    where=None if where is None else {where[0]: where[1]},
                )
            except KeyError:
                raise NotBuilt(name) from None
        df = self._read[name, partition, columns, where]
        if partition is not None and df.is_empty():
            raise NotBuilt(f"{name}[{partition}]")
        return df

    def require(self, name: str) -> None:
        """Raise :class:`NotBuilt` unless the store holds table ``name`` (for an input read later, by slices)."""
        if not self.built or not self.store.table_exists(name):
            raise NotBuilt(name)

    def release(self) -> None:
        """Let go of every table read so far (a planner's inputs, once its stages are billed)."""
        self._read.clear()


@dataclass(frozen=True)
class Planner:
    asset: str
    stages: Callable[[PipelineSettings], list[tuple[str, StageSettings]]]  # (stage, its settings)
    runs: Callable[[Inputs, str, LLMClient], Iterable[PlannedRun] | str]  # one stage's runs, or why not computed


def _llm(*names: str) -> Callable[[PipelineSettings], list[tuple[str, StageSettings]]]:
    return lambda s: [(n, getattr(s.llm, n)) for n in names]


def _queries(inp: Inputs, stage: str, client: LLMClient) -> list[PlannedRun]:
    from mama_pipeline.queries import answer_model, query_requests, query_writer_template

    reasoning = inp.s.llm.query_writer.reasoning == "json_field"
    template = query_writer_template(inp.s.queries.max_words, reasoning)
    return [PlannedRun(template, answer_model(reasoning), query_requests(inp.table("sampled_chunks"), template))]


def _judge_runs(
    inp: Inputs, client: LLMClient, pairs: pl.DataFrame, queries: pl.DataFrame, stage: str = "judge"
) -> Iterable[PlannedRun]:
    """A judge's batches for the pairs without a stored label of this judge (the label store is asked), as one run
    over every pair batches them; the pairs are joined with their chunks a slice at a time."""
    from mama_pipeline.judging import RELEVANCE_JUDGE, hole_slices, output_model, pair_batches

    inp.require("corpus_chunks")
    model = output_model(getattr(inp.s.llm, stage).reasoning)
    size = inp.s.judging.batch_pairs
    return (
        PlannedRun(RELEVANCE_JUDGE, model, requests)
        for holes in _rebatched(hole_slices(client, inp.store, pairs, queries, model, SLICE_PAIRS), size)
        for _, requests in pair_batches(holes, size)
    )


def _rebatched(slices: Iterable[pl.DataFrame], size: int) -> Iterator[pl.DataFrame]:
    """The rows of ``slices``, in order, ``size`` at a time (the last batch the rest)."""
    held: list[pl.DataFrame] = []
    rows = 0
    for part in slices:
        while part.height:
            take = min(size - rows, part.height)
            held.append(part.head(take))
            rows += take
            part = part.slice(take)
            if rows == size:
                yield pl.concat(held)
                held, rows = [], 0
    if rows:
        yield pl.concat(held)


def _judged_labels(inp: Inputs, stage: str, client: LLMClient) -> Iterable[PlannedRun]:
    pairs = inp.table("pooled_pairs", columns=("query_id", "chunk_id"))
    queries = inp.table("generated_queries", columns=("query_id", "query_text"))
    if inp.s.judging.strategy == "adaptive":
        return _adaptive_runs(inp, client, pairs, queries)
    return _judge_runs(inp, client, pairs, queries)


def _adaptive_runs(inp: Inputs, client: LLMClient, pairs: pl.DataFrame, queries: pl.DataFrame) -> Iterable[PlannedRun]:
    """judging.strategy adaptive (sent by judged_set): the budget plus the remainder sample, at most the pairs
    without a stored label; which pairs the rounds choose depends on the answers, so a seeded uniform sample of
    those pairs, that many, prices them."""
    from mama_pipeline.judging import hole_slices, output_model

    inp.require("corpus_chunks")
    j = inp.s.judging
    model = output_model(inp.s.llm.judge.reasoning)
    holes = pl.concat(
        [pairs.select("query_id", "chunk_id").clear()]
        + [h.select("query_id", "chunk_id") for h in hole_slices(client, inp.store, pairs, queries, model, SLICE_PAIRS)]
    )
    budget = j.budget_pairs(pairs.height)
    asked = min(holes.height, budget + min(j.remainder_sample, pairs.height - budget))
    return _judge_runs(inp, client, holes.sample(asked, seed=j.seed), queries)


def _audit_judgments(inp: Inputs, stage: str, client: LLMClient) -> Iterable[PlannedRun]:
    pairs = inp.table("audit_pool", columns=("query_id", "chunk_id"))
    return _judge_runs(inp, client, pairs, inp.table("generated_queries", columns=("query_id", "query_text")))


def _reference_judgments(inp: Inputs, stage: str, client: LLMClient) -> Iterable[PlannedRun]:
    pilot = inp.table("judge_pilot_sample", columns=("query_id", "chunk_id"))
    return _judge_runs(inp, client, pilot, inp.table("generated_queries", columns=("query_id", "query_text")), stage)


def _classifier(inp: Inputs, stage: str, client: LLMClient) -> list[PlannedRun]:
    from mama_pipeline.mamabench import SCOPE_TEMPLATE, agreement_rows, pending_rows, scope_requests, verdict_model

    adapted = inp.table("mamabench_adapted")
    if stage == "classifier_reference":
        adapted = agreement_rows(adapted, inp.table("mamabench_scope_verdicts"), inp.s.mamabench)[1]
    model = verdict_model(getattr(inp.s.llm, stage).reasoning)
    return [PlannedRun(SCOPE_TEMPLATE, model, scope_requests(pending_rows(adapted)))]


def _rubric_harness(inp: Inputs, stage: str, client: LLMClient) -> list[PlannedRun]:
    from mama_pipeline.calibration import RUBRIC_JUDGE_PROMPT, RubricVerdict, judge_requests, sample_rows

    cfg = inp.s.calibration
    rows = sample_rows(inp.table("calibration_side_file"), cfg.harness_sample_size, cfg.harness_seed)
    return [PlannedRun(RUBRIC_JUDGE_PROMPT, RubricVerdict, judge_requests(rows))]


def _system_answers(inp: Inputs, stage: str, client: LLMClient) -> list[PlannedRun] | str:
    from mama_pipeline.systems import CONTEXT_SCHEMA, track_requests

    cfg = inp.s.systems.system(stage.split(":", 1)[1])
    items = inp.table("systems_items").filter(pl.col("track").is_in(cfg.tracks))
    if cfg.mode == "rag":
        return (
            f"{items.height} items; not computed: each prompt carries the chunks {cfg.retriever} retrieves, "
            "and the plan runs no retrieval"
        )
    no_context = pl.DataFrame(schema=CONTEXT_SCHEMA)
    return [
        PlannedRun(t, m, r)
        for t, m, r, _ in (track_requests(cfg, track, items, no_context) for track in cfg.tracks)
        if r
    ]


def _system_grades(inp: Inputs, stage: str, client: LLMClient) -> list[PlannedRun]:
    from mama_pipeline.calibration import RUBRIC_JUDGE_PROMPT, RubricVerdict
    from mama_pipeline.systems import (
        SHORT_ANSWER_GRADER_PROMPT,
        ShortAnswerGrade,
        rubric_requests,
        short_answer_requests,
    )

    items = inp.table("systems_items")
    runs = []
    for name in inp.s.systems.names:
        answers = inp.table("system_answers", partition=name)
        if stage == "answer_grader":
            runs.append(PlannedRun(SHORT_ANSWER_GRADER_PROMPT, ShortAnswerGrade, short_answer_requests(answers, items)))
        else:
            runs.append(
                PlannedRun(
                    RUBRIC_JUDGE_PROMPT,
                    RubricVerdict,
                    rubric_requests(answers, items, inp.table("mamabench_criteria")),
                )
            )
    return runs


def _rewrites(inp: Inputs, stage: str, client: LLMClient) -> list[PlannedRun] | str:
    if stage == "rewrite_gate":
        return "not computed: the gate is asked about the rewrites query_rewriter returns in the same step"
    from mama_pipeline.llm.client import LLMRequest
    from mama_pipeline.robustness import rewrite_model, rewrite_selection, rewrite_template, variant_id

    r = inp.s.robustness
    kinds = [k for k in r.kinds if k.rewrite]
    queries = inp.table("generated_queries")
    selected = rewrite_selection(queries, r.rewrite_queries, r.seed) if kinds else queries.clear()
    texts = sorted(selected.select("query_id", "query_text").iter_rows())
    reasoning = inp.s.llm.query_rewriter.reasoning == "json_field"
    runs = []
    for kind in kinds:
        template = rewrite_template(kind.rewrite, r.max_rewrite_words, reasoning)
        runs.append(
            PlannedRun(
                template,
                rewrite_model(reasoning),
                [LLMRequest(variant_id(q, kind.name), template.render(query=t)) for q, t in texts],
            )
        )
    return runs


def _variant_labels(inp: Inputs, stage: str, client: LLMClient) -> Iterable[PlannedRun]:
    from mama_pipeline.robustness import StoredHoles

    variants = inp.table("query_variants")
    for table in ("rankings", "variant_rankings", "judgments"):
        if not inp.store.table_exists(table):
            raise NotBuilt(table)
    queries = inp.table("generated_queries", columns=("query_id", "query_text"))
    inp.require("corpus_chunks")
    holes = StoredHoles(inp.s, inp.store, variants, None)  # the clean top-k's holes are judged too, as in the step
    return _hole_runs(inp, client, holes, queries)


def _hole_runs(inp: Inputs, client: LLMClient, holes: StoredHoles, queries: pl.DataFrame) -> Iterator[PlannedRun]:
    """The judge's batches for the holes, a slice of parents at a time as the step asks them."""
    with holes:
        for pairs in holes.pairs():
            yield from _judge_runs(inp, client, pairs, queries)


def _multipassage_questions(inp: Inputs, stage: str, client: LLMClient) -> list[PlannedRun] | str:
    if stage == inp.s.multipassage.verifier_stage:  # also the writer when one stage does both: not split here
        return "not computed: the verifier is asked about the questions the writer returns in the same step"
    from mama_pipeline.multipassage import chunk_lookup, writer_model, writer_requests, writer_template

    mp = inp.s.multipassage
    sets = inp.table("multipassage_candidates", where=("status", ("sampled",))).sort("set_id")
    lookup = chunk_lookup(*_passages(inp, sets["chunk_ids"].explode()))
    reasoning = getattr(inp.s.llm, stage).reasoning == "json_field"
    template = writer_template(mp.max_words, reasoning)
    return [
        PlannedRun(template, writer_model(reasoning, size), writer_requests(part, lookup, template))
        for (size,), part in sets.sort("size", "set_id").group_by("size", maintain_order=True)
    ]


def _multipassage_labels(inp: Inputs, stage: str, client: LLMClient) -> Iterable[PlannedRun]:
    questions = inp.table("multipassage_questions").select("query_id", "query_text")
    return _judge_runs(inp, client, inp.table("multipassage_pool"), questions)


def _multipassage_fact_labels(inp: Inputs, stage: str, client: LLMClient) -> list[PlannedRun]:
    from mama_pipeline.multipassage import chunk_lookup, fact_judge_template, fact_runs

    pool = inp.table("multipassage_pool")
    reasoning = inp.s.llm.judge.reasoning == "json_field"
    template = fact_judge_template(reasoning)
    lookup = chunk_lookup(*_passages(inp, pool["chunk_id"]))
    _, runs = fact_runs(template, reasoning, pool, inp.table("multipassage_questions"), lookup)
    return [PlannedRun(template, model, requests) for _, _, model, requests in runs]


def _passages(inp: Inputs, chunk_ids: pl.Series) -> tuple[pl.DataFrame, set[str]]:
    """(the stored chunks named by ``chunk_ids``, in corpus order, the ids): what ``chunk_lookup`` reads."""
    ids = set(chunk_ids.drop_nulls().to_list())
    columns = ("chunk_id", "source", "breadcrumb", "text")
    return inp.table("corpus_chunks", columns=columns, where=("chunk_id", tuple(sorted(ids)))), ids


PLANNERS = [
    Planner("mamabench_scope_verdicts", _llm("classifier"), _classifier),
    Planner("mamabench_agreement", _llm("classifier_reference"), _classifier),
    Planner("calibration_judge_labels", _llm("rubric_judge"), _rubric_harness),
    Planner("generated_queries", _llm("query_writer"), _queries),
    Planner("judged_labels", _llm("judge"), _judged_labels),
    Planner("audit_judgments", _llm("judge"), _audit_judgments),
    Planner("reference_judgments", lambda s: _llm(*reference_judge_stages(s.llm))(s), _reference_judgments),
    Planner("query_variants", _llm("query_rewriter", "rewrite_gate"), _rewrites),
    Planner("variant_labels", _llm("judge"), _variant_labels),
    Planner(
        "multipassage_questions",
        lambda s: [
            (n, getattr(s.llm, n)) for n in dict.fromkeys((s.multipassage.writer_stage, s.multipassage.verifier_stage))
        ],
        _multipassage_questions,
    ),
    Planner("multipassage_labels", _llm("judge"), _multipassage_labels),
    Planner("multipassage_fact_labels", _llm("judge"), _multipassage_fact_labels),
    Planner("system_answers", lambda s: [(f"system:{e.name}", e) for e in s.systems.entries], _system_answers),
    Planner(
        "system_grades", lambda s: _llm("answer_grader", "rubric_judge")(s) if s.systems.entries else [], _system_grades
    ),
]


def stage_bills(
    planner: Planner,
    inp: Inputs,
    llm: LLMResource,
    latency_s: float | None = None,
    rebuilt: Iterable[str] = (),
    raw: RawInputs | None = None,
    rate_per_server: float | None = None,
    exact: bool = True,
) -> list[Bill]:
    """The bill of each stage ``planner``'s asset asks, sending nothing: its bound from the configuration and
    ``raw`` inputs (None: no bound), and the exact plan from the store when its inputs are there (no store
    file: nothing is opened or created). ``latency_s``: the latency to price stages with no recorded one;
    ``rebuilt``: the asset's inputs that the same selection rebuilds first; ``rate_per_server``: requests a
    second per server, to time the bound with; ``exact``: False leaves the store alone (the bound only)."""
    rebuilt = sorted(rebuilt)
    stale = (
        f"made from the stored inputs, which this selection rebuilds first ({', '.join(rebuilt)})" if rebuilt else ""
    )
    first = "; this selection builds them first: plan again after that step" if rebuilt else ""
    out = []
    for stage, cfg in planner.stages(inp.s):
        slots = slots_of(cfg, inp.s.llm.embedded_server.n_parallel)
        if not exact:
            plan = StagePlan(planner.asset, stage, cfg, None, "exact plan not asked for")
            b = bill(plan, None, latency_s, slots, model=cfg.model or inp.s.llm.embedded_server.model_alias)
        elif inp.built:
            with llm.client_for(stage, cfg) as client:
                b = bill(_plan(planner, inp, stage, cfg, client, stale, first), client, latency_s, slots)
        else:
            plan = _plan(planner, inp, stage, cfg, None, stale, first)
            b = bill(plan, None, latency_s, slots, model=cfg.model or inp.s.llm.embedded_server.model_alias)
        if raw is not None:
            bound = BOUNDS[planner.asset](raw, stage)
            seconds = bound_seconds(bound.requests, b.servers, slots, b.latency_s, rate_per_server)
            tokens, tokens_basis = prompt_token_bound(planner.asset, raw, stage, bound.requests)
            b = replace(
                b,
                bound=bound.requests,
                bound_basis=bound.basis,
                bound_s=seconds,
                bound_tokens=tokens,
                bound_tokens_basis=tokens_basis,
            )
        out.append(b)
    inp.release()  # the next planner reads its own inputs
    return out


def _plan(
    planner: Planner, inp: Inputs, stage: str, cfg: StageSettings, client: LLMClient | None, stale: str, first: str
) -> StagePlan:
    try:
        runs = planner.runs(inp, stage, client)
    except NotBuilt as exc:
        runs = f"{NOT_BUILT}: {exc}{first}"
    if isinstance(runs, str):
        return StagePlan(planner.asset, stage, cfg, None, runs)
    return StagePlan(planner.asset, stage, cfg, runs, stale)

"""Upper bounds on the requests each LLM-calling asset sends a stage, from the configuration and the raw inputs.

Nothing here reads the store: a bound holds before anything is built. Each asset has one bound function
(:data:`BOUNDS`, asset -> function of (the raw inputs, the stage)), which multiplies what the raw inputs and the
settings fix (the chunks the corpus sampling draws from the bundle, the mamabench rows the adapters keep for
the classifier or the answering systems, the pool depth x the pooled retrievers + the seed chunk, the audit's
queries, the pilot, the hole budget, the track sizes) and says how (``basis``). A bound counts every request as
new: cached answers and stored labels only lower what is sent. Where an input cannot be read without building
or downloading it, the bound is None with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import polars as pl

from mama_pipeline.settings import PipelineSettings


@dataclass(frozen=True)
class Bound:
    requests: int | None  # None: not computed (basis says why)
    basis: str
    prompt_tokens: int | None = None  # of those requests (mama_pipeline.plan._prompt_bounds); None: not computed
    tokens_basis: str = ""


class Unbounded(Exception):
    """A raw input the bound needs cannot be read here (a hub file not downloaded, a missing file)."""


class RawInputs:
    """The raw inputs a bound reads (the corpus bundle, the upstream pools, the meta-evaluation file), each read
    once; local files only, nothing downloaded."""

    def __init__(self, s: PipelineSettings):
        self.s = s

    @property
    def config_dir(self):
        from pathlib import Path

        return Path(self.s.config_dir)

    @cached_property
    def _corpus(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        """(the bundle's chunks, the chunks the sampling draws)."""
        from pathlib import Path

        from mama_pipeline.corpus import load_bundle, resolve_bundle, sample_chunks

        c = self.s.corpus
        if c.bundle.startswith("hf://"):
            raise Unbounded(f"corpus bundle {c.bundle} is on the hub: plan downloads nothing")
        path = resolve_bundle(c.bundle, Path(self.s.config_dir)).path
        if not path.exists():
            raise Unbounded(f"corpus bundle {path} does not exist")
        chunks = load_bundle(path, canonical=c.canonical_text, on_bad=c.on_bad_chunk).chunks
        return chunks, sample_chunks(chunks, c).sampled

    @property
    def chunk_frame(self) -> pl.DataFrame:
        return self._corpus[0]

    @property
    def sampled_frame(self) -> pl.DataFrame:
        return self._corpus[1]

    @property
    def chunks(self) -> int:
        return self.chunk_frame.height

    @property
    def sampled(self) -> int:
        """Chunks the corpus sampling draws: the query writer's requests, and a bound on the queries."""
        return self.sampled_frame.height

    @cached_property
    def adapted(self) -> pl.DataFrame:
        """Every upstream row of the nine pools as the adapters leave it (pool, status, scope_mode, criteria)."""
        from mama_pipeline.mamabench import POOLS, adapt_pool, load_pool

        frames = []
        for pool in POOLS:
            loc = getattr(self.s.mamabench.sources, pool.name)
            if loc.repo_id is not None:
                raise Unbounded(f"mamabench pool {pool.name} is on the hub ({loc.repo_id}): plan downloads nothing")
            raw = load_pool(pool, loc, self.s.resolve).rows
            frames.append(adapt_pool(pool.name, raw, self.s.mamabench))
        return pl.concat(frames).with_columns(
            track=pl.col("pool").replace_strict({p.name: p.track for p in POOLS}, return_dtype=pl.String)
        )

    @cached_property
    def meta_eval(self) -> pl.DataFrame:
        """The meta-evaluation file's rows."""
        from mama_pipeline.calibration import locate, read_meta_eval

        source = self.s.calibration.meta_eval
        if source.repo_id is not None:
            raise Unbounded(f"meta-evaluation file on the hub ({source.repo_id}): plan downloads nothing")
        return read_meta_eval(locate(source, self.config_dir).path)

    @property
    def meta_eval_rows(self) -> int:
        return self.meta_eval.height

    @property
    def queries(self) -> int:
        """At most one query per sampled chunk (the answerability gate keeps some)."""
        return self.sampled

    def pool_per_query(self, depth: int, retrievers: int, seeds: int) -> int:
        """Distinct chunks a query's pool can hold: each retriever's top ``depth`` and its seed chunks, at most
        the bundle's chunks."""
        return min(depth * retrievers + seeds, self.chunks)

    def track_items(self, track: str) -> pl.DataFrame:
        """Upstream rows that can become items of ``track`` (kept, or pending the classifier)."""
        return self.adapted.filter(pl.col("track") == track, pl.col("status").is_in(["kept", "pending"]))


def _guard(fn: Callable[[RawInputs, str], Bound]) -> Callable[[RawInputs, str], Bound]:
    """A bound whose raw input is missing, on the hub or bad is None with the one-line reason."""

    def bound(raw: RawInputs, stage: str) -> Bound:
        from mama_pipeline.common.input_errors import InputError, one_line

        try:
            return fn(raw, stage)
        except (Unbounded, InputError, OSError) as exc:
            return Bound(None, f"bound not computed: {one_line(str(exc))}")

    bound.__name__ = fn.__name__
    return bound


@_guard
def classifier_bound(raw: RawInputs, stage: str) -> Bound:
    pending = raw.adapted.filter(pl.col("status") == "pending", pl.col("scope_mode").is_not_null())
    return Bound(pending.height, f"{pending.height} upstream rows the adapters leave for the classifier")


@_guard
def classifier_reference_bound(raw: RawInputs, stage: str) -> Bound:
    m = raw.s.mamabench
    rows = raw.adapted.filter(
        pl.col("status") == "pending", pl.col("scope_mode").is_not_null(), pl.col("pool").is_in(m.agreement_pools)
    ).height
    n = min(rows, m.agreement_sample_size) if m.agreement_sample_size else rows
    return Bound(n, f"agreement sample {m.agreement_sample_size or 'all'} of {rows} classified rows of the pools")


@_guard
def calibration_bound(raw: RawInputs, stage: str) -> Bound:
    size, rows = raw.s.calibration.harness_sample_size, raw.meta_eval_rows
    n = min(size, rows) if size else rows
    return Bound(n, f"harness sample {size or 'all'} of {rows} meta-evaluation rows")


@_guard
def query_writer_bound(raw: RawInputs, stage: str) -> Bound:
    return Bound(raw.sampled, f"{raw.sampled} chunks the sampling draws from the bundle's {raw.chunks}")


def _judged_pairs(raw: RawInputs) -> tuple[int, str]:
    r = raw.s.retrieval
    per = raw.pool_per_query(r.pool_depth, len(r.pooled), int(r.include_seed_chunk))
    return raw.queries * per, (
        f"{raw.queries} queries x {per} pairs (top {r.pool_depth} of {len(r.pooled)} retrievers"
        f"{' + the seed chunk' if r.include_seed_chunk else ''}, at most the {raw.chunks} chunks)"
    )


@_guard
def judged_labels_bound(raw: RawInputs, stage: str) -> Bound:
    """The pool bound; under ``judging.strategy: adaptive``, its budget plus the remainder sample (both grow with the
    pool, so the pool's bound bounds them)."""
    pairs, basis = _judged_pairs(raw)
    j = raw.s.judging
    if j.strategy != "adaptive":
        return Bound(pairs, basis)
    budget = j.budget_pairs(pairs)
    rest = min(j.remainder_sample, pairs - budget)
    return Bound(budget + rest, f"adaptive: budget {budget} + remainder sample {rest} of a pool of at most {basis}")


@_guard
def audit_bound(raw: RawInputs, stage: str) -> Bound:
    """The audit's pairs outside the main pool (those inside have the judge's label): per audited retriever, its
    ranks below the pool depth (all of its top ``depth`` when it is not pooled)."""
    a, r = raw.s.retrieval.audit, raw.s.retrieval
    queries = min(a.n_queries, raw.queries)
    beyond = [max(a.depth - r.pool_depth, 0) if name in r.pooled else a.depth for name in r.audited]
    per = min(sum(beyond), raw.chunks)
    return Bound(
        queries * per,
        f"{queries} audit queries x {per} pairs (ranks {r.pool_depth + 1}-{a.depth} of {len(r.audited)} audited "
        "retrievers outside the main pool)",
    )


@_guard
def reference_bound(raw: RawInputs, stage: str) -> Bound:
    pairs, _ = _judged_pairs(raw)
    n = min(raw.s.judging.pilot_size, pairs)
    return Bound(n, f"pilot of {raw.s.judging.pilot_size} pairs")


def _rewrites(raw: RawInputs) -> tuple[int, int, int]:
    r = raw.s.robustness
    kinds = sum(1 for k in r.kinds if k.rewrite)
    queries = raw.queries if r.rewrite_queries is None else min(r.rewrite_queries, raw.queries)
    return queries * kinds, queries, kinds


@_guard
def rewrite_bound(raw: RawInputs, stage: str) -> Bound:
    n, queries, kinds = _rewrites(raw)
    what = "the rewriter" if stage == "query_rewriter" else "the gate, at most one per rewrite"
    return Bound(n, f"{queries} queries x {kinds} rewrite kinds ({what})")


@_guard
def variant_labels_bound(raw: RawInputs, stage: str) -> Bound:
    from mama_pipeline.robustness import judge_depth, retriever_order

    r = raw.s.robustness
    names, _ = retriever_order(raw.s.retrieval, r.retrievers)
    k = judge_depth(raw.s)
    per = min(len(names) * k * (len(r.kinds) + 1), raw.chunks)
    holes = raw.queries * per
    basis = f"{raw.queries} queries x {per} pairs (top {k} of {len(names)} retrievers, clean + {len(r.kinds)} kinds)"
    if r.max_hole_pairs is not None and r.max_hole_pairs < holes:
        return Bound(r.max_hole_pairs, f"max_hole_pairs {r.max_hole_pairs} (holes at most {holes}: {basis})")
    return Bound(holes, basis)


def _sets(raw: RawInputs) -> int:
    tiers = raw.s.corpus.tiers
    return sum(n * len(tiers[t].sources) for t, n in raw.s.multipassage.sets_per_source.items())


@_guard
def multipassage_questions_bound(raw: RawInputs, stage: str) -> Bound:
    mp = raw.s.multipassage
    sets, size = _sets(raw), max(mp.set_sizes)
    writer = (sets, f"{sets} sets (sets_per_source x the tiers' sources)")
    verifier = (
        sets * (2 * size + 1),
        f"{sets} sets x {2 * size + 1} (each of {size} chunks alone and with its facts, then the set)",
    )
    if mp.writer_stage == mp.verifier_stage:
        return Bound(writer[0] + verifier[0], f"writer {writer[1]}; verifier {verifier[1]}")
    return Bound(*(writer if stage == mp.writer_stage else verifier))


@_guard
def multipassage_pairs_bound(raw: RawInputs, stage: str) -> Bound:
    mp = raw.s.multipassage
    sets, size = _sets(raw), max(mp.set_sizes)
    retrievers = len(mp.pool_retrievers or raw.s.retrieval.pooled)
    per = raw.pool_per_query(mp.pool_depth, retrievers, size)
    return Bound(
        sets * per,
        f"{sets} questions x {per} pairs (top {mp.pool_depth} of {retrievers} retrievers + the set's {size} chunks)",
    )


def _track_items(raw: RawInputs, track: str) -> int:
    n = raw.track_items(track).height
    per = raw.s.systems.items_per_track
    return min(n, per) if per else n


@_guard
def system_answers_bound(raw: RawInputs, stage: str) -> Bound:
    cfg = raw.s.systems.system(stage.split(":", 1)[1])
    counts = {t: _track_items(raw, t) for t in cfg.tracks}
    return Bound(sum(counts.values()), "items " + ", ".join(f"{t} {n}" for t, n in counts.items()))


def _rubric_criteria(raw: RawInputs) -> tuple[int, str]:
    """The most criteria the rubric items of the systems' sample can have, summed."""
    s = raw.s.systems
    n = [len(json.loads(c or "[]")) for c in raw.track_items("rubric")["criteria_json"].to_list()]
    if s.max_rubric_criteria:
        n = [c for c in n if c <= s.max_rubric_criteria]
    n.sort(reverse=True)
    picked = n[: s.items_per_track] if s.items_per_track else n
    return sum(picked), f"{len(picked)} rubric items with {sum(picked)} criteria at most"


@_guard
def system_grades_bound(raw: RawInputs, stage: str) -> Bound:
    entries = raw.s.systems.entries
    if stage == "answer_grader":
        graded = [e.name for e in entries if "short_answer" in e.tracks]
        n = _track_items(raw, "short_answer")
        return Bound(n * len(graded), f"{n} short-answer items x {len(graded)} systems")
    graded = [e.name for e in entries if "rubric" in e.tracks]
    criteria, basis = _rubric_criteria(raw)
    return Bound(criteria * len(graded), f"{basis} x {len(graded)} systems")


BOUNDS: dict[str, Callable[[RawInputs, str], Bound]] = {
    "mamabench_scope_verdicts": classifier_bound,
    "mamabench_agreement": classifier_reference_bound,
    "calibration_judge_labels": calibration_bound,
    "generated_queries": query_writer_bound,
    "judged_labels": judged_labels_bound,
    "audit_judgments": audit_bound,
    "reference_judgments": reference_bound,
    "query_variants": rewrite_bound,
    "variant_labels": variant_labels_bound,
    "multipassage_questions": multipassage_questions_bound,
    "multipassage_labels": multipassage_pairs_bound,
    "multipassage_fact_labels": multipassage_pairs_bound,
    "system_answers": system_answers_bound,
    "system_grades": system_grades_bound,
}

"""The end-of-run summary: what each stage produced, the scoreboard's top lines, where results are.

Lines come from the DuckDB store and the Dagster instance, never from code of the
areas, so any asset group counts. Core areas have their lines in :data:`AREA_LINES`;
every group of the asset graph without lines of its own gets a generic one: its
assets and row counts.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import polars as pl

import mama_pipeline
from mama_pipeline.demo._runner import RunTally, unchanged_count

WIDTH = 14  # area name column


@dataclass
class SummaryContext:
    """What a summary line may look at."""

    settings: object  # PipelineSettings
    store: object  # Store
    instance: dg.DagsterInstance
    graph: object  # the resolved asset graph
    started_at: datetime  # wall-clock start of the run (UTC, naive: as the store's created_at)

    def table(self, name: str) -> pl.DataFrame | None:
        return self.store.read_table(name) if self.store.table_exists(name) else None

    def materialised(self, keys: list[dg.AssetKey]) -> dict[dg.AssetKey, tuple[str | None, int | None]]:
        """For each asset, when it was last materialised ("this run", "earlier", None: never), and the row count
        its IO manager recorded then (one query of the instance for all of them)."""
        out: dict[dg.AssetKey, tuple[str | None, int | None]] = {}
        for key, event in self.instance.get_latest_materialization_events(keys).items():
            if event is None or event.asset_materialization is None:
                out[key] = (None, None)
                continue
            value = event.asset_materialization.metadata.get("rows")
            at = datetime.fromtimestamp(event.timestamp, UTC).replace(tzinfo=None)
            out[key] = ("this run" if at >= self.started_at else "earlier", None if value is None else int(value.value))
        return out


def mamabench_lines(ctx: SummaryContext) -> list[str]:
    y = ctx.table("mamabench_yield")
    if y is None:
        return []
    kept = ", ".join(f"{r['pool']} {r['kept']}/{r['upstream_rows']}" for r in y.sort("pool").iter_rows(named=True))
    return [
        f"items kept per pool (kept/upstream): {kept}",
        f"{int(y['kept'].sum())} items kept, {int(y['out_of_scope'].sum())} out of scope, "
        f"{int(y['refused'].sum())} refused, {int(y['unclassified'].sum())} unclassified",
    ]


def corpus_lines(ctx: SummaryContext) -> list[str]:
    chunks, sampled, rejected = (
        ctx.table("corpus_chunks"),
        ctx.table("sampled_chunks"),
        ctx.table("sampling_rejections"),
    )
    if chunks is None or sampled is None:
        return []
    tiers = ", ".join(f"{t} {n}" for t, n in sampled.group_by("tier").len().sort("tier").iter_rows())
    return [
        f"{chunks.height} chunks in the bundle, {sampled.height} sampled ({tiers}), "
        f"{0 if rejected is None else rejected.height} rejected by the sampling rules"
    ]


def queries_lines(ctx: SummaryContext) -> list[str]:
    gate = ctx.table("query_gate_decisions")
    if gate is None:
        return []
    status = ", ".join(f"{s} {n}" for s, n in gate.group_by("status").len().sort("status").iter_rows())
    return [f"{gate.height} chunks put to the answerability gate: {status}"]


def retrieval_lines(ctx: SummaryContext) -> list[str]:
    pool, rankings = ctx.table("pooled_pairs"), ctx.table("rankings")
    if pool is None or rankings is None:
        return []
    names = ", ".join(sorted(rankings["retriever"].unique().to_list()))
    return [f"rankings of {names}; {pool.height} pairs pooled for {pool['query_id'].n_unique()} queries"]


def judging_lines(ctx: SummaryContext) -> list[str]:
    judgments, failures = ctx.table("judgments"), ctx.table("judging_failures")
    if judgments is None:
        return []
    scores = ", ".join(f"{s}: {n}" for s, n in judgments.group_by("score").len().sort("score").iter_rows())
    return [f"{judgments.height} pairs judged ({0 if failures is None else failures.height} failed); labels {scores}"]


def evaluation_lines(ctx: SummaryContext) -> list[str]:
    board = ctx.table("scoreboard")
    if board is None:
        return []
    from mama_pipeline.evaluation import wide_scoreboard

    wide = wide_scoreboard(board)
    headline = [c for c in wide.columns if c.startswith(("HR@5", "MRR", "nDCG@10"))][:4]
    n = int(board.filter(pl.col("tier") == "all")["n_queries"].max() or 0)
    lines = [f"scoreboard on {n} queries (top lines):", "  " + "  ".join(f"{c:>14}" for c in ["retriever", *headline])]
    first = headline[0] if headline else None
    top = wide.sort(first, descending=True) if first else wide
    for row in top.head(5).iter_rows(named=True):
        lines.append("  " + "  ".join([f"{row['retriever']:>14}", *(f"{row[c]:>14.3f}" for c in headline)]))
    return lines


def llm_lines(ctx: SummaryContext) -> list[str]:
    """LLM requests answered since the run started, per stage (the demo's slowest part)."""
    if not ctx.store.table_exists("llm_responses"):
        return []
    new = ctx.store.query(
        "SELECT stage, model, count(*) AS n, sum(completion_tokens) AS tokens, sum(latency_s) AS seconds "
        "FROM llm_responses WHERE created_at >= ? GROUP BY stage, model ORDER BY stage",
        [ctx.started_at],
    )
    total = int(new["n"].sum()) if new.height else 0
    failed = (
        ctx.store.query("SELECT count(*) AS n FROM llm_failures WHERE created_at >= ?", [ctx.started_at])
        if ctx.store.table_exists("llm_failures")
        else None
    )
    per_stage = ", ".join(f"{r['stage']} {r['n']}" for r in new.iter_rows(named=True)) or "none (all cached)"
    models = ", ".join(sorted(set(new["model"].to_list()))) if new.height else ""
    line = f"{total} requests answered this run ({per_stage})"
    if failed is not None and failed["n"][0]:
        line += f", {failed['n'][0]} failed"
    lines = [line + (f"; model {models}" if models else "")]
    embedded = ctx.store.query(
        "SELECT stage, count(*) AS n FROM llm_responses WHERE endpoint LIKE 'embedded:%' GROUP BY stage ORDER BY stage"
    )
    if embedded.height:
        answers = ", ".join(f"{r['stage']} {r['n']}" for r in embedded.iter_rows(named=True))
        configured = ", ".join(ctx.settings.embedded_stages()) or "none now"
        lines.append(
            f"EMBEDDED MODEL: the store holds answers of the embedded SmolLM2-135M smoke-test model ({answers}; "
            f"embedded: true in this configuration: {configured}): the labels, queries, verdicts and grades made "
            "from them exercise the pipeline and are not meaningful; set base_urls and model for real ones"
        )
    return lines


AREA_LINES: dict[str, Callable[[SummaryContext], list[str]]] = {
    "llm": llm_lines,
    "mamabench": mamabench_lines,
    "corpus": corpus_lines,
    "queries": queries_lines,
    "retrieval": retrieval_lines,
    "judging": judging_lines,
    "evaluation": evaluation_lines,
}


def _groups(ctx: SummaryContext) -> dict[str, list[tuple[str, str | None, int | None]]]:
    """Each asset group: (asset, when last materialised, rows) of its assets."""
    groups: dict[str, list[tuple[str, str | None, int | None]]] = {}
    keys = sorted(ctx.graph.materializable_asset_keys, key=lambda k: k.to_user_string())
    when = ctx.materialised(keys)
    for key in keys:
        groups.setdefault(ctx.graph.get(key).group_name or "default", []).append(
            (key.to_user_string(), *when.get(key, (None, None)))
        )
    return groups


def group_lines(groups: dict[str, list[tuple[str, str | None, int | None]]], covered: set[str]) -> dict[str, list[str]]:
    """For each asset group without lines of its own: its assets materialised this run (and their row counts),
    and how many hold an earlier run's output."""
    out = {}
    for group, assets in sorted(groups.items()):
        if group in covered:
            continue
        now = [
            name + (f" {rows} rows" if rows is not None else "") for name, when, rows in assets if when == "this run"
        ]
        earlier = sum(when == "earlier" for _, when, _ in assets)
        out[group] = [
            f"{len(now)} of {len(assets)} assets materialised this run"
            + (": " + ", ".join(now) if now else "")
            + (f"; {earlier} from earlier runs" if earlier else "")
        ]
    return out


def area_lines(ctx: SummaryContext) -> dict[str, list[str]]:
    """Lines per area: the areas of ``AREA_LINES``, then every other asset group. An area that is an asset
    group none of whose assets this run materialised says its lines describe earlier runs' tables."""
    groups = _groups(ctx) if ctx.graph is not None else {}
    out: dict[str, list[str]] = {}
    for area, fn in AREA_LINES.items():
        try:
            lines = fn(ctx)
        except Exception as exc:  # noqa: BLE001 - a summary line never hides the run's own outcome
            lines = [f"(summary unavailable: {type(exc).__name__}: {exc})"]
        if lines and area in groups and all(when != "this run" for _, when, _ in groups[area]):
            lines = [f"(not materialised this run; the store holds an earlier run's) {lines[0]}", *lines[1:]]
        if lines:
            out[area] = lines
    out.update(group_lines(groups, set(out)))
    return out


def result_paths(data: Path) -> dict[str, Path]:
    """Release folders and reports that exist under the data directory."""
    found = {}
    for folder in sorted((data / "releases").glob("*/*")):
        found[f"release {folder.parent.name} {folder.name}"] = folder
    if (data / "reports" / "index.html").exists():
        found["reports index"] = data / "reports" / "index.html"
    for report in sorted((data / "reports").glob("*/*.html")):
        several = len(list(report.parent.glob("*.html"))) > 1  # e.g. leaderboard/: one page per benchmark
        found[f"report {report.parent.name}" + (f" {report.stem}" if several else "")] = report
    return found


def ui_command(home: Path, config: Path) -> str:
    """The one command that opens the Dagster UI on this run's instance and configuration."""
    repo = Path(mama_pipeline.__file__).resolve().parents[1]
    return (
        f"cd {shlex.quote(str(repo))} && DAGSTER_HOME={shlex.quote(str(home))} "
        f"MAMA_CONFIG={shlex.quote(str(config))} .venv/bin/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000"
    )


def render(
    tally: RunTally, seconds: float, areas: dict[str, list[str]], paths: dict[str, Path], db: Path, log: Path, ui: str
) -> str:
    """The summary text."""
    outcome = "finished" if not tally.failed else "FAILED"
    failed_steps = [s.label + (f" ({s.reason})" if s.reason else "") for s in tally.steps if not s.ok]
    lines = [
        f"mama_pipeline {outcome} in {seconds:.0f} s: {tally.runs} runs, {len(tally.steps)} steps, "
        f"{tally.materializations} materialisations, {tally.checks_passed} checks passed, "
        f"{len(tally.checks_failed)} failed, {len(tally.checks_warned)} warnings"
    ]
    if failed_steps:
        lines.append(f"  failed steps: {'; '.join(failed_steps)}")
    if tally.skipped:
        lines.append(f"  skipped because of a failure: {'; '.join(tally.skipped)}")
    if tally.unchanged:
        lines.append(f"  {unchanged_count(len(tally.unchanged))}")
    if tally.checks_failed:
        lines.append(f"  failed checks: {', '.join(tally.checks_failed)}")
    if tally.checks_warned:
        lines.append(
            f"  warnings (checks that list what went wrong without stopping the run; their metadata in "
            f"the UI names it): {', '.join(tally.checks_warned)}"
        )
    for area, area_text in areas.items():
        for i, line in enumerate(area_text):
            lines.append(f"  {(area if i == 0 else ''):<{WIDTH}}{line}")
    lines.append("")
    lines.append(f"  {'DuckDB store':<{WIDTH}}{db}")
    for label, path in paths.items():
        lines.append(f"  {label}: {path}")
    lines.append(f"  {'Dagster log':<{WIDTH}}{log}")
    lines.append("  Open the Dagster UI on this instance:")
    lines.append(f"    {ui}")
    return "\n".join(lines)

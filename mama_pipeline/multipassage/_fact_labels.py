"""Fact labels of the track: for every pooled (question, chunk) pair, which of the question's facts the chunk states.

One request per pair (the question, its numbered facts, the chunk), through the shared
cached client, with an answer schema per number of facts (fact numbers 1..n only), so
a re-run asks nothing that was answered before. Every pair ends ``labelled`` with the
numbers of the facts stated (possibly none) or ``failed`` with its reason; a failed
answer never becomes a label.
"""

from __future__ import annotations

import polars as pl

from mama_pipeline.llm.client import LLMClient, LLMRequest, RunReport
from mama_pipeline.llm.prompt_template import PromptTemplate
from mama_pipeline.multipassage._multipassage_prompts import facts_stated_model, render_facts, render_passages
from mama_pipeline.store.table_schema import table_schema

FACT_LABEL_SCHEMA = table_schema("multipassage_fact_labels")


def fact_runs(
    template: PromptTemplate,
    reasoning_field: bool,
    pool: pl.DataFrame,
    questions: pl.DataFrame,
    chunks: dict[str, dict],
) -> tuple[pl.DataFrame, list[tuple[int, list[dict], type, list[LLMRequest]]]]:
    """The pairs that cannot be asked (unknown question or chunk), and the runs of the others: (number of facts,
    the pairs' records, the answer model, the requests), one per number of facts."""
    pairs = (
        pool.select("query_id", "chunk_id", pl.col("is_seed").alias("required_piece"))
        .join(questions.select("query_id", "query_text", "facts"), on="query_id", how="left")
        .sort("query_id", "chunk_id")
    )
    unknown = pairs.filter(pl.col("facts").is_null() | ~pl.col("chunk_id").is_in(list(chunks)))
    asked = pairs.join(unknown.select("query_id", "chunk_id"), on=["query_id", "chunk_id"], how="anti")
    runs = []
    for (n,), part in (
        asked.with_columns(n=pl.col("facts").list.len())
        .sort("n", "query_id", "chunk_id")
        .group_by("n", maintain_order=True)
    ):
        records = part.to_dicts()
        requests = [
            LLMRequest(
                f"{r['query_id']}|{r['chunk_id']}",
                template.render(
                    question=r["query_text"],
                    facts=render_facts(r["facts"]),
                    passages=render_passages([chunks[r["chunk_id"]]]),
                ),
            )
            for r in records
        ]
        runs.append((n, records, facts_stated_model(reasoning_field, n), requests))
    return unknown, runs


def label_facts(
    client: LLMClient,
    template: PromptTemplate,
    reasoning_field: bool,
    pool: pl.DataFrame,
    questions: pl.DataFrame,
    chunks: dict[str, dict],
) -> tuple[pl.DataFrame, dict[int, RunReport]]:
    """Fact labels of every pair of ``pool`` (query_id, chunk_id, is_seed), one client call per number of facts.

    ``questions``: query_id, query_text, facts; ``chunks``: chunk id -> source, section, text.
    """
    unknown, runs = fact_runs(template, reasoning_field, pool, questions, chunks)
    rows, reports = [], {}
    for q, c, piece, facts in unknown.select("query_id", "chunk_id", "required_piece", "facts").iter_rows():
        why = "query_id not in the questions table" if facts is None else "chunk_id not in the current corpus"
        rows.append(_row(q, c, piece, "failed", why, None, client.model, template.hash))
    client.check_budget((template, model, requests) for _, _, model, requests in runs)  # all, before the first
    for n, records, model, requests in runs:
        report = client.run(template, model, requests)
        reports[n] = report
        for r, res in zip(records, report.results):
            if res.ok:
                rows.append(
                    _row(
                        r["query_id"],
                        r["chunk_id"],
                        r["required_piece"],
                        "labelled",
                        None,
                        sorted(set(res.value["facts"])),
                        client.model,
                        template.hash,
                    )
                )
            else:
                rows.append(
                    _row(
                        r["query_id"],
                        r["chunk_id"],
                        r["required_piece"],
                        "failed",
                        f"{res.status}: {res.error}",
                        None,
                        client.model,
                        template.hash,
                    )
                )
    return pl.DataFrame(rows, schema=FACT_LABEL_SCHEMA).sort("query_id", "chunk_id"), reports


def _row(q, c, piece, status, reason, facts, model, prompt_hash) -> dict:
    return {
        "query_id": q,
        "chunk_id": c,
        "required_piece": piece,
        "status": status,
        "failure_reason": reason,
        "facts": facts,
        "judge_model": model,
        "prompt_hash": prompt_hash,
    }

"""One system's answers: retrieval for RAG, the requests per track, and the answer rows.

A RAG system ranks the corpus with its registry retriever (the question, or a
rubric conversation's last user turn, is the query) and puts the top ``k``
chunks, with their ids, in front of the question; the answer row records the
ids it was given. A failed call stays a row with its status and reason.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from mama_pipeline.llm.client import FreeText, LLMRequest, RunReport
from mama_pipeline.llm.prompt_template import PromptTemplate
from mama_pipeline.store.table_schema import table_schema
from mama_pipeline.systems._systems_prompts import CONTEXT_BLOCK, LETTERS, LetterAnswer, answer_template
from mama_pipeline.systems.settings import SystemSettings

ANSWERS_SCHEMA = table_schema("system_answers")
CONTEXT_SCHEMA = {"item_id": pl.String, "rank": pl.Int64, "chunk_id": pl.String, "text": pl.String}


def query_text(item: dict[str, Any]) -> str:
    """What a retriever is asked for an item: the question, or the conversation's last user turn."""
    question = item["question"]
    return question if isinstance(question, str) else question[-1]["content"]


def retrieval_queries(items: pl.DataFrame) -> pl.DataFrame:
    """(query_id, query_text) for the retriever registry, one per item."""
    texts = [query_text(json.loads(raw)) for raw in items["item_json"].to_list()]
    return pl.DataFrame({"query_id": items["item_id"], "query_text": texts})


def contexts_from_rankings(rankings: pl.DataFrame, chunks: pl.DataFrame, k: int) -> pl.DataFrame:
    """The top ``k`` chunks per item, with their text, from registry rankings."""
    top = rankings.filter(pl.col("rank") <= k).select(
        pl.col("query_id").alias("item_id"), pl.col("rank").cast(pl.Int64), "chunk_id"
    )
    joined = top.join(chunks.select("chunk_id", "text"), on="chunk_id", how="left")
    if joined["text"].null_count():
        raise ValueError("rankings name chunk ids missing from corpus_chunks; re-materialise the corpus first")
    return joined.select(list(CONTEXT_SCHEMA)).sort("item_id", "rank")


def context_block(chunks: list[tuple[str, str]]) -> str:
    if not chunks:
        return ""
    body = "\n\n".join(f"[chunk {cid}]\n{text}" for cid, text in chunks)
    return CONTEXT_BLOCK.format(chunks=body)


def _options(choices: list[str]) -> tuple[str, str]:
    if len(choices) > len(LETTERS):
        raise ValueError(f"{len(choices)} options; at most {len(LETTERS)} can be lettered")
    letters = LETTERS[: len(choices)]
    return letters, "\n".join(f"{letter}) {text}" for letter, text in zip(letters, choices))


def build_request(template: PromptTemplate, track: str, item: dict[str, Any], context: str) -> list[dict[str, str]]:
    """Chat messages for one item (a rubric item's earlier turns are kept as they are)."""
    if track == "mcq":
        letters, options = _options(item["choices"])
        return template.render(context=context, question=item["question"], options=options, letters=letters)
    if track == "short_answer":
        return template.render(context=context, question=item["question"])
    turns = item["question"]
    system, user = template.render(context=context, question=turns[-1]["content"])
    return [system, *({"role": t["role"], "content": t["content"]} for t in turns[:-1]), user]


def track_requests(
    system: SystemSettings, track: str, items: pl.DataFrame, contexts: pl.DataFrame
) -> tuple[PromptTemplate, type, list[LLMRequest], dict[str, list[str]]]:
    """The template, output model, requests and given chunk ids of one track's items."""
    template = answer_template(track, system.system_prompt, system.mcq_output)
    model = LetterAnswer if track == "mcq" and system.mcq_output == "json_schema" else FreeText
    by_item: dict[str, list[tuple[str, str]]] = {}
    for item_id, _, chunk_id, text in contexts.sort("item_id", "rank").iter_rows():
        by_item.setdefault(item_id, []).append((chunk_id, text))
    requests, given = [], {}
    for item_id, raw in items.filter(pl.col("track") == track).select("item_id", "item_json").iter_rows():
        chunks = by_item.get(item_id, [])
        try:
            messages = build_request(template, track, json.loads(raw), context_block(chunks))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"mamabench item {item_id!r} ({track}): cannot build the request ({exc})") from None
        requests.append(LLMRequest(item_id=item_id, messages=messages))
        given[item_id] = [cid for cid, _ in chunks]
    return template, model, requests, given


def answer_rows(
    system: str, track: str, template: PromptTemplate, report: RunReport, given: dict[str, list[str]]
) -> pl.DataFrame:
    """One row per request in the order asked; the answer is null unless the call succeeded."""
    rows = []
    for res in report.results:
        answer = None
        if res.ok:
            answer = res.value["answer"] if "answer" in res.value else res.value["text"]
        rows.append(
            (
                system,
                res.item_id,
                track,
                res.status,
                answer,
                res.raw_text,
                given.get(res.item_id, []),
                template.id,
                template.hash,
                res.cache_key,
                res.error,
            )
        )
    return pl.DataFrame(rows, schema=ANSWERS_SCHEMA, orient="row")

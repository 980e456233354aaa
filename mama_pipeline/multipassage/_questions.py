"""From candidate sets to verified questions: writer and verifier requests, one decision per set.

Each sampled set gets exactly one status, checked in this order:

- ``writer_failed``: the writer gave no valid answer (parse or transport failure);
- ``no_question``: the writer answered ``question: null``;
- ``empty_question`` / ``too_long`` (more than ``max_words`` words; dropped, never cut);
- ``facts_missing``: some passage of the set got no fact (the writer states, per passage, the facts it
  supplies to the answer: every passage must supply one);
- ``verifier_failed``: any verification request (a fact against its chunk, a chunk alone, or the set)
  got no valid answer;
- ``fact_not_stated``: the verifier found some fact not stated by the chunk the writer took it from
  (asked once per chunk: which of the facts taken from it does it state);
- ``single_chunk_answers``: the verifier found some chunk of the set answering the question completely alone;
- ``set_incomplete``: the verifier did not find the set as a whole answering it completely;
- ``duplicate_question``: equal to another kept question up to case, spacing and end
  punctuation (the smallest set id keeps it);
- ``kept``.

Only ``kept`` questions are released, with their facts (each with the chunk that states
it). Verification is asked only for sets with a usable question and facts; a failed answer
is never read as a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from mama_pipeline.llm.client import LLMClient, LLMRequest, LLMResult, RunReport
from mama_pipeline.llm.prompt_template import PromptTemplate
from mama_pipeline.multipassage._multipassage_prompts import (
    facts_stated_model,
    render_facts,
    render_passages,
    writer_model,
)
from mama_pipeline.queries import duplicate_key, normalise_query
from mama_pipeline.store.table_schema import table_schema

STATUSES = (
    "kept",
    "writer_failed",
    "no_question",
    "empty_question",
    "too_long",
    "facts_missing",
    "verifier_failed",
    "fact_not_stated",
    "single_chunk_answers",
    "set_incomplete",
    "duplicate_question",
)
SET_ITEM = "set"
FACT_ITEM = "fact"
DECISION_SCHEMA = table_schema("multipassage_decisions")
WRITTEN_SCHEMA = {
    k: DECISION_SCHEMA[k]
    for k in (
        "set_id",
        "status",
        "question",
        "raw_question",
        "words",
        "writer_reason",
        "facts",
        "fact_chunk_ids",
        "error",
    )
}


def _passages(chunk_ids: list[str], chunks: dict[str, dict]) -> list[dict]:
    return [chunks[c] for c in chunk_ids]


def writer_requests(sets: pl.DataFrame, chunks: dict[str, dict], template: PromptTemplate) -> list[LLMRequest]:
    """One request per set, keyed by set id (``chunks``: chunk id -> source, section, text)."""
    return [
        LLMRequest(sid, template.render(passages=render_passages(_passages(ids, chunks))))
        for sid, ids in sets.select("set_id", "chunk_ids").iter_rows()
    ]


def run_writer(
    client: LLMClient, template: PromptTemplate, reasoning_field: bool, sets: pl.DataFrame, chunks: dict[str, dict]
) -> dict[int, RunReport]:
    """The writer's answers per set size, one call of the client each (each size has its own answer schema); the
    stage's budget is checked over every size before the first is sent."""
    runs = {
        size: (writer_model(reasoning_field, size), writer_requests(part, chunks, template))
        for (size,), part in sets.sort("size", "set_id").group_by("size", maintain_order=True)
    }
    client.check_budget((template, model, requests) for model, requests in runs.values())
    return {size: client.run(template, model, requests) for size, (model, requests) in runs.items()}


def _facts(value: dict, chunk_ids: list[str]) -> tuple[list[str], list[str], bool]:
    """(facts, their chunk ids, every passage supplies a fact) from a writer answer."""
    facts, owners, every = [], [], True
    for i, cid in enumerate(chunk_ids, 1):
        own = [f.strip() for f in value.get(f"facts_passage_{i}") or [] if f.strip()]
        every = every and bool(own)
        facts += own
        owners += [cid] * len(own)
    return facts, owners, every


def written_questions(sets: pl.DataFrame, results: Sequence[LLMResult], max_words: int) -> pl.DataFrame:
    """The writer's outcome per set: status so far, question, facts, reason, error (``results`` in any order)."""
    by_id = {r.item_id: r for r in results}
    if len(by_id) != len(results) or set(by_id) != set(sets["set_id"].to_list()):
        raise ValueError(f"{len(results)} writer answers do not match the {sets.height} sets one to one")
    rows = []
    for sid, chunk_ids in sets.select("set_id", "chunk_ids").iter_rows():
        res = by_id[sid]
        value = res.value or {}
        raw = value.get("question") if res.ok else None
        text = normalise_query(raw) if raw is not None else None
        words = len(text.split()) if text is not None else None
        facts, owners, every = _facts(value, chunk_ids) if res.ok else ([], [], False)
        if not res.ok:
            status = "writer_failed"
        elif raw is None:
            status = "no_question"
        elif not text:
            status = "empty_question"
        elif words > max_words:
            status = "too_long"
        elif not every:
            status = "facts_missing"
        else:
            status = "written"
        rows.append(
            {
                "set_id": sid,
                "status": status,
                "question": text or None,
                "raw_question": raw,
                "words": words,
                "writer_reason": value.get("reason"),
                "facts": facts or None,
                "fact_chunk_ids": owners or None,
                "error": None if res.ok else f"writer {res.status}: {res.error}",
            }
        )
    return pl.DataFrame(rows, schema=WRITTEN_SCHEMA)


def verifier_requests(
    written: pl.DataFrame, sets: pl.DataFrame, chunks: dict[str, dict], template: PromptTemplate
) -> list[LLMRequest]:
    """Per written set: each chunk alone (``<set_id>|<chunk_id>``), then the whole set (``<set_id>|set``)."""
    ready = written.filter(pl.col("status") == "written").join(sets.select("set_id", "chunk_ids"), on="set_id")
    out = []
    for sid, question, ids in ready.select("set_id", "question", "chunk_ids").sort("set_id").iter_rows():
        for cid in ids:
            out.append(
                LLMRequest(f"{sid}|{cid}", template.render(question=question, passages=render_passages([chunks[cid]])))
            )
        out.append(
            LLMRequest(
                f"{sid}|{SET_ITEM}",
                template.render(question=question, passages=render_passages(_passages(ids, chunks))),
            )
        )
    return out


def _own_facts(facts: list[str], owners: list[str]) -> dict[str, list[str]]:
    """The facts taken from each chunk, in facts order."""
    by_chunk: dict[str, list[str]] = {}
    for fact, cid in zip(facts, owners):
        by_chunk.setdefault(cid, []).append(fact)
    return by_chunk


def fact_check_requests(
    written: pl.DataFrame, chunks: dict[str, dict], template: PromptTemplate
) -> dict[int, list[LLMRequest]]:
    """Per written set, each chunk with the facts taken from it (``<set_id>|fact|<chunk_id>``), keyed by the number
    of facts shown (each number has its own answer schema)."""
    out: dict[int, list[LLMRequest]] = {}
    ready = written.filter(pl.col("status") == "written").sort("set_id")
    for sid, facts, owners in ready.select("set_id", "facts", "fact_chunk_ids").iter_rows():
        for cid, own in _own_facts(facts, owners).items():
            out.setdefault(len(own), []).append(
                LLMRequest(
                    f"{sid}|{FACT_ITEM}|{cid}",
                    template.render(facts=render_facts(own), passages=render_passages([chunks[cid]])),
                )
            )
    return out


def run_fact_checks(
    client: LLMClient, template: PromptTemplate, reasoning_field: bool, written: pl.DataFrame, chunks: dict[str, dict]
) -> dict[int, RunReport]:
    """The verifier's fact checks, one call of the client per number of facts shown."""
    return {
        n: client.run(template, facts_stated_model(reasoning_field, n), requests)
        for n, requests in sorted(fact_check_requests(written, chunks, template).items())
    }


def decide(
    sets: pl.DataFrame,
    written: pl.DataFrame,
    verdicts: Sequence[LLMResult],
    *,
    writer: tuple[str, str],
    verifier: tuple[str, str],
    temperature: float,
) -> pl.DataFrame:
    """One decision row per set (``verdicts``: the verifier's answers to the completeness and fact requests;
    ``writer``/``verifier``: model, prompt hash)."""
    by_item = {r.item_id: r for r in verdicts}
    info = {r["set_id"]: r for r in written.to_dicts()}
    rows = []
    for s in sets.sort("set_id").to_dicts():
        w = info[s["set_id"]]
        status, error = w["status"], w["error"]
        set_verdict, alone, missing, fact_verdicts = None, None, None, None
        if status == "written":
            own = _own_facts(w["facts"], w["fact_chunk_ids"])
            checks = {cid: by_item.get(f"{s['set_id']}|{FACT_ITEM}|{cid}") for cid in own}
            answers = [by_item.get(f"{s['set_id']}|{c}") for c in s["chunk_ids"]]
            whole = by_item.get(f"{s['set_id']}|{SET_ITEM}")
            failed = [a for a in [*checks.values(), *answers, whole] if a is None or not a.ok]
            if failed:
                status = "verifier_failed"
                first = failed[0]
                error = "verifier: no answer" if first is None else f"verifier {first.status}: {first.error}"
            else:
                fact_verdicts = _fact_verdicts(w["fact_chunk_ids"], {c: a.value["facts"] for c, a in checks.items()})
                alone = [a.value["verdict"] for a in answers]
                set_verdict = whole.value["verdict"]
                missing = whole.value.get("missing") or None
                if "not_stated" in fact_verdicts:
                    status = "fact_not_stated"
                elif "complete" in alone:
                    status = "single_chunk_answers"
                elif set_verdict != "complete":
                    status = "set_incomplete"
                else:
                    status = "kept"
        rows.append(
            {
                **{k: s[k] for k in ("set_id", "kind", "size", "chunk_ids", "source", "tier", "corpus_version")},
                "status": status,
                "question": w["question"],
                "raw_question": w["raw_question"],
                "words": w["words"],
                "writer_reason": w["writer_reason"],
                "facts": w["facts"],
                "fact_chunk_ids": w["fact_chunk_ids"],
                "fact_verdicts": fact_verdicts,
                "set_verdict": set_verdict,
                "alone_verdicts": alone,
                "missing": missing,
                "error": error,
                "writer_model": writer[0],
                "writer_prompt_hash": writer[1],
                "verifier_model": verifier[0],
                "verifier_prompt_hash": verifier[1],
                "temperature": temperature,
            }
        )
    decisions = pl.DataFrame(rows, schema=DECISION_SCHEMA)
    return _mark_duplicates(decisions)


def _fact_verdicts(owners: list[str], stated: dict[str, list[int]]) -> list[str]:
    """stated / not_stated per fact, in facts order (``stated``: per chunk, the numbers of its own facts it states,
    numbered from 1 in facts order)."""
    seen: dict[str, int] = {}
    verdicts = []
    for cid in owners:
        seen[cid] = seen.get(cid, 0) + 1
        verdicts.append("stated" if seen[cid] in stated[cid] else "not_stated")
    return verdicts


def _mark_duplicates(decisions: pl.DataFrame) -> pl.DataFrame:
    seen: set[str] = set()
    statuses = []
    for status, text in decisions.select("status", "question").iter_rows():
        if status == "kept":
            key = duplicate_key(text)
            status = "duplicate_question" if key in seen else status
            seen.add(key)
        statuses.append(status)
    return decisions.with_columns(pl.Series("status", statuses, dtype=pl.String))


def status_counts(decisions: pl.DataFrame) -> dict[str, int]:
    counts = dict(decisions.group_by("status").len().rows())
    return {s: int(counts.get(s, 0)) for s in STATUSES}

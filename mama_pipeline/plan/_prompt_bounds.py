"""Upper bounds on the prompt tokens each LLM-calling asset sends a stage, from the configuration and the raw inputs.

A stage's prompts are its template filled with texts that are either raw inputs (chunks of the bundle, upstream
items and criteria, meta-evaluation rows) or answers of an earlier stage (queries, rewrites, questions, facts,
system answers). Where every request can be rendered from the raw inputs alone (the query writer, the classifier,
the rubric-judge harness, the answering systems' closed-book prompts), the bound sums the largest of them, as many
as the request bound; elsewhere it is the request bound x one request filled with the longest text each field can
hold: the longest chunk (source, page and section each at their longest), and for a generated field the
``max_length`` its answer schema enforces (a query 300 characters, a rewrite 400, a multi-passage question 400,
3 facts of 300 a passage), a noised query twice the query's characters (a noise edit adds at most one character a
letter), a system's answer its ``max_tokens`` x ``CHARS_PER_TOKEN`` characters (no schema bounds free text).
A generated field is filled with ``"x "`` repeated, so a tokenizer counts it at one token per two characters.

Tokens are counted with the stage's own counter (:func:`mama_pipeline.llm.tokens.counter_for`, as the plan and the
budget count them). Under the estimate (characters / 4) the bound holds for any answers and any overlap; under a
tokenizer it holds as far as the longest text in characters is also the longest in tokens.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cached_property

import polars as pl

from mama_pipeline.llm.tokens import CHARS_PER_TOKEN, TokenCounter, counter_for
from mama_pipeline.plan._stage_bounds import RawInputs, Unbounded

NOISE_GROWTH = 2  # a noise edit adds at most one character a letter (repeated_char)
SLICE_ROWS = 65_536  # chunks whose texts are Python strings at once while the longest are found


def filler(chars: int) -> str:
    """A generated field's stand-in, ``chars`` characters long."""
    return ("x " * (chars // 2 + 1))[:chars]


class LongestTexts:
    """The longest texts of the raw inputs each prompt field can hold, each found once."""

    def __init__(self, raw: RawInputs):
        self.raw = raw

    @staticmethod
    def of(raw: RawInputs) -> LongestTexts:
        """The one instance for ``raw`` (its texts found once for every stage)."""
        return raw.__dict__.setdefault("_longest_texts", LongestTexts(raw))

    @cached_property
    def judge_fields(self) -> dict[str, str]:
        """The judge's chunk fields (source, page, chunk), each the longest after the prompt's neutralising."""
        from mama_pipeline.judging import neutralise

        chunks = self.raw.chunk_frame
        text = max((neutralise(t.strip()) for t in _values(chunks["text"])), key=len)
        source = max((neutralise(s) for s in chunks["source"].unique().to_list()), key=len)
        pages = ["unknown", *(str(p) for p in chunks["page"].drop_nulls().unique().to_list())]
        return {"source": source, "page": max(pages, key=len), "chunk": text}

    @cached_property
    def passage(self) -> dict[str, str]:
        """The chunk whose rendered passage block is the longest (source, section, text)."""
        from mama_pipeline.multipassage import chunk_lookup, render_passages

        passages = (
            p
            for part in _slices(self.raw.chunk_frame)
            for p in chunk_lookup(part, set(part["chunk_id"].to_list())).values()
        )
        return max(passages, key=lambda p: len(render_passages([p])))

    @cached_property
    def chunk(self) -> tuple[str, str]:
        """(the longest chunk id, the longest chunk text), as a system's context block lists them."""
        chunks = self.raw.chunk_frame
        return max(_values(chunks["chunk_id"]), key=len), max(_values(chunks["text"]), key=len)

    @cached_property
    def criterion(self) -> str:
        texts = [
            str(c.get("criterion") or c.get("text") or c) if isinstance(c, dict) else str(c)
            for raw in self.raw.track_items("rubric")["criteria_json"].drop_nulls().to_list()
            for c in json.loads(raw)
        ]
        return max(texts, key=len, default="")


def _slices(frame: pl.DataFrame) -> Iterator[pl.DataFrame]:
    """``frame`` :data:`SLICE_ROWS` rows at a time: a bound over the chunks holds one slice's Python objects."""
    for start in range(0, frame.height, SLICE_ROWS):
        yield frame.slice(start, SLICE_ROWS)


def _values(column: pl.Series) -> Iterator:
    """The values of ``column``, in order, made Python objects a slice at a time."""
    for part in _slices(column.to_frame()):
        yield from part.to_series().to_list()


def largest(counts: Iterable[int], n: int) -> int:
    """The sum of the ``n`` largest counts."""
    return sum(heapq.nlargest(n, counts))


def _counter(raw: RawInputs, stage: str) -> TokenCounter:
    cfg = raw.s.systems.system(stage.split(":", 1)[1]) if stage.startswith("system:") else getattr(raw.s.llm, stage)
    return counter_for(cfg.tokenizer or cfg.model or raw.s.llm.embedded_server.model_alias)


def _each(raw: RawInputs, stage: str, messages: Iterable[Sequence[dict[str, str]]], n: int, what: str):
    counter = _counter(raw, stage)
    return largest((counter.count(m) for m in messages), n), f"the {n} largest of {what}; {counter.method}"


def _times(raw: RawInputs, stage: str, messages: Sequence[dict[str, str]], n: int, what: str):
    counter = _counter(raw, stage)
    one = counter.count(messages)
    return n * one, f"{n} requests x {one:,} ({what}; {counter.method})"


def _judge(raw: RawInputs, stage: str, n: int, query_chars: int, what: str):
    from mama_pipeline.judging import RELEVANCE_JUDGE

    fields = LongestTexts.of(raw).judge_fields
    messages = RELEVANCE_JUDGE.render(query=filler(query_chars), **fields)
    return _times(raw, stage, messages, n, f"the longest chunk, {what} of {query_chars} characters")


def query_chars() -> int:
    from mama_pipeline.queries import QUERY_CHARS

    return QUERY_CHARS


def judged_tokens(raw: RawInputs, stage: str, n: int):
    return _judge(raw, stage, n, query_chars(), "a query")


def variant_tokens(raw: RawInputs, stage: str, n: int):
    from mama_pipeline.robustness import REWRITE_CHARS

    chars = max(NOISE_GROWTH * query_chars(), REWRITE_CHARS)
    return _judge(raw, stage, n, chars, "a variant (a noised query, or a rewrite)")


def multipassage_label_tokens(raw: RawInputs, stage: str, n: int):
    from mama_pipeline.multipassage import QUESTION_CHARS

    return _judge(raw, stage, n, QUESTION_CHARS, "a multi-passage question")


def query_writer_tokens(raw: RawInputs, stage: str, n: int):
    from mama_pipeline.queries import query_requests, query_writer_template

    template = query_writer_template(raw.s.queries.max_words, raw.s.llm.query_writer.reasoning == "json_field")
    requests = query_requests(raw.sampled_frame, template)
    return _each(raw, stage, (r.messages for r in requests), n, f"the {len(requests)} sampled chunks' prompts")


def classifier_tokens(raw: RawInputs, stage: str, n: int):
    from mama_pipeline.mamabench import pending_rows, scope_requests

    requests = scope_requests(pending_rows(raw.adapted))
    return _each(raw, stage, (r.messages for r in requests), n, f"the {len(requests)} pending rows' prompts")


def calibration_tokens(raw: RawInputs, stage: str, n: int):
    from mama_pipeline.calibration import judge_requests

    requests = judge_requests(raw.meta_eval)
    return _each(raw, stage, (r.messages for r in requests), n, f"the {len(requests)} meta-evaluation rows' prompts")


def rewrite_tokens(raw: RawInputs, stage: str, n: int):
    from mama_pipeline.robustness import REWRITE_CHARS, gate_template, rewrite_template

    r = raw.s.robustness
    if stage == "query_rewriter":
        reasoning = raw.s.llm.query_rewriter.reasoning == "json_field"
        templates = [rewrite_template(k.rewrite, r.max_rewrite_words, reasoning) for k in r.kinds if k.rewrite]
        if not templates:
            return 0, "no rewrite kinds"
        counter = _counter(raw, stage)
        one = max(counter.count(t.render(query=filler(query_chars()))) for t in templates)
        return n * one, f"{n} requests x {one:,} (a query of {query_chars()} characters; {counter.method})"
    template = gate_template(raw.s.llm.rewrite_gate.reasoning == "json_field")
    messages = template.render(query=filler(query_chars()), rewrite=filler(REWRITE_CHARS))
    return _times(raw, stage, messages, n, f"a query of {query_chars()} and a rewrite of {REWRITE_CHARS} characters")


def multipassage_question_tokens(raw: RawInputs, stage: str, n: int):
    from mama_pipeline.multipassage import QUESTION_CHARS, render_passages, verifier_template, writer_template

    mp = raw.s.multipassage
    size = max(mp.set_sizes)
    passages = render_passages([LongestTexts.of(raw).passage] * size)
    writer = writer_template(mp.max_words, getattr(raw.s.llm, mp.writer_stage).reasoning == "json_field")
    verifier = verifier_template(getattr(raw.s.llm, mp.verifier_stage).reasoning == "json_field")
    ask = verifier.render(question=filler(QUESTION_CHARS), passages=passages)
    what = f"{size} of the longest passage"
    if mp.writer_stage == mp.verifier_stage:
        counter = _counter(raw, stage)
        one = max(counter.count(writer.render(passages=passages)), counter.count(ask))
        return n * one, f"{n} requests x {one:,} ({what}, a question of {QUESTION_CHARS} characters; {counter.method})"
    if stage == mp.writer_stage:
        return _times(raw, stage, writer.render(passages=passages), n, what)
    return _times(raw, stage, ask, n, f"{what}, a question of {QUESTION_CHARS} characters")


def fact_label_tokens(raw: RawInputs, stage: str, n: int):
    from mama_pipeline.multipassage import (
        FACT_CHARS,
        FACTS_PER_PASSAGE,
        QUESTION_CHARS,
        fact_judge_template,
        render_facts,
        render_passages,
    )

    facts = FACTS_PER_PASSAGE * max(raw.s.multipassage.set_sizes)
    template = fact_judge_template(raw.s.llm.judge.reasoning == "json_field")
    messages = template.render(
        question=filler(QUESTION_CHARS),
        facts=render_facts([filler(FACT_CHARS)] * facts),
        passages=render_passages([LongestTexts.of(raw).passage]),
    )
    return _times(raw, stage, messages, n, f"the longest passage, {facts} facts of {FACT_CHARS} characters")


def _items(raw: RawInputs, track: str) -> pl.DataFrame:
    return raw.track_items(track).select("item_id", "item_json", "track")


def system_answer_tokens(raw: RawInputs, stage: str, n: int):
    from mama_pipeline.systems import CONTEXT_SCHEMA, context_block, track_requests

    cfg = raw.s.systems.system(stage.split(":", 1)[1])
    counter = _counter(raw, stage)
    context = 0
    if cfg.mode == "rag":
        cid, text = LongestTexts.of(raw).chunk
        context = counter.count([{"role": "user", "content": context_block([(cid, text)] * cfg.k)}])
    total, per = 0, raw.s.systems.items_per_track
    no_context = pl.DataFrame(schema=CONTEXT_SCHEMA)
    for track in cfg.tracks:
        items = _items(raw, track)
        _, _, requests, _ = track_requests(cfg, track, items, no_context)
        counts = [counter.count(r.messages) + context for r in requests]
        total += largest(counts, min(per, len(counts)) if per else len(counts))
    what = f"{cfg.k} of the longest chunk as context, " if cfg.mode == "rag" else ""
    return total, f"the largest item prompts of each track; {what}{counter.method}"


def system_grade_tokens(raw: RawInputs, stage: str, n: int):
    from mama_pipeline.calibration import RUBRIC_JUDGE_PROMPT, render_conversation
    from mama_pipeline.systems import SHORT_ANSWER_GRADER_PROMPT

    entries = raw.s.systems.entries
    track = "short_answer" if stage == "answer_grader" else "rubric"
    graded = [e for e in entries if track in e.tracks]
    if not graded:
        return 0, "no system answers this track"
    answer = filler(max(e.max_tokens for e in graded) * CHARS_PER_TOKEN)
    parsed = [json.loads(j) for j in _items(raw, track)["item_json"].to_list()]
    if stage == "answer_grader":
        prompts = [SHORT_ANSWER_GRADER_PROMPT.render(question=p["question"], reference=p["answer"], answer=answer)
                   for p in parsed]  # fmt: skip
    else:
        criterion = LongestTexts.of(raw).criterion
        prompts = [
            RUBRIC_JUDGE_PROMPT.render(conversation=render_conversation(p["question"], answer), criterion=criterion)
            for p in parsed
        ]
    counter = _counter(raw, stage)
    one = max((counter.count(m) for m in prompts), default=0)
    return n * one, (
        f"{n} requests x {one:,} (the largest item, an answer at the systems' max_tokens x {CHARS_PER_TOKEN} "
        f"characters{', the longest criterion' if track == 'rubric' else ''}; {counter.method})"
    )


TOKEN_BOUNDS: dict[str, Callable[[RawInputs, str, int], tuple[int, str]]] = {
    "mamabench_scope_verdicts": classifier_tokens,
    "mamabench_agreement": classifier_tokens,
    "calibration_judge_labels": calibration_tokens,
    "generated_queries": query_writer_tokens,
    "judged_labels": judged_tokens,
    "audit_judgments": judged_tokens,
    "reference_judgments": judged_tokens,
    "query_variants": rewrite_tokens,
    "variant_labels": variant_tokens,
    "multipassage_questions": multipassage_question_tokens,
    "multipassage_labels": multipassage_label_tokens,
    "multipassage_fact_labels": fact_label_tokens,
    "system_answers": system_answer_tokens,
    "system_grades": system_grade_tokens,
}


def prompt_token_bound(asset: str, raw: RawInputs, stage: str, requests: int | None) -> tuple[int | None, str]:
    """The most prompt tokens ``asset`` can send ``stage`` in at most ``requests`` requests, and how it was found;
    None with the one-line reason where an input is missing, on the hub or bad."""
    from mama_pipeline.common.input_errors import InputError, one_line

    if requests is None:
        return None, "not computed: the requests are not bounded"
    try:
        return TOKEN_BOUNDS[asset](raw, stage, requests)
    except (Unbounded, InputError, OSError) as exc:
        return None, f"not computed: {one_line(str(exc))}"

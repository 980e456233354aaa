"""A prediction of the store's size (``data_dir``), from the configuration and the raw inputs alone.

Each large table is predicted as rows x bytes a row. Rows are at the plan's bounds (:mod:`stage_bounds`: chunks,
sampled chunks, queries, pairs, requests). Bytes a row follow DuckDB's column types: 8 for a BIGINT, DOUBLE or
TIMESTAMP, 16 for a VARCHAR's header plus its characters where they are longer than the 12 DuckDB keeps inline;
a text of unknown length is taken at its bound (an answer schema's ``max_length``, or an answer at the stage's
``max_tokens`` x 4 characters, its reasoning included, and its parsed JSON again). The chunks, sampled chunks and
upstream rows are measured as parsed (polars' ``estimated_size``). Dense indexes are chunks x dimensions x 4
bytes; a BM25 index is taken as the chunks' size again. Every table (one a contract in ``sql/tables``) takes two
of DuckDB's 256 KiB blocks at least (the demo's store: 93 tables in 151 blocks, 37.7 MiB for little data). DuckDB
compresses what it stores, so the prediction is above what one build writes as long as the answers stay under
their caps; blocks freed by rebuilding a table stay in the file, and the reports' and releases' files are not
counted.
"""

from __future__ import annotations

from dataclasses import dataclass

from mama_pipeline.llm.tokens import CHARS_PER_TOKEN
from mama_pipeline.plan._stage_bounds import BOUNDS, RawInputs
from mama_pipeline.settings import PipelineSettings

FIXED = 8  # BIGINT, DOUBLE, TIMESTAMP
HASH = 64  # a SHA-256 in hex
BLOCK = 262_144  # DuckDB's block: the demo's store held 93 tables in 151 blocks, so 2 a table are counted


def text(chars: int) -> int:
    """A VARCHAR of ``chars`` characters: the 16-byte header, and the characters when they do not fit inline."""
    return 16 + (chars if chars > 12 else 0)


@dataclass(frozen=True)
class Part:
    table: str
    rows: int
    row_bytes: int

    @property
    def bytes(self) -> int:
        return self.rows * self.row_bytes


@dataclass(frozen=True)
class StorePrediction:
    parts: list[Part]

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.parts)

    def line(self) -> str:
        top = sorted(self.parts, key=lambda p: -p.bytes)[:3]
        return f"{self.bytes / 2**30:,.2f} GiB predicted, most in " + ", ".join(
            f"{p.table} ({p.rows:,} rows x {p.row_bytes:,} B)" for p in top
        )


def _measured(frame) -> int:
    return -(-frame.estimated_size() // max(frame.height, 1))


def predict_store(s: PipelineSettings) -> StorePrediction:
    """The store's predicted size; raises what the raw inputs raise (:class:`~stage_bounds.Unbounded`, a bad
    input) when they cannot be read."""
    from mama_pipeline.judging import output_model
    from mama_pipeline.plan._planners import PLANNERS
    from mama_pipeline.queries import QUERY_CHARS, REASON_CHARS

    raw = RawInputs(s)
    r = s.retrieval
    chunk_id = text(max(map(len, raw.chunk_frame["chunk_id"].to_list()), default=0))
    query_id = text(len(f"q-{raw.queries}"))
    retriever = text(max((len(n) for n in r.retriever_names), default=0))
    parts = [
        Part("corpus_chunks", raw.chunks, _measured(raw.chunk_frame)),
        Part("sampled_chunks", raw.sampled, _measured(raw.sampled_frame)),
        Part("query_gate_decisions, generated_queries", 2 * raw.sampled,
             2 * chunk_id + query_id + text(QUERY_CHARS) + text(REASON_CHARS) + 3 * text(HASH) + 2 * FIXED),
        Part("mamabench_adapted, mamabench_items", 2 * raw.adapted.height, _measured(raw.adapted)),
        Part("rankings", raw.queries * sum(r.depth_of(n) for n in r.retriever_names),
             query_id + chunk_id + retriever + 2 * FIXED),
    ]  # fmt: skip
    llm_rows = judge_rows = 0
    answer_bytes = 0
    for planner in PLANNERS:
        for stage, cfg in planner.stages(s):
            n = BOUNDS[planner.asset](raw, stage).requests or 0
            llm_rows += n
            answer_bytes += n * 2 * cfg.max_tokens * CHARS_PER_TOKEN
            if stage == "judge" and planner.asset != "multipassage_questions":
                judge_rows += n
    pair = query_id + chunk_id + 4 * FIXED
    grades = len(output_model(s.llm.judge.reasoning).model_fields)
    parts += [
        Part("pooled_pairs, audit_pool, variant_holes", judge_rows, pair),
        Part("judgments and the judges' label tables", 2 * judge_rows, pair + grades * FIXED),
        Part("llm_responses (keys, hashes, counts)", llm_rows, 2 * text(HASH) + 6 * text(40) + 7 * FIXED),
        Part("llm_responses (answers at their caps, parsed again)", 1, answer_bytes),
    ]
    for name in r.retriever_names:
        params = getattr(r.retriever(name), "params", None)
        dims = getattr(params, "dimensions", None)
        kind = r.retriever(name).kind
        if dims:
            parts.append(Part(f"{name} index ({dims} dimensions, float32)", raw.chunks, dims * 4))
        elif kind == "bm25":
            parts.append(Part(f"{name} index (the chunks again)", raw.chunks, _measured(raw.chunk_frame)))
    from mama_pipeline.common.code_version import table_contracts

    parts.append(Part("DuckDB blocks, 2 a table (sql/tables)", len(table_contracts()), 2 * BLOCK))
    return StorePrediction(parts)


def prediction_or_reason(s: PipelineSettings) -> tuple[int, str] | str:
    """(bytes, the prediction in words) of :func:`predict_store`, or the one-line reason it cannot be made."""
    from mama_pipeline.common.input_errors import InputError, one_line
    from mama_pipeline.plan._stage_bounds import Unbounded

    try:
        predicted = predict_store(s)
    except (Unbounded, InputError, OSError) as exc:
        return one_line(str(exc))
    return predicted.bytes, predicted.line()

"""Circularity flags: where a judge shares its model, or its model family, with what it judges.

The relevance judge (``llm.judge``) is compared with the query writer (whose
queries it labels against) and with every retriever whose settings name a
model (``model_id()``: dense, sparse, OpenAI-compatible embeddings, rerank
backends; a fusion inherits its runs' flags through ``runs_fused()``); the answer grader and the rubric judge, which grade the
answering systems, with each system. A pair is flagged when the model ids are
equal (case aside) or their families are. A family is
``circularity.families[<part>]`` when configured, else the model id's
organisation and base name, lower case: the name's first hyphen-separated
token ("Qwen/Qwen3.5-397B-A17B-FP8" -> "qwen/qwen3.5"; "meta-llama/Llama-3.1-8B"
-> "meta-llama/llama"); a model folder gives its folder name's base, with no
organisation, and then only base names are compared. A part without a named
model (BM25, an imported run, a remote stage that names none) is never flagged.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING

import polars as pl

from mama_pipeline.llm.embedded_banner import STAGE_WORDS

if TYPE_CHECKING:
    from mama_pipeline.llm.settings import StageSettings
    from mama_pipeline.settings import PipelineSettings

QUERY_WRITER = "llm.query_writer"
RELEVANCE_JUDGE = "llm.judge"
SYSTEM_JUDGES = ("llm.answer_grader", "llm.rubric_judge")
FLAG_SCHEMA = {
    "judge": pl.String,
    "judge_model": pl.String,
    "part": pl.String,
    "model": pl.String,
    "shared": pl.String,
    "family": pl.String,
}


def model_family(model: str) -> str:
    """``org/base`` of a hub id (base: the name's first hyphen-separated token), lower case; ``base`` of a path."""
    if model.startswith(("/", ".", "~")) or model.count("/") > 1:
        return PurePath(model).name.split("-")[0].lower()
    org, _, name = model.rpartition("/")
    base = name.split("-")[0].lower()
    return f"{org.lower()}/{base}" if org else base


@dataclass(frozen=True)
class Flag:
    judge: str  # "llm.judge", ...
    judge_model: str
    part: str  # "llm.query_writer", "retrieval.<name>", "systems.<name>"
    model: str
    shared: str  # "model" or "family"
    family: str

    @property
    def note(self) -> str:
        """The flag in the reader's words (the configuration keys stay in ``judge`` and ``part``)."""
        what = "model" if self.shared == "model" else f"model family {self.family}"
        return (
            f"circular: {reader_name(self.judge)} ({self.judge_model}) and {reader_name(self.part)} ({self.model}) "
            f"share the {what}"
        )


def reader_name(key: str) -> str:
    """A flagged part as a page names it: ``llm.judge`` -> "the relevance judge", ``retrieval.bm25`` ->
    "retriever bm25", ``systems.gpt`` -> "system gpt"."""
    area, _, name = key.partition(".")
    if area == "llm":
        return f"the {STAGE_WORDS.get(name, name.replace('_', ' '))}"
    return f"{'retriever' if area == 'retrieval' else 'system'} {name}"


def _llm_model(s: PipelineSettings, st: StageSettings) -> str | None:
    """The model a stage or system names; the embedded server's alias when it runs there."""
    return st.model or (s.llm.embedded_server.model_alias if st.embedded else None)


def _stage_model(s: PipelineSettings, stage: str) -> str | None:
    return _llm_model(s, getattr(s.llm, stage))


def _retriever_models(s: PipelineSettings) -> dict[str, str]:
    """Retriever -> the model it runs, as its kind names it (a kind that runs none is left out)."""
    return {r.name: m for r in s.retrieval.retrievers if (m := r.model_id())}


def _compare(s: PipelineSettings, judge: str, part: str, model: str | None) -> Flag | None:
    judge_model = _stage_model(s, judge.split(".", 1)[1])
    if not judge_model or not model:
        return None
    fams = s.circularity.families
    a, b = fams.get(judge) or model_family(judge_model), fams.get(part) or model_family(model)
    if "/" not in a or "/" not in b:
        a, b = a.rpartition("/")[2], b.rpartition("/")[2]
    if judge_model.lower() == model.lower():
        return Flag(judge, judge_model, part, model, "model", a)
    return Flag(judge, judge_model, part, model, "family", a) if a == b else None


def circularity_flags(s: PipelineSettings) -> list[Flag]:
    """Every judge / judged pair that shares a model or a model family, in a fixed order."""
    s.circularity.check_families(s.retrieval.retriever_names, s.systems.names)
    candidates = [(RELEVANCE_JUDGE, QUERY_WRITER, _stage_model(s, "query_writer"))]
    models = _retriever_models(s)
    candidates += [(RELEVANCE_JUDGE, f"retrieval.{n}", m) for n, m in sorted(models.items())]
    candidates += [(j, f"systems.{e.name}", _llm_model(s, e)) for j in SYSTEM_JUDGES for e in s.systems.entries]
    flags = [f for f in (_compare(s, *c) for c in candidates) if f is not None]
    for r in s.retrieval.retrievers:  # a fusion carries its runs' flags
        if runs := {f"retrieval.{x}" for x in r.runs_fused()}:
            flags += [
                Flag(f.judge, f.judge_model, f"retrieval.{r.name}", f"fuses {reader_name(f.part)}", f.shared, f.family)
                for f in flags
                if f.part in runs
            ]
    return flags


def retrieval_flags(s: PipelineSettings) -> list[Flag]:
    """The relevance judge's flags (against the query writer and the retrievers): those of a retrieval page."""
    return [f for f in circularity_flags(s) if f.judge == RELEVANCE_JUDGE]


def system_flags(s: PipelineSettings) -> list[Flag]:
    """The answer grader's and the rubric judge's flags against the answering systems."""
    return [f for f in circularity_flags(s) if f.judge in SYSTEM_JUDGES]


def retriever_notes(flags: list[Flag], retrievers: list[str]) -> dict[str, str]:
    """Retriever -> the flags next to its figures: its own, and the query writer's (which touches every one)."""
    common = [f.note for f in flags if f.part == QUERY_WRITER]
    out = {}
    for name in retrievers:
        notes = [f.note for f in flags if f.part == f"retrieval.{name}"] + common
        if notes:
            out[name] = "; ".join(notes)
    return out


def flag_table(flags: list[Flag]) -> pl.DataFrame:
    return pl.DataFrame(
        [{k: v for k, v in flag_record(f).items() if k in FLAG_SCHEMA} for f in flags], schema=FLAG_SCHEMA
    )


def circularity_notes(flags: list[Flag]) -> list[str]:
    """One sentence per flag for report headers, naming the figures it touches."""
    return circularity_notes_of([flag_record(f) for f in flags])


def flag_record(f: Flag) -> dict[str, str]:
    """A flag as a manifest records it: its fields and its note."""
    return {
        "judge": f.judge,
        "judge_model": f.judge_model,
        "part": f.part,
        "model": f.model,
        "shared": f.shared,
        "family": f.family,
        "note": f.note,
    }


def circularity_notes_of(records: list[dict[str, str]]) -> list[str]:
    """:func:`circularity_notes` of flags as manifests record them (:func:`flag_record`)."""
    out = []
    for f in records:
        part, note = f["part"], f["note"]
        if part == QUERY_WRITER:
            touched = "every retriever's figures (the judge labels pairs for queries its own model family wrote)"
        elif part.startswith("retrieval."):
            touched = f"the figures of {reader_name(part)} (a judge may favour its own model family)"
        else:
            touched = f"the grades of {reader_name(part)} (a grader may favour its own model family)"
        out.append(f"{note[0].upper()}{note[1:]}: {touched}.")
    return out

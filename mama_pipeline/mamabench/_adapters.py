"""One adapter per pool: upstream rows to canonical items, every row accounted for.

Each upstream row becomes exactly one adapted row with a status: ``refused``
(with a reason), ``out_of_scope`` (pre-scoped pools), ``kept`` (pre-scoped pools)
or ``pending`` (waiting for a scope verdict). Pre-scoping takes precedence over
refusals, as in the paper's yield table: a row outside a pre-scoped pool's scope
is out of scope whatever its defects (which its ``detail`` still names), and
refusals count only rows that would otherwise be kept or classified.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from mama_pipeline.mamabench._pools import POOL_BY_NAME, Pool
from mama_pipeline.mamabench._schema import (
    CanonicalItem,
    ChatMessage,
    Criterion,
    RubricRef,
    SourceMetadata,
    SourceRef,
    content_id,
    criterion_id,
)
from mama_pipeline.mamabench._scope_prompt import render_conversation, render_mcq
from mama_pipeline.mamabench._scorability import McqVerdict, check_mcq
from mama_pipeline.mamabench.settings import MamabenchSettings
from mama_pipeline.store.table_schema import table_schema

ADAPTED_SCHEMA = table_schema("mamabench_adapted")


@dataclass
class Adapted:
    item_id: str
    upstream_id: str | None
    reason: str | None = None
    detail: str = ""
    in_prescope: bool | None = None
    defects: list[str] = field(default_factory=list)
    item: CanonicalItem | None = None
    criteria: list[Criterion] = field(default_factory=list)
    scope_input: str | None = None
    join_key: str | None = None
    prior_category: str | None = None


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _meta(pool: Pool, row: dict[str, Any], tags: list[str], defects: list[str]) -> SourceMetadata:
    return SourceMetadata(
        scoped_by=pool.scoping,
        pool=pool.name,
        subset=row["origin"],
        upstream_index=row["upstream_index"],
        tags=tags,
        cosmetic_defects=defects,
    )


def _tag(key: str, value: Any) -> list[str]:
    text = _text(value)
    return [f"{key}:{text}"] if text and text != "None" else []


def _finish_mcq(
    pool: Pool,
    row: dict[str, Any],
    item_id: str,
    uid: str,
    stem: str,
    v: McqVerdict,
    tags: list[str],
    in_prescope: bool | None,
) -> Adapted:
    if v.reason:
        return Adapted(item_id, uid, v.reason, v.detail, in_prescope)
    item = CanonicalItem(
        id=item_id,
        set_type="mcq",
        question=stem,
        choices=v.choices,
        answer_index=v.answer_index,
        answer=v.choices[v.answer_index],
        source=SourceRef(dataset=pool.dataset, id=uid, metadata=_meta(pool, row, tags, v.defects)),
    )
    scope_input = render_mcq(stem, v.choices) if pool.classifier_mode else None
    return Adapted(item_id, uid, in_prescope=in_prescope, defects=v.defects, item=item, scope_input=scope_input)


# -- multiple choice ------------------------------------------------------------
def adapt_medmcqa(pool: Pool, rec: dict[str, Any], row: dict[str, Any], s: MamabenchSettings) -> Adapted:
    uid = _text(rec["id"])
    cop = rec["cop"]
    correct = [int(cop)] if cop is not None and str(cop).lstrip("-").isdigit() else []
    options = [rec[k] for k in ("opa", "opb", "opc", "opd")]
    v = check_mcq(rec["question"], options, correct, s.terse_stem_words)
    tags = (
        _tag("subject", rec["subject_name"])
        + _tag("topic", rec["topic_name"])
        + _tag("choice_type", rec["choice_type"])
    )
    in_scope = _text(rec["subject_name"]) in s.medmcqa_subjects
    return _finish_mcq(pool, row, f"{pool.name}:{uid}", uid, _text(rec["question"]), v, tags, in_scope)


def adapt_medqa(pool: Pool, rec: dict[str, Any], row: dict[str, Any], s: MamabenchSettings) -> Adapted:
    opts = rec["options"]
    uid = content_id(rec["question"], opts)
    item_id = f"{pool.name}:{uid}"
    if isinstance(opts, dict) and opts and all(isinstance(k, str) and len(k) == 1 for k in opts):
        letters = sorted(opts)
        options: list[str | None] | None = [opts[k] if isinstance(opts[k], str) else None for k in letters]
        idx = letters.index(rec["answer_idx"]) if rec["answer_idx"] in letters else -1
    else:
        options, idx = None, -1
    v = check_mcq(rec["question"], options, [idx], s.terse_stem_words)
    if v.reason is None and " ".join(_text(rec["answer"]).split()) != " ".join(v.choices[v.answer_index].split()):
        return Adapted(
            item_id, uid, "answer_text_mismatch", f"answer {rec['answer']!r} is not option {rec['answer_idx']}"
        )
    return _finish_mcq(pool, row, item_id, uid, _text(rec["question"]), v, _tag("meta_info", rec["meta_info"]), None)


def _afrimed_in_scope(rec: dict[str, Any], s: MamabenchSettings) -> bool:
    return (
        s.afrimedqa_specialty_contains.casefold() in _text(rec["specialty"]).casefold()
        and _text(rec["tier"]).casefold() == s.afrimedqa_tier.casefold()
    )


def _afrimed_tags(rec: dict[str, Any]) -> list[str]:
    return (
        _tag("specialty", rec["specialty"])
        + _tag("country", rec["country"])
        + _tag("tier", rec["tier"])
        + _tag("split", rec["split"])
    )


def _afrimed_options(raw: Any) -> tuple[list[str | None] | None, dict[str, int]]:
    """Options in option-number order and the map from ``optionN`` to index; None if unparseable."""
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return None, {}
    if not isinstance(data, dict) or not data:
        return None, {}
    numbered = []
    for key, value in data.items():
        if not (isinstance(key, str) and key.startswith("option") and key[6:].isdigit()):
            return None, {}
        if value is not None and not isinstance(value, str):
            return None, {}
        numbered.append((int(key[6:]), key, value))
    numbered.sort()
    if [n for n, _, _ in numbered] != list(range(1, len(numbered) + 1)):
        return None, {}
    return [v for _, _, v in numbered], {k: i for i, (_, k, _) in enumerate(numbered)}


def adapt_afrimed_mcq(pool: Pool, rec: dict[str, Any], row: dict[str, Any], s: MamabenchSettings) -> Adapted:
    uid = _text(rec["sample_id"])
    options, index_of = _afrimed_options(rec["answer_options"])
    tokens = [t.strip() for t in _text(rec["correct_answer"]).split(",") if t.strip()]
    correct = [index_of.get(t, -1) for t in tokens]
    v = check_mcq(rec["question"], options, correct, s.terse_stem_words)
    return _finish_mcq(
        pool, row, f"{pool.name}:{uid}", uid, _text(rec["question"]), v, _afrimed_tags(rec), _afrimed_in_scope(rec, s)
    )


# -- short answer -----------------------------------------------------------------
def _open_item(
    pool: Pool,
    row: dict[str, Any],
    item_id: str,
    uid: str,
    question: str,
    answer: str,
    tags: list[str],
    in_prescope: bool | None,
    prior: str | None = None,
) -> Adapted:
    if not question:
        return Adapted(item_id, uid, "empty_question", in_prescope=in_prescope, prior_category=prior)
    if not answer or answer == "None":
        return Adapted(item_id, uid, "empty_answer", in_prescope=in_prescope, prior_category=prior)
    item = CanonicalItem(
        id=item_id,
        set_type="open_ended",
        question=question,
        answer=answer,
        source=SourceRef(dataset=pool.dataset, id=uid, metadata=_meta(pool, row, tags, [])),
    )
    scope_input = render_conversation([("user", question)]) if pool.classifier_mode else None
    return Adapted(item_id, uid, in_prescope=in_prescope, item=item, scope_input=scope_input, prior_category=prior)


def adapt_kenya(pool: Pool, rec: dict[str, Any], row: dict[str, Any], s: MamabenchSettings) -> Adapted:
    uid = _text(rec["StudyID"])
    uid = uid[:-2] if uid.endswith(".0") else uid  # spreadsheet readers may give numeric ids as floats
    prior = _text(rec.get("prior_category")) or None
    return _open_item(
        pool,
        row,
        f"{pool.name}:{uid}",
        uid,
        _text(rec["User Prompt"]),
        _text(rec["Clinician response"]),
        [],
        None,
        prior,
    )


def adapt_afrimed_saq(pool: Pool, rec: dict[str, Any], row: dict[str, Any], s: MamabenchSettings) -> Adapted:
    uid = _text(rec["sample_id"])
    return _open_item(
        pool,
        row,
        f"{pool.name}:{uid}",
        uid,
        _text(rec["question"]),
        _text(rec["answer_rationale"]),
        _afrimed_tags(rec),
        _afrimed_in_scope(rec, s),
    )


def adapt_whb(pool: Pool, rec: dict[str, Any], row: dict[str, Any], s: MamabenchSettings) -> Adapted:
    uid = content_id(rec["expert_prompt"])
    return _open_item(
        pool, row, f"{pool.name}:{uid}", uid, _text(rec["expert_prompt"]), _text(rec["justification"]), [], True
    )


# -- rubric -----------------------------------------------------------------------
def adapt_healthbench(pool: Pool, rec: dict[str, Any], row: dict[str, Any], s: MamabenchSettings) -> Adapted:
    uid = _text(rec["prompt_id"])
    item_id = f"{pool.name}:{uid}"
    if not uid:
        return Adapted(item_id, None, "missing_prompt_id")
    prompt = rec["prompt"]
    if not isinstance(prompt, list) or not prompt:
        return Adapted(item_id, uid, "empty_question", join_key=uid)
    try:
        turns = [ChatMessage.model_validate(m) for m in prompt]
    except Exception as exc:
        return Adapted(item_id, uid, "malformed_conversation", str(exc).splitlines()[0], join_key=uid)
    if turns[-1].role != "user":
        return Adapted(item_id, uid, "conversation_not_ending_in_user_turn", join_key=uid)
    rubrics, criteria = [], {}
    for n, r in enumerate(rec["rubrics"] or []):
        text = _text(r.get("criterion")) if isinstance(r, dict) else ""
        points = r.get("points") if isinstance(r, dict) else None
        if not text:
            return Adapted(item_id, uid, "empty_criterion", f"rubric {n}", join_key=uid)
        if not isinstance(points, (int, float)) or points != int(points) or not (points and -10 <= points <= 10):
            return Adapted(item_id, uid, "invalid_rubric_points", f"rubric {n}: points {points!r}", join_key=uid)
        tags = [str(t) for t in r.get("tags") or []]
        cid = criterion_id(text, tags)
        criteria[cid] = Criterion(criterion_id=cid, criterion=text, tags=tags)
        rubrics.append(RubricRef(criterion_id=cid, points=int(points)))
    if not rubrics:
        return Adapted(item_id, uid, "empty_rubric", join_key=uid)
    tags = [str(t) for t in rec["example_tags"] or []]
    item = CanonicalItem(
        id=item_id,
        set_type="open_ended_rubric",
        question=turns,
        rubrics=rubrics,
        source=SourceRef(dataset=pool.dataset, id=uid, metadata=_meta(pool, row, tags, [])),
    )
    scope_input = render_conversation([(t.role, t.content) for t in turns]) if pool.classifier_mode else None
    return Adapted(item_id, uid, item=item, criteria=list(criteria.values()), scope_input=scope_input, join_key=uid)


ADAPTERS: dict[str, Callable[[Pool, dict[str, Any], dict[str, Any], MamabenchSettings], Adapted]] = {
    "medmcqa": adapt_medmcqa,
    "medqa_usmle": adapt_medqa,
    "afrimedqa_mcq": adapt_afrimed_mcq,
    "kenya_vignettes": adapt_kenya,
    "afrimedqa_saq": adapt_afrimed_saq,
    "whb": adapt_whb,
    "healthbench_oss_eval": adapt_healthbench,
    "healthbench_consensus": adapt_healthbench,
    "healthbench_hard": adapt_healthbench,
}


def adapt_pool(pool_name: str, raw: pl.DataFrame, s: MamabenchSettings) -> pl.DataFrame:
    """One adapted row per raw row, in upstream order; a repeated item id is refused."""
    pool = POOL_BY_NAME[pool_name]
    adapter = ADAPTERS[pool_name]
    seen: dict[str, str] = {}
    out = []
    for row in raw.sort("origin", "upstream_index", maintain_order=True).iter_rows(named=True):
        a = adapter(pool, json.loads(row["record"]), row, s)
        where = f"{row['origin']}#{row['upstream_index']}"
        if a.reason is None and a.item_id in seen:
            a = Adapted(a.item_id, a.upstream_id, "duplicate_id", f"same id as {seen[a.item_id]}", a.in_prescope)
        if a.reason is None:
            seen[a.item_id] = where
        elif pool.scoping == "prescoped" and a.in_prescope is False:
            a = Adapted(a.item_id, a.upstream_id, None, _also_unscorable(a), False)
        out.append(_row(pool, row, a))
    return pl.DataFrame(out, schema=ADAPTED_SCHEMA, orient="row")


def _also_unscorable(a: Adapted) -> str:
    return f"outside the pre-scope; also not scorable: {a.reason}" + (f" ({a.detail})" if a.detail else "")


def _status(pool: Pool, a: Adapted) -> str:
    if a.reason:
        return "refused"
    if pool.scoping == "prescoped":
        return "kept" if a.in_prescope else "out_of_scope"
    return "pending"


def _row(pool: Pool, row: dict[str, Any], a: Adapted) -> tuple:
    has_item = a.item is not None and a.reason is None
    return (
        pool.name,
        row["origin"],
        row["upstream_index"],
        a.upstream_id,
        a.item_id,
        _status(pool, a),
        a.reason,
        a.detail or None,
        a.in_prescope,
        a.defects,
        pool.classifier_mode if has_item and pool.classifier_mode else None,
        a.scope_input if has_item else None,
        a.join_key,
        a.prior_category,
        a.item.model_dump_json() if has_item else None,
        json.dumps([c.model_dump() for c in a.criteria], ensure_ascii=False) if has_item and a.criteria else None,
    )

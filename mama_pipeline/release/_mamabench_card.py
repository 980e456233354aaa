"""The release's dataset card (README.md), generated from the manifest's figures."""

from __future__ import annotations

from typing import Any

from mama_pipeline.circularity import circularity_notes_of
from mama_pipeline.common.markdown import Cells, table
from mama_pipeline.release._mamabench_inputs import ReleaseInputs
from mama_pipeline.release._mamaretrieval_card import held_out_section

CONFIG_TEXT = {
    "mcq": "multiple-choice items (`choices`, `answer_index`, `answer`)",
    "open_ended": "short-answer items with a reference answer",
    "open_ended_rubric": "HealthBench conversations graded against physician-written rubric criteria",
    "criteria": "rubric criterion text keyed by `criterion_id` (used by `open_ended_rubric`)",
    "calibration": "HealthBench physician meta-evaluation rows whose prompt is in scope (judge calibration)",
}


CELLS = Cells(none="–", digits=1, pipe="\\|")  # the dataset card's cells: a dash for none, pipes escaped


def _table(header: list[str], rows: list[list[Any]]) -> str:
    return table(header, rows, CELLS)


def _front_matter(configs: list[str]) -> str:
    lines = [
        "---",
        "pretty_name: mamabench",
        "license: other",
        "license_name: per-source",
        "language:",
        "- en",
        "task_categories:",
        "- question-answering",
        "- multiple-choice",
        "tags:",
        "- medical",
        "- maternal-health",
        "configs:",
    ]
    for c in configs:
        lines += [f"- config_name: {c}", "  data_files:", "  - split: test", f"    path: data/{c}/test.jsonl"]
    lines.append("---")
    return "\n".join(lines)


SCORING_SNIPPET = '''```python
from datasets import load_dataset

folder = "{folder}"  # this folder, or the repo id it is published under
mcq = load_dataset(folder, "mcq", split="test")


def answer(question: str, choices: list[str]) -> int:
    """Your model: the index of the option it chooses."""
    return 0


correct = [answer(item["question"], item["choices"]) == item["answer_index"] for item in mcq]
accuracy = sum(correct) / len(correct)
print(f"accuracy {{accuracy:.3f}} on {{len(correct)}} items")
```'''


def _scoring_section(m: dict[str, Any], listed: list[str]) -> list[str]:
    out = [
        "## Scoring a model",
        'Each track loads with `datasets.load_dataset(folder, track, split="test")`. '
        "Multiple choice (`mcq`) is scored by the chosen option's index against `answer_index`:",
    ]
    if "mcq" in listed:
        out.append(SCORING_SNIPPET.format(folder=f"{m['name']}-{m['version']}"))
    out.append(
        "`open_ended` items carry the clinician reference `answer`; mama_pipeline grades a short answer with its "
        "`llm.answer_grader` stage against it (correct 1, partially correct 0.5, incorrect 0). "
        "`open_ended_rubric` items are conversations (`question`: messages) with `rubrics` (`criterion_id`, "
        "`points`) whose text is in `criteria`; each criterion is judged met or not and the item scores "
        "HealthBench's way: met points over positive points, the mean clipped to [0, 1]. To score a model on "
        "every track as the project does, add it to `systems.entries` of the configuration "
        "(README: Answering systems)."
    )
    return out


def render_card(inp: ReleaseInputs, m: dict[str, Any]) -> str:
    every = ["mcq", "open_ended", "open_ended_rubric", "criteria"] + (
        ["calibration"] if inp.calibration is not None else []
    )
    every += [c.name for c in inp.extra]
    counts = {
        **m["items"],
        "criteria": m["criteria"],
        "calibration": m["calibration_rows"],
        **{c.name: c.frame.height for c in inp.extra},
    }
    # a track with no rows is an empty file, which load_dataset refuses ("corresponds to no data"): not listed
    configs = [c for c in every if counts.get(c)]
    empty = [c for c in every if not counts.get(c)]
    texts = {**CONFIG_TEXT, **{c.name: c.description for c in inp.extra}}
    parts = [
        _front_matter(configs),
        f"# {m['name']} {m['version']}",
        "A scope-filtered question-answering benchmark for maternal, neonatal, child, and sexual and "
        "reproductive health, assembled from expert-authored public sources by mama_pipeline. "
        f"{m['items']['total']:,} items; canonical item schema {m['schema_version']} "
        "(`schema/canonical_item.schema.json`).",
    ]
    if inp.classifier is not None and inp.classifier.smoke_test:
        parts.append(
            "> **Smoke-test build.** The scope verdicts in this folder come from the embedded "
            f"{inp.classifier.model} model, which exercises the pipeline and makes no clinical judgement. "
            "Do not use this build as a benchmark."
        )
    parts += [
        "## Configurations",
        _table(["config", "rows", "contents"], [[c, counts.get(c), texts[c]] for c in configs])
        + (f"\n\nNot listed, no rows: {', '.join(f'`{c}`' for c in empty)}." if empty else ""),
        *_scoring_section(m, configs),
        "## Sources and yield",
        "Every upstream row is accounted for: upstream rows = kept + refused + out of scope + unclassified. "
        "Yield is kept / upstream rows.",
        _table(
            [
                "pool",
                "track",
                "scoped by",
                "upstream rows",
                "kept",
                "refused",
                "out of scope",
                "unclassified",
                "yield %",
            ],
            [
                [
                    s["pool"],
                    s["track"],
                    s["scoped_by"],
                    s["upstream_rows"],
                    s["kept"],
                    s["refused"],
                    s["out_of_scope"],
                    s["unclassified"],
                    s["yield_pct"],
                ]
                for s in m["sources"]
            ],
        ),
        f"**Total kept: {sum(s['kept'] for s in m['sources']):,}.**",
        *_training_section(m),
        "## Items by scope category",
        _table(
            ["set type", "category", "items"],
            [[r["set_type"], r["category"] or "pre-scoped", r["items"]] for r in m["items_by_category"]],
        ),
    ]
    parts += _classifier_section(m)
    parts += [
        "## Refused and unclassified rows",
        "Multiple-choice items are refused only when letter scoring cannot represent them (more than one "
        "correct option, the correct text repeated under another letter, no usable options or answer). "
        "A row outside a pre-scoped pool's scope counts as out of scope whatever its defects, so refusals "
        "count only rows that would otherwise be kept or classified; `in prescope` tells whether the row "
        "matched its pool's scope rule.",
        _table(
            ["pool", "status", "reason", "in prescope", "rows"],
            [[r["pool"], r["status"], r["reason"], r["in_prescope"], r["rows"]] for r in m["refusals"]],
        )
        if m["refusals"]
        else "None.",
        "## Cosmetic defects (kept unchanged, counted)",
        _table(["pool", "defect", "items"], [[r["pool"], r["defect"], r["items"]] for r in m["cosmetic_defects"]])
        if m["cosmetic_defects"]
        else "None.",
    ]
    if inp.calibration is not None:
        parts += [
            "## Judge calibration file",
            f"`data/calibration` holds {m['calibration_rows']:,} HealthBench physician meta-evaluation rows whose "
            "prompt the scope classifier placed in scope. The physician labels are HealthBench's, not ours. "
            "These prompts are the consensus track's prompts: calibrating a judge here and then scoring the "
            "consensus track reuses the same prompts.",
        ]
    parts += [
        "## Provenance and licences",
        "Each row keeps the licence of its source; the AfriMed-QA rows are non-commercial (CC BY-NC-SA 4.0).",
        _table(
            ["pool", "licence", "file", "revision", "sha256"],
            [
                [s["pool"], s["licence"], f["origin"], f["revision"], f["sha256"][:16] + "…"]
                for s in m["sources"]
                for f in s["files"]
            ],
        ),
        "## Audit files",
        "`audit/scope_verdicts.jsonl` (every verdict with rationale and reasoning), `audit/accounting.jsonl` "
        "(the fate of every upstream row), `audit/agreement.json`, `audit/kenya_parity.json`, "
        "`audit/scope_classifier_prompt.txt`; `manifests/manifest.json` holds these figures and the sha256 "
        "of every file.",
    ]
    parts += [c.card_section.strip() for c in inp.extra if c.card_section]
    parts += [section.strip() for section in inp.card_sections]
    return "\n\n".join(parts) + "\n"


def _training_section(m: dict[str, Any]) -> list[str]:
    """Which pools are widely used for training, and the held-out split when one was taken out."""
    out = ["## Pools widely used for training"]
    pools = m.get("widely_trained_pools") or []
    if pools:
        datasets = {s["pool"]: s["dataset"] for s in m["sources"] if "dataset" in s}
        named = ", ".join(f"{p} ({datasets[p]})" if p in datasets else p for p in pools)
        out.append(
            f"{named} sit in many models' training data (setting `mamabench.widely_trained_pools`): a "
            "system may have seen these items, or their upstream source, in training. The systems report "
            "scores every pool separately, so a score on these pools well above the same system's score on "
            "the others reads as possible contamination, not skill."
        )
    else:
        out.append("None listed (setting `mamabench.widely_trained_pools`).")
    if m.get("circularity"):
        out += [
            "## Circularity",
            "Answering systems are graded by LLM stages: where a grader shares a system's model "
            "or model family, that system's grades (in the systems report, not in this folder) are flagged.",
            "\n".join(f"- {n}" for n in circularity_notes_of(m["circularity"])),
        ]
    if m.get("held_out"):
        out.append(
            held_out_section(
                m["held_out"],
                "items",
                "The configuration and category counts are of the "
                "public items; the sources and yield table counts every kept item, public and "
                "held out. Held-out items of public upstream pools can be re-assembled from "
                "the upstream files: the split guards against training on this release, not "
                "on the upstream.",
                heading="##",
            ).strip()
        )
    return out


def _classifier_section(m: dict[str, Any]) -> list[str]:
    c = m["classifier"]
    if c is None:
        return []
    out = [
        "## Scope classifier",
        f"Model `{c['model']}`, prompt `{c['prompt_id']}` (hash `{c['prompt_hash']}`), temperature from the "
        "stage configuration. Categories: MATERNAL, NEONATAL (0-28 days), CHILD_HEALTH (>28 days to <18 years), "
        "SEXUAL_AND_REPRODUCTIVE_HEALTH, NONE; the item's primary clinical concept decides, not the patient's "
        "demographics. Items whose call failed are listed as unclassified, never labelled by default.",
    ]
    a = m["agreement"]
    what = (
        ""
        if a is None
        else {
            "self_consistency": "Self-consistency (test-retest) of the classifier: its own model "
            f"`{a.get('reference_model')}` asked again with other decoding,",
            "cross_model": f"Cross-model agreement with another classifier model, `{a.get('reference_model')}`,",
        }.get(a.get("audit") or "", "Agreement with the reference classifier,")
    )
    if a is not None and a.get("note"):
        out.append(f"> **No classifier agreement figure.** {a['note']}")
    elif a is not None:
        out.append(
            f"{what} on {a['jointly_labelled']} jointly "
            f"labelled items of {', '.join(a.get('pools', []))} (seeded sample of {a['items']}): "
            f"{_pct(a['agreement_pct'])} (95% CI {_ci(a['agreement_ci95'])}), Cohen's kappa {a['cohens_kappa']}."
        )
    p = m["kenya_parity"]
    if p is not None:
        out.append(
            f"Parity with the labels the Kenya vignettes arrived with: {_pct(p['agreement_pct'])} "
            f"(95% CI {_ci(p['agreement_ci95'])}) on {p['jointly_labelled']} of {p['items']} items."
        )
    return out


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f}%"


def _ci(ci: Any) -> str:
    return "n/a" if not ci else f"{ci[0]:.1f}-{ci[1]:.1f}%"

"""The mamaretrieval dataset card (README.md), generated from the manifest's figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from mama_pipeline.circularity import QUERY_WRITER, circularity_notes_of
from mama_pipeline.common.markdown import table
from mama_pipeline.release._beir_layout import triple_configs
from mama_pipeline.release._configurations import ViewerConfig

CONFIGS = (  # viewer config -> file, description
    ViewerConfig(
        "judgments", "data/judgments.parquet", "graded relevance labels (D1-D4 and score 0-6) of the pooled pairs"
    ),
    ViewerConfig(
        "query_details",
        "data/queries.parquet",
        "the questions, with the chunk each was written from (provenance, not a label)",
    ),
    ViewerConfig("rankings", "data/rankings.parquet", "each pooled retriever's ranking down to the pool depth"),
    ViewerConfig("chunks", "data/chunks.parquet", "the corpus: the canonical chunk text that was retrieved and judged"),
    ViewerConfig(
        "judgment_reasoning", "audit/judgment_reasoning.parquet", "every label with the judge's reasoning (audit)"
    ),
    *triple_configs(None, "main track"),
)


def size_category(n: int) -> str:
    for bound, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < bound:
            return label
    return "1M<n<10M"


def front_matter(manifest: dict[str, Any], configs: Sequence[ViewerConfig]) -> str:
    meta = {
        "pretty_name": f"mamaretrieval {manifest['version']}",
        "license": manifest["licence"],
        "language": ["en"],
        "task_categories": ["text-retrieval"],
        "tags": ["medical", "maternal-health", "midwifery", "relevance-judgments", "rag"],
        "size_categories": [size_category(manifest["figures"]["judged_pairs"])],
        "configs": [
            {
                "config_name": c.name,
                "data_files": [{"split": c.split, "path": c.path}],
                **({"default": True} if i == 0 else {}),
            }
            for i, c in enumerate(configs)
        ],
    }
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n"


def listed_configs(
    configurations: Sequence[Any], rows: Mapping[str, int]
) -> tuple[list[ViewerConfig], list[ViewerConfig]]:
    """(listed, left out): a configuration whose file has no rows is left out of the card's config list, since
    ``load_dataset`` refuses it ("corresponds to no data"), and so is a track's ``<track>-corpus`` when the track
    has no queries."""
    every = [*CONFIGS, *(ViewerConfig(*c) for p in configurations for c in p.viewer_configs)]
    no_rows = {c.name for c in every if not rows[c.path]}
    left_out = [
        c
        for c in every
        if c.name in no_rows or (c.name.endswith("-corpus") and c.name.removesuffix("corpus") + "queries" in no_rows)
    ]
    return [c for c in every if c not in left_out], left_out


AUDIT_SENTENCES = {  # what each kind of reference measures, as the card states it
    "self_consistency": "the judge's own model `{model}` asked again ({decoding}): how stable its labels are, "
    "not whether another judge would give them",
    "cross_model": "another model, `{model}` ({decoding}), labelling the same pairs",
}


def _reliability_section(audits: list[dict[str, Any]] | None) -> str:
    head = "### Judge reliability\n\n"
    if audits is None:
        return head + "No reliability audit was run for this release.\n"
    lines = [
        f"- **{a['title'].capitalize()}** on a pilot sample of {a['pairs']} pairs: "
        + AUDIT_SENTENCES[a["audit"]].format(
            model=a["reference_judge"], decoding=a["decoding"] or "decoding not recorded"
        )
        + (f". **No figure.** {a['refused']}" if a["refused"] else ".")
        for a in audits
    ]
    shown = [a for a in audits if a["figures"] is not None]
    if not shown:
        return head + "\n".join(lines) + "\n"
    metrics = list(dict.fromkeys(m for a in shown for m in a["figures"]))
    header = ("measure", *(f"{a['title']}: {a['reference_judge']}" for a in shown))
    rows = [(m, *("n/a" if a["figures"].get(m) is None else a["figures"][m] for a in shown)) for m in metrics]
    return head + "\n".join(lines) + "\n\n" + table(header, rows) + "\n"


def _flag(flags: list[dict[str, str]], part: str) -> str:
    """`` (circular: ...)`` after a figure whose part shares the judge's model or family; empty otherwise."""
    notes = [x["note"] for x in flags if x["part"] == part]
    return f" ({'; '.join(notes)})" if notes else ""


def held_out_section(split: dict[str, Any], items: str, figures: str, heading: str = "###") -> str:
    """The card's statement of the declared held-out split (common/held_out.py); ``figures``: which of the
    card's figures count the public part only."""
    total = split["public_items"] + split["held_out_items"]
    return (
        f"{heading} Held-out split\n\n{split['held_out_items']} of {total} {items} are held out and not in "
        f"this folder: an item is held out when its `{split['id']}` hashes below the share, by the declared "
        f"rule `{split['rule']}` with share {split['share']} and salt `{split['salt']}` (also in the manifest). "
        f"{figures} The maintainer scores the held-out part privately, so a model trained on the public part "
        "shows a gap.\n"
    )


def _held_out_configurations(split: dict[str, Any]) -> str:
    """How the configurations were split, one sentence each (empty without configurations)."""
    return "".join(
        f" Configuration `{name}`: {c['held_out_items']} of {c['public_items'] + c['held_out_items']} "
        f"{c['items']} held out, by {c['id']}."
        for name, c in sorted(split.get("configurations", {}).items())
    )


def judging_section(judging: dict[str, Any], cuts: dict[str, int]) -> str:
    """How the labels were chosen: the strategy; under adaptive, the budget, the judged share and the labels'
    estimated recall of the pool's relevant pairs with its interval."""
    if judging["strategy"] == "full":
        return "### Judging\n\nStrategy `full`: every pooled pair was asked (the paper's protocol).\n"
    budget = judging["budget"]
    rows = [
        ("strategy", f"`adaptive`, method `{judging['method']}`"),
        ("budget", f"{budget} ({judging['budget_pairs']} pairs)" if budget is not None else "(none: stop rule)"),
        ("pairs asked by the rounds", judging["pairs_asked_by_rounds"]),
        ("remainder sample (uniform, of the rest)", judging["remainder_sample_pairs"]),
        ("judged share of the pool", judging["judged_share"]),
    ]
    for cut, e in judging["estimated_recall"].get("all", {}).items():
        value = (
            f"refused: {e['refused']}"
            if e["refused"]
            else f"{e['recall']} ({e['confidence']:.0%} interval {e['low']} to {e['high']})"
        )
        rows.append((f"estimated recall of the labels, {cut} (score >= {cuts[cut]})", value))
    return (
        "### Judging\n\n"
        + table(("item", "value"), rows)
        + "\n\nPooled pairs left unjudged are absent from the judgments: not labels, never non-relevant. The "
        "recall is the labels' share of the pool's relevant pairs, the rest estimated from the remainder sample "
        "(Clopper-Pearson); per tier in the manifest (`judging.estimated_recall`). Precision and recall at k need "
        "complete pools: read them beside Judged@k.\n"
    )


def render_card(manifest: dict[str, Any], configurations: Sequence[Any], rows: Mapping[str, int]) -> str:
    """The card; ``configurations`` (release ConfigurationPart) add viewer configs and a section each; ``rows``
    (release path -> rows) decides which configs are listed."""
    f = manifest["figures"]
    flags = manifest.get("circularity", [])
    corpus, judge, writer, retrieval = (
        manifest["corpus"],
        manifest["judge"],
        manifest["query_writer"],
        manifest["retrieval"],
    )
    cuts = manifest["thresholds"]
    adaptive = manifest.get("judging", {}).get("strategy") == "adaptive"
    listed, empty = listed_configs(configurations, rows)
    parts = [front_matter(manifest, listed), f"# mamaretrieval {manifest['version']}\n"]
    if manifest["smoke_test"]:
        parts.append(f"> **Smoke test, not a benchmark.** {manifest['note']}\n")
    parts.append(
        "Chunk-level graded relevance judgments for retrieval over maternal and newborn health guidelines. "
        "Each query was written from one guideline chunk; the chunks retrieved by the pooled retrievers were "
        "labelled by an LLM judge on four dimensions: D1 topic (same problem and timing window), D2 meaningful "
        "clinical content (0-2), D3 actionable guidance (0-2), D4 density for the query (0-2). "
        "score = D1 x (D2 + D3 + D4), 0 to 6; D2-D4 are null when D1 is false.\n"
    )
    parts.append(
        "## Data\n\n"
        + table(
            ("config", "split", "file", "rows", "content"),
            [(c.name, c.split, f"`{c.path}`", rows[c.path], c.description) for c in listed],
        )
        + "\n"
        + (f"\nNot listed, no rows: {', '.join(f'`{c.name}`' for c in empty)}.\n" if empty else "")
    )
    parts.append(benchmark_section(manifest, [c.name for c in listed]))
    parts.append(
        "## Figures\n\n"
        + table(
            ("figure", "value"),
            [
                ("queries", f["queries"]),
                ("sources that seeded queries", f["sources_with_queries"]),
                ("chunks (corpus)", f["chunks"]),
                ("sources in the corpus", f["chunk_sources"]),
                ("pooled pairs", f["pooled_pairs"]),
                ("pooled pairs per query", f["pooled_pairs_per_query"]),
                ("judged pairs", f["judged_pairs"]),
                (
                    "pooled pairs without a label ("
                    + ("unjudged or judge failures" if adaptive else "judge failures")
                    + ")",
                    f["pooled_pairs_without_label"],
                ),
                (f"lenient relevant pairs (score >= {cuts['lenient']})", f["lenient_relevant_pairs"]),
                (f"strict relevant pairs (score >= {cuts['strict']})", f["strict_relevant_pairs"]),
                ("queries with no lenient relevant chunk in the pool", f["queries_without_lenient_chunk"]),
                ("queries with no strict relevant chunk in the pool", f["queries_without_strict_chunk"]),
                ("labels that broke the D3 >= 1 => D2 >= 1 rule (D3 capped)", f["structural_violations"]),
            ],
        )
        + "\n"
    )
    if manifest.get("judging"):
        parts.append(judging_section(manifest["judging"], cuts))
    if manifest.get("held_out"):
        parts.append(
            held_out_section(
                manifest["held_out"],
                "queries",
                f"Every figure of this card is of the {manifest['held_out']['public_items']} "
                "public queries." + _held_out_configurations(manifest["held_out"]),
            )
        )
    parts.append(
        "### Score distribution\n\n"
        + table(("score", *f["score_distribution"].keys()), [("pairs", *f["score_distribution"].values())])
        + "\n"
    )
    parts.append("### Queries per tier\n\n" + table(("tier", "queries"), list(f["queries_by_tier"].items())) + "\n")
    parts.append(
        "## Provenance\n\n"
        + table(
            ("item", "value"),
            [
                ("version", manifest["version"]),
                ("previous version", manifest["previous_version"] or "(none)"),
                ("corpus version", f"`{corpus['version']}`"),
                (
                    "corpus source",
                    f"`{corpus['source']}`" + (f" at commit `{corpus['commit']}`" if corpus["commit"] else ""),
                ),
                ("corpus bundle sha256", f"`{corpus['bundle_sha256']}`" if corpus["bundle_sha256"] else "(unknown)"),
                ("canonical chunk text", corpus["canonical_text"]),
                (
                    "query writer",
                    f"{writer['model']} (temperature {writer['temperature']})" + _flag(flags, QUERY_WRITER),
                ),
                ("query writer prompt hash", f"`{writer['prompt_hash']}` ({writer['prompt_file']})"),
                ("judge", f"{judge['model']} (temperature {judge['temperature']})"),
                ("judge prompt hash (template + answer schema)", f"`{judge['prompt_hash']}` ({judge['prompt_file']})"),
                ("judge answer schema version", f"`{judge['answer_schema_version']}`"),
                ("pool depth", retrieval["pool_depth"]),
                ("seed chunk added to the pool", retrieval["include_seed_chunk"]),
            ],
        )
        + "\n"
    )
    parts.append(_reliability_section(manifest.get("judge_reliability")))
    flagged = any(x["part"].startswith("retrieval.") for x in flags)  # a column only when a retriever is flagged
    header = ("retriever", "kind", "rankings", *(("circularity",) * flagged))
    parts.append(
        "### Pooled retrievers\n\n"
        + table(
            header,
            [
                (
                    r["name"],
                    r.get("kind"),
                    f["rankings_by_retriever"].get(r["name"], 0),
                    *((_flag(flags, f"retrieval.{r['name']}").strip(" ()") or "none",) * flagged),
                )
                for r in retrieval["retrievers"]
            ],
        )
        + "\n\nTheir full configurations are in `manifest.json`.\n"
    )
    if flags:
        parts.append("### Circularity\n\n" + "".join(f"- {n}\n" for n in circularity_notes_of(flags)))
    parts.append(
        "## Caveats\n\n"
        "- Labels come from an LLM judge, not from clinicians; the judge's reasoning for every label is in "
        "`audit/judgment_reasoning.parquet` and its prompt in `audit/judge_relevance_prompt.txt`.\n"
        "- Only pooled chunks were judged: a chunk outside the pool is unjudged, not irrelevant. Hit rate and MRR "
        "are the most robust measures; precision and recall carry the pooling caveat.\n"
        "- Chunk ids are content-derived (first 16 hex of the SHA-256 of the canonical text): the chunk set, "
        "queries and labels form one version. Re-chunking changes ids and requires re-labelling.\n"
        "- `manifest.json` lists the SHA-256 and row count of every file; `mama-pipeline verify FOLDER` checks them.\n"
    )
    parts += [p.card_section for p in configurations if p.card_section]
    return "\n".join(parts)


ST_SNIPPET = """```python
from datasets import load_dataset
from sentence_transformers import SentenceTransformer
from sentence_transformers.evaluation import InformationRetrievalEvaluator

folder = "{folder}"  # this folder, or the repo id it is published under
corpus = load_dataset(folder, "corpus", split="corpus")
queries = load_dataset(folder, "queries", split="queries")
qrels = load_dataset(folder, "qrels", split="test")

# relevant: score >= {lenient} (the lenient cut); {strict} for the strict cut
relevant_docs = {{}}
for row in qrels:
    if row["score"] >= {lenient}:
        relevant_docs.setdefault(row["query-id"], set()).add(row["corpus-id"])

evaluator = InformationRetrievalEvaluator(
    queries=dict(zip(queries["_id"], queries["text"])),
    corpus=dict(zip(corpus["_id"], corpus["text"])),
    relevant_docs=relevant_docs,
    name="mamaretrieval",
)
model = SentenceTransformer("sentence-transformers/all-MiniLM-L6-v2")
results = evaluator(model)
print(results[evaluator.primary_metric])  # nDCG@10, binary relevance at the lenient cut
```"""

MTEB_SNIPPET = """```python
import mteb
from mteb.abstasks.retrieval import AbsTaskRetrieval
from mteb.abstasks.task_metadata import TaskMetadata
from sentence_transformers import SentenceTransformer

folder = "{folder}"  # this folder, or the repo id it is published under


class Mamaretrieval(AbsTaskRetrieval):
    metadata = TaskMetadata(
        name="mamaretrieval",
        description="Maternal and newborn health guideline retrieval, graded LLM relevance labels",
        dataset={{"path": folder, "revision": "{version}"}},
        type="Retrieval",
        category="t2t",
        modalities=["text"],
        eval_splits=["test"],
        eval_langs={{{subsets}}},
        main_score="ndcg_at_10",
    )


model = SentenceTransformer("sentence-transformers/all-MiniLM-L6-v2")
result = mteb.evaluate(model, Mamaretrieval(), cache=None)
for scores in result.task_results[0].scores["test"]:
    print(scores["hf_subset"], scores["ndcg_at_10"])  # nDCG@10 with the graded 0-6 labels as gains
```"""


def benchmark_section(manifest: dict[str, Any], listed: Sequence[str]) -> str:
    """How to load the BEIR/MTEB triple and score a model on it: the sentence-transformers and MTEB snippets."""
    cuts = manifest["thresholds"]
    folder = f"mamaretrieval-{manifest['version']}"
    subsets = ["default", *(t for t in ("robustness", "multipassage") if f"{t}-qrels" in listed)]
    tracks = {
        "default": "the main track",
        "robustness": "the query variants",
        "multipassage": "the multi-passage questions",
    }
    return (
        "## As a retrieval benchmark (BEIR / MTEB layout)\n\n"
        "The configs `corpus` (`_id`, `title`, `text`; split `corpus`), `queries` (`_id`, `text`; split "
        "`queries`) and `qrels` (`query-id`, `corpus-id`, `score`; split `test`) are the main track in the layout "
        "of BEIR and MIRIAD-200k; "
        + (
            ", ".join(f"`{t}-corpus`, `{t}-queries` and `{t}-qrels` are {tracks[t]}" for t in subsets[1:]) + " "
            "(the same corpus file); "
            if len(subsets) > 1
            else ""
        )
        + "MTEB reads each as an `hf_subset`. `text` is the canonical chunk text the retrievers searched and the "
        "judge read; `title` is empty, so no tool prepends anything to it. `score` is the judge's graded label "
        f"(0-6) of every judged pair, 0 included: relevant is score >= {cuts['lenient']} at the lenient cut and "
        f"score >= {cuts['strict']} at the strict cut. A chunk outside the pool is unjudged and counts as "
        "not relevant (pool bias; see the caveats).\n\n"
        f"sentence-transformers, with the relevance binarised at the lenient cut (score >= {cuts['lenient']}); "
        "queries without a lenient relevant chunk are left out by the evaluator:\n\n"
        + ST_SNIPPET.format(folder=folder, lenient=cuts["lenient"], strict=cuts["strict"])
        + "\n\n"
        "MTEB, with the graded labels as gains, over every query with a judged pair (one without a relevant "
        "chunk scores 0):\n\n"
        + MTEB_SNIPPET.format(
            folder=folder, version=manifest["version"], subsets=", ".join(f'"{s}": ["eng-Latn"]' for s in subsets)
        )
        + "\n"
    )

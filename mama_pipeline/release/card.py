"""The mamaretrieval dataset card (README.md), generated from the manifest's figures."""
from __future__ import annotations

from typing import Any, Sequence

import yaml

from mama_pipeline.circularity.flags import QUERY_WRITER, circularity_notes_of

CONFIGS = (  # viewer config -> file, description
    ("judgments", "data/judgments.parquet", "graded relevance labels (D1-D4 and score 0-6) of the pooled pairs"),
    ("queries", "data/queries.parquet", "the questions, with the chunk each was written from (provenance, not a label)"),
    ("rankings", "data/rankings.parquet", "each pooled retriever's ranking down to the pool depth"),
    ("chunks", "data/chunks.parquet", "the corpus: the canonical chunk text that was retrieved and judged"),
    ("judgment_reasoning", "audit/judgment_reasoning.parquet", "every label with the judge's reasoning (audit)"),
)


def size_category(n: int) -> str:
    for bound, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < bound:
            return label
    return "1M<n<10M"


def front_matter(manifest: dict[str, Any], extra_configs: Sequence[tuple[str, str, str]] = ()) -> str:
    meta = {
        "pretty_name": f"mamaretrieval {manifest['version']}",
        "license": manifest["licence"],
        "language": ["en"],
        "task_categories": ["text-retrieval"],
        "tags": ["medical", "maternal-health", "midwifery", "relevance-judgments", "rag"],
        "size_categories": [size_category(manifest["figures"]["judged_pairs"])],
        "configs": [
            {"config_name": name, "data_files": [{"split": "test", "path": path}], **({"default": True} if i == 0 else {})}
            for i, (name, path, _) in enumerate((*CONFIGS, *extra_configs))
        ],
    }
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n"


def _table(header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join("" if v is None else str(v).replace("|", "/") for v in row) + " |" for row in rows]
    return "\n".join(lines)


AUDIT_SENTENCES = {  # what each kind of reference measures, as the card states it
    "self_consistency": "the judge's own model `{model}` asked again ({decoding}): how stable its labels are, "
    "not whether another judge would give them",
    "cross_model": "another model, `{model}` ({decoding}), labelling the same pairs",
}


def _reliability_section(audits: list[dict[str, Any]] | None) -> str:
    head = "### Judge reliability\n\n"
    if audits is None:
        return head + "No reliability audit was run for this release.\n"
    lines = [f"- **{a['title'].capitalize()}** on a pilot sample of {a['pairs']} pairs: "
             + AUDIT_SENTENCES[a["audit"]].format(model=a["reference_judge"],
                                                  decoding=a["decoding"] or "decoding not recorded")
             + (f". **No figure.** {a['refused']}" if a["refused"] else ".") for a in audits]
    shown = [a for a in audits if a["figures"] is not None]
    if not shown:
        return head + "\n".join(lines) + "\n"
    metrics = list(dict.fromkeys(m for a in shown for m in a["figures"]))
    header = ("measure", *(f"{a['title']}: {a['reference_judge']}" for a in shown))
    rows = [(m, *("n/a" if a["figures"].get(m) is None else a["figures"][m] for a in shown)) for m in metrics]
    return head + "\n".join(lines) + "\n\n" + _table(header, rows) + "\n"


def _flag(flags: list[dict[str, str]], part: str) -> str:
    """`` (circular: ...)`` after a figure whose part shares the judge's model or family; empty otherwise."""
    notes = [x["note"] for x in flags if x["part"] == part]
    return f" ({'; '.join(notes)})" if notes else ""


def held_out_section(split: dict[str, Any], items: str, figures: str, heading: str = "###") -> str:
    """The card's statement of the declared held-out split (release/held_out.py); ``figures``: which of the
    card's figures count the public part only."""
    total = split["public_items"] + split["held_out_items"]
    return (f"{heading} Held-out split\n\n{split['held_out_items']} of {total} {items} are held out and not in "
            f"this folder: an item is held out when its `{split['id']}` hashes below the share, by the declared "
            f"rule `{split['rule']}` with share {split['share']} and salt `{split['salt']}` (also in the manifest). "
            f"{figures} The maintainer scores the held-out part privately, so a model trained on the public part "
            "shows a gap.\n")


def render_card(manifest: dict[str, Any], configurations: Sequence[Any] = ()) -> str:
    """The card; ``configurations`` (release ConfigurationPart) add viewer configs and a section each."""
    f = manifest["figures"]
    flags = manifest.get("circularity", [])
    corpus, judge, writer, retrieval = manifest["corpus"], manifest["judge"], manifest["query_writer"], manifest["retrieval"]
    cuts = manifest["thresholds"]
    parts = [front_matter(manifest, [c for p in configurations for c in p.viewer_configs]),
             f"# mamaretrieval {manifest['version']}\n"]
    if manifest["smoke_test"]:
        parts.append(f"> **Smoke test, not a benchmark.** {manifest['note']}\n")
    parts.append(
        "Chunk-level graded relevance judgments for retrieval over maternal and newborn health guidelines. "
        "Each query was written from one guideline chunk; the chunks retrieved by the pooled retrievers were "
        "labelled by an LLM judge on four dimensions: D1 topic (same problem and timing window), D2 meaningful "
        "clinical content (0-2), D3 actionable guidance (0-2), D4 density for the query (0-2). "
        "score = D1 x (D2 + D3 + D4), 0 to 6; D2-D4 are null when D1 is false.\n"
    )
    parts.append("## Data\n\n" + _table(("config", "file", "rows", "content"), [
        (name, f"`{path}`", f.get(key), text)
        for (name, path, text), key in zip(CONFIGS, ("judged_pairs", "queries", "rankings", "chunks", "judged_pairs"))
    ] + [(name, f"`{path}`", p.tables[path].height if path in p.tables else None, text)
         for p in configurations for name, path, text in p.viewer_configs]
    ) + "\n")
    parts.append("## Figures\n\n" + _table(("figure", "value"), [
        ("queries", f["queries"]),
        ("sources that seeded queries", f["sources_with_queries"]),
        ("chunks (corpus)", f["chunks"]),
        ("sources in the corpus", f["chunk_sources"]),
        ("pooled pairs", f["pooled_pairs"]),
        ("pooled pairs per query", f["pooled_pairs_per_query"]),
        ("judged pairs", f["judged_pairs"]),
        ("pooled pairs without a label (judge failures)", f["pooled_pairs_without_label"]),
        (f"lenient relevant pairs (score >= {cuts['lenient']})", f["lenient_relevant_pairs"]),
        (f"strict relevant pairs (score >= {cuts['strict']})", f["strict_relevant_pairs"]),
        ("queries with no lenient relevant chunk in the pool", f["queries_without_lenient_chunk"]),
        ("queries with no strict relevant chunk in the pool", f["queries_without_strict_chunk"]),
        ("labels that broke the D3 >= 1 => D2 >= 1 rule (D3 capped)", f["structural_violations"]),
    ]) + "\n")
    if manifest.get("held_out"):
        parts.append(held_out_section(manifest["held_out"], "queries",
                                      f"Every figure of this card is of the {manifest['held_out']['public_items']} "
                                      "public queries."))
    parts.append("### Score distribution\n\n" + _table(
        ("score", *f["score_distribution"].keys()), [("pairs", *f["score_distribution"].values())]
    ) + "\n")
    parts.append("### Queries per tier\n\n" + _table(("tier", "queries"), list(f["queries_by_tier"].items())) + "\n")
    parts.append("## Provenance\n\n" + _table(("item", "value"), [
        ("version", manifest["version"]),
        ("previous version", manifest["previous_version"] or "(none)"),
        ("corpus version", f"`{corpus['version']}`"),
        ("corpus source", f"`{corpus['source']}`" + (f" at commit `{corpus['commit']}`" if corpus["commit"] else "")),
        ("corpus bundle sha256", f"`{corpus['bundle_sha256']}`" if corpus["bundle_sha256"] else "(unknown)"),
        ("canonical chunk text", corpus["canonical_text"]),
        ("query writer", f"{writer['model']} (temperature {writer['temperature']})" + _flag(flags, QUERY_WRITER)),
        ("query writer prompt hash", f"`{writer['prompt_hash']}` ({writer['prompt_file']})"),
        ("judge", f"{judge['model']} (temperature {judge['temperature']})"),
        ("judge prompt hash (template + answer schema)", f"`{judge['prompt_hash']}` ({judge['prompt_file']})"),
        ("judge answer schema version", f"`{judge['answer_schema_version']}`"),
        ("pool depth", retrieval["pool_depth"]),
        ("seed chunk added to the pool", retrieval["include_seed_chunk"]),
    ]) + "\n")
    parts.append(_reliability_section(manifest.get("judge_reliability")))
    flagged = any(x["part"].startswith("retrieval.") for x in flags)  # a column only when a retriever is flagged
    header = ("retriever", "kind", "rankings", *(("circularity",) * flagged))
    parts.append("### Pooled retrievers\n\n" + _table(header, [
        (r["name"], r.get("kind"), f["rankings_by_retriever"].get(r["name"], 0),
         *((_flag(flags, f"retrieval.{r['name']}").strip(" ()") or "none",) * flagged))
        for r in retrieval["retrievers"]
    ]) + "\n\nTheir full configurations are in `manifest.json`.\n")
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

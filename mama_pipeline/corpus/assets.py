"""Dagster assets of the guideline corpus (group ``corpus``), thin over the pure modules."""

from pathlib import Path

import dagster as dg
import polars as pl

from mama_pipeline.common.file_ops import sha256_file
from mama_pipeline.common.metadata import md_table
from mama_pipeline.common.observed_inputs import observed_input
from mama_pipeline.corpus._bundle import load_bundle
from mama_pipeline.corpus._location import resolve_bundle
from mama_pipeline.corpus._sampling import sample_chunks
from mama_pipeline.corpus._watch import bundle_fingerprint
from mama_pipeline.resources import SettingsResource

GROUP = "corpus"
SETTINGS_READ = {  # the settings each asset reads, ``section`` or ``section.field`` (common/code_version.py)
    "corpus_chunks": "corpus.bundle corpus.canonical_text corpus.on_bad_chunk",
    "corpus_issues": "corpus.bundle corpus.canonical_text corpus.on_bad_chunk",
    "sampled_chunks": "corpus.min_body_words corpus.sampling_seed corpus.stratify_level corpus.tiers",
    "sampling_rejections": "corpus.min_body_words corpus.sampling_seed corpus.stratify_level corpus.tiers",
}
BUNDLE = "corpus_bundle"

corpus_bundle = observed_input(
    BUNDLE,
    GROUP,
    "The configured corpus bundle: sha256 of a local file, or the commit its hub revision points at.",
    lambda s: bundle_fingerprint(s.corpus.bundle, Path(s.config_dir)),
)


@dg.multi_asset(
    group_name=GROUP,
    deps=[BUNDLE],
    outs={
        "corpus_chunks": dg.AssetOut(
            description="One row per chunk of the bundle: canonical text, content-derived chunk id, source, page, "
            "breadcrumb and corpus_version.",
        ),
        "corpus_issues": dg.AssetOut(
            description="Chunks skipped as bad input, dropped as duplicate ids, or reported as duplicate texts, "
            "each with file, line and reason.",
        ),
    },
)
def corpus_chunks(context: dg.AssetExecutionContext, settings: SettingsResource):
    s = settings.get()
    c = s.corpus
    where = resolve_bundle(c.bundle, Path(s.config_dir))
    parsed = load_bundle(where.path, canonical=c.canonical_text, on_bad=c.on_bad_chunk)
    context.log.info(
        f"corpus {parsed.corpus_version}: {parsed.chunks.height} chunks from {where.path} "
        f"(bundle CIDs hash the {parsed.cid_convention} text; ids hash the {c.canonical_text} text)"
    )
    mismatched = parsed.issues.filter(pl.col("reason") == "cid_mismatch")
    if mismatched.height:
        first = mismatched.row(0, named=True)
        context.log.warning(
            f"{mismatched.height} chunks skipped: their CID does not fit the bundle's convention "
            f"({parsed.cid_convention}); e.g. {first['file']}:{first['line']}: {first['detail']}"
        )
    counts = parsed.counts()
    meta = {
        "corpus_version": parsed.corpus_version,
        "bundle": c.bundle,
        "bundle_commit": where.commit or "(local file)",
        "bundle_sha256": sha256_file(where.path),
        "canonical_text": c.canonical_text,
        **parsed.cid_metadata(),
        "on_bad_chunk": c.on_bad_chunk,
        "sources": parsed.chunks.get_column("source").n_unique(),
        **counts,
    }
    per_source = parsed.chunks.group_by("source").len("chunks").sort("source")
    yield dg.Output(
        parsed.chunks, output_name="corpus_chunks", metadata={**meta, "per_source": md_table(per_source, 100)}
    )
    yield dg.Output(
        parsed.issues,
        output_name="corpus_issues",
        metadata={"corpus_version": parsed.corpus_version, **counts, "issues": md_table(parsed.issues)},
    )


@dg.multi_asset(
    group_name=GROUP,
    ins={"corpus_chunks": dg.AssetIn("corpus_chunks")},
    outs={
        "sampled_chunks": dg.AssetOut(
            description="Seed chunks for query writing: per tiered source, a stratified sample by top-level "
            "section after boilerplate rejection.",
        ),
        "sampling_rejections": dg.AssetOut(
            description="Chunks of tiered sources rejected as boilerplate, each with its reason.",
        ),
    },
)
def sampled_chunks(settings: SettingsResource, corpus_chunks: pl.DataFrame):
    c = settings.get().corpus
    result = sample_chunks(corpus_chunks, c)
    report = result.report
    version = corpus_chunks.get_column("corpus_version")[0]
    reasons = result.rejections.group_by("reason").len("chunks").sort("reason")
    yield dg.Output(
        result.sampled,
        output_name="sampled_chunks",
        metadata={
            "corpus_version": version,
            "sampling_seed": c.sampling_seed,
            "stratify_level": c.stratify_level,
            "target": int(report.get_column("quota").sum()),
            "sampled": result.sampled.height,
            "shortfall": int(report.get_column("shortfall").sum()),
            "sources_short": int((report.get_column("shortfall") > 0).sum()),
            "per_source": md_table(report, 200),
        },
    )
    yield dg.Output(
        result.rejections,
        output_name="sampling_rejections",
        metadata={"corpus_version": version, "rejected": result.rejections.height, "by_reason": md_table(reasons)},
    )

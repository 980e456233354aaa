"""Dagster asset of the mamaretrieval scoreboard broken down by segment (group ``evaluation``)."""

import dagster as dg
import polars as pl

from mama_pipeline.common.metadata import md_table
from mama_pipeline.common.shared_inputs import QUERIES
from mama_pipeline.evaluation._evaluation_tables import CHUNKS_TABLE, PER_QUERY, judged_chunk_texts
from mama_pipeline.evaluation._segments import mamaretrieval_segments, segment_measures
from mama_pipeline.evaluation._stored_qrels import JUDGMENTS, StoredQrels
from mama_pipeline.resources import SettingsResource, StoreResource

SETTINGS_READ = {  # the settings each asset reads, ``section`` or ``section.field`` (common/code_version.py)
    "segment_scoreboard": "corpus.tiers evaluation.confidence evaluation.cutoffs evaluation.lenient evaluation.max_grade evaluation.strict evaluation.seed evaluation.segments evaluation.significance_measures",
    "segment_significance": "corpus.tiers evaluation.confidence evaluation.cutoffs evaluation.lenient evaluation.max_grade evaluation.strict evaluation.seed evaluation.segments evaluation.significance_measures",
}


@dg.multi_asset(
    group_name="evaluation",
    deps=[PER_QUERY, JUDGMENTS, CHUNKS_TABLE],
    ins={"queries": QUERIES},
    outs={
        "segment_scoreboard": dg.AssetOut(
            description="Each retriever's measures per segment: tier, source, "
            "query-length band, relevant-chunk-length band, with query counts."
        ),
        "segment_significance": dg.AssetOut(
            description="Paired tests between retrievers within each segment with "
            "at least evaluation.segments.min_queries queries."
        ),
    },
)
def segment_scoreboard(
    context: dg.AssetExecutionContext,
    settings: SettingsResource,
    store: StoreResource,
    queries: pl.DataFrame,
):
    s = settings.get()
    db = store.get()
    result = mamaretrieval_segments(
        db.read_table(PER_QUERY, where={"measure": segment_measures(s.evaluation)}),
        StoredQrels(db).judged_at(s.evaluation.lenient),  # all the segments take of the labels
        queries,
        judged_chunk_texts(db, s.evaluation.lenient),
        s.evaluation,
        list(s.corpus.tiers),
    )
    sizes = result.board.select("dimension", "segment", "n_queries", "tested").unique(maintain_order=True)
    context.log.info(
        f"segments: {sizes.height} in {sizes['dimension'].n_unique()} dimensions, "
        f"{int(sizes['tested'].sum())} with paired tests"
    )
    yield dg.Output(
        result.board,
        output_name="segment_scoreboard",
        metadata={
            "segments": md_table(sizes),
            "min_queries_for_tests": result.min_queries,
            "measures": ", ".join(result.measures),
        },
    )
    yield dg.Output(
        result.significance,
        output_name="segment_significance",
        metadata={
            "tests": result.significance.height,
            "segments_tested": result.significance.select("dimension", "segment").unique().height,
        },
    )


ASSETS = [segment_scoreboard]

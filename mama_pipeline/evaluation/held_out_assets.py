"""Dagster asset of the mamaretrieval scoreboard on the public and the held-out queries (group ``evaluation``)."""

import dagster as dg
import polars as pl

from mama_pipeline.common.metadata import md_table
from mama_pipeline.evaluation.assets import PER_QUERY
from mama_pipeline.evaluation.held_out_gaps import TEST, retrieval_gaps
from mama_pipeline.resources import SettingsResource, StoreResource

SETTINGS_READ = {  # the settings each asset reads, ``section`` or ``section.field`` (common/code_version.py)
    "held_out_scoreboard": "evaluation.resamples evaluation.seed evaluation.significance_measures release.held_out",
}


@dg.asset(
    group_name="evaluation",
    deps=[PER_QUERY],
    description="Per retriever and tested measure (evaluation.significance_measures): the mean on the public and "
    "on the held-out queries (release.held_out's rule on query_id), the gap (public - held out) and an unpaired "
    "permutation test, and the relative gap (paired on the query: the retriever's value minus the others' mean) "
    "with the same test; no figures without a held-out part.",
)
def held_out_scoreboard(settings: SettingsResource, store: StoreResource) -> dg.Output[pl.DataFrame]:
    s = settings.get()
    ev = s.evaluation
    values = store.get().read_table(PER_QUERY, where={"measure": ev.significance_measures})  # the tested measures'
    board = retrieval_gaps(values, ev.significance_measures, s.release.held_out.rule("query_id"), ev.resamples, ev.seed)
    return gap_output(s, board)


def gap_output(s, board: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    """A public vs held-out table with the split's settings, the test and the table in its metadata."""
    return dg.Output(
        board,
        metadata={
            "share": s.release.held_out.share,
            "salt": s.release.held_out.salt,
            "test": TEST,
            "gaps": md_table(board.drop("test")),
        },
    )


ASSETS = [held_out_scoreboard]

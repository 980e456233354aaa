"""Dagster asset of the mamaretrieval scoreboard on the public and the held-out queries (group ``evaluation``)."""

import dagster as dg
import polars as pl

from mama_pipeline.evaluation._evaluation_tables import PER_QUERY
from mama_pipeline.evaluation._held_out_gaps import gap_metadata, retrieval_gaps
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
    return dg.Output(board, metadata=gap_metadata(s.release.held_out, board))


ASSETS = [held_out_scoreboard]

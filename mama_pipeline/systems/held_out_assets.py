"""Dagster asset of the systems scoreboard on the public and the held-out items (group ``systems``)."""

import dagster as dg
import polars as pl

from mama_pipeline.evaluation import gap_metadata, system_gaps
from mama_pipeline.resources import SettingsResource

SETTINGS_READ = {  # the settings each asset reads, ``section`` or ``section.field`` (common/code_version.py)
    "system_held_out_scoreboard": "release.held_out systems.resamples systems.seed",
}


@dg.asset(
    group_name="systems",
    ins={"grades": dg.AssetIn("system_grades")},
    description="Per system and track: the score on the public and on the held-out items (release.held_out's rule "
    "on item_id; a HealthBench prompt by its prompt id), the gap (public - held out) and an unpaired permutation "
    "test, over scored items (the rubric track's unclipped example scores, as the scoreboard's mean), and the "
    "relative gap (paired on the item: the system's score minus the other systems' mean) with the same test; no "
    "figures without a held-out part.",
)
def system_held_out_scoreboard(settings: SettingsResource, grades: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    s = settings.get()
    board = system_gaps(grades, s.release.held_out.rule("item_id"), s.systems.resamples, s.systems.seed)
    return dg.Output(board, metadata=gap_metadata(s.release.held_out, board))


ASSETS = [system_held_out_scoreboard]

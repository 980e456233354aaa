"""The reports index asset (group ``reports``), thin over :mod:`mama_pipeline.reports._index`."""

import dagster as dg

from mama_pipeline.common.file_ops import atomic_file
from mama_pipeline.reports._index import INDEX, PAGES, index_entries, render_index
from mama_pipeline.resources import SettingsResource, data_path

SETTINGS_READ = {  # the settings each asset reads, ``section`` or ``section.field`` (common/code_version.py)
    "reports_index": "",
}


@dg.asset(
    group_name="reports",
    deps=[dg.AssetKey(p.written_by) for p in PAGES],
    description="data/reports/index.html: every report page, linked, with its headline figures.",
)
def reports_index(settings: SettingsResource) -> dg.MaterializeResult:
    reports = data_path(settings, "reports")
    with atomic_file(reports / INDEX) as fh:
        fh.write(render_index(reports))
    pages = [str(p) for _, p in index_entries(reports) if p is not None]
    return dg.MaterializeResult(
        metadata={"index": str(reports / INDEX), "pages": len(pages), "linked": ", ".join(pages) or "none"}
    )

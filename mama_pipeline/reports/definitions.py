"""The reports group's Dagster definitions: the index of report pages."""
import dagster as dg

from mama_pipeline.reports.assets import reports_index

defs = dg.Definitions(assets=[reports_index])

"""The one-command demo: every asset in one process, one line per step, a summary at the end."""

from mama_pipeline.common.face import lazy_face

DEFINED_IN = {  # public name -> the module that defines it (common/face.py)
    "SummaryContext": "mama_pipeline.demo._summary",
    "area_lines": "mama_pipeline.demo._summary",
    "failed_steps_of_run": "mama_pipeline.demo._runner",
    "planned_bounds": "mama_pipeline.demo._sent_tally",
    "planned_sent_lines": "mama_pipeline.demo._sent_tally",
    "render": "mama_pipeline.demo._summary",
    "result_paths": "mama_pipeline.demo._summary",
    "run_in_process": "mama_pipeline.demo._runner",
    "sent_since": "mama_pipeline.demo._sent_tally",
    "skipped_lines": "mama_pipeline.demo._runner",
    "tag_runs": "mama_pipeline.demo._sent_tally",
    "ui_command": "mama_pipeline.demo._summary",
    "unchanged_count": "mama_pipeline.demo._runner",
    "unchanged_lines": "mama_pipeline.demo._runner",
}
__all__ = [
    "SummaryContext",
    "area_lines",
    "failed_steps_of_run",
    "planned_bounds",
    "planned_sent_lines",
    "render",
    "result_paths",
    "run_in_process",
    "sent_since",
    "skipped_lines",
    "tag_runs",
    "ui_command",
    "unchanged_count",
    "unchanged_lines",
]
__getattr__, __dir__ = lazy_face(__name__, DEFINED_IN)

"""``mama-pipeline doctor``: the preflight of a configuration, one line per check, then a summary."""

from __future__ import annotations

from mama_pipeline.preflight._preflight_checks import run_checks, summary
from mama_pipeline.settings import config_path_from_env, load_settings


def doctor(timeout_s: float = 60.0) -> int:
    """Run every check of ``MAMA_CONFIG``'s settings; 0 only when none fails. Writes nothing into the data folder."""
    s = load_settings()  # a bad configuration file is one line and exit status 2 (run_cli)
    print(f"doctor: {config_path_from_env()} (data folder {s.data_path})", flush=True)
    checks = []
    from mama_pipeline.plan import prediction_or_reason

    for check in run_checks(s, prediction_or_reason(s), timeout_s):
        print(check.line, flush=True)
        checks.append(check)
    print(summary(checks), flush=True)
    return 1 if any(c.status == "FAIL" for c in checks) else 0

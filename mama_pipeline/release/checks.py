"""Asset checks of the release stage."""

import dagster as dg

from mama_pipeline.release._mamaretrieval import NAME
from mama_pipeline.release._verify import verify_release
from mama_pipeline.release.assets import mamaretrieval_release
from mama_pipeline.resources import SettingsResource


@dg.asset_check(asset=mamaretrieval_release, blocking=True)
def mamaretrieval_release_verifies(settings: SettingsResource) -> dg.AssetCheckResult:
    """Every file of the folder matches the SHA-256 and row count in its manifest."""
    s = settings.get()
    result = verify_release(s.release_path(NAME, s.release.mamaretrieval_version))
    return dg.AssetCheckResult(
        passed=result.ok,
        metadata={
            "files_checked": len(result.checked),
            "problems": dg.MetadataValue.md("\n".join(f"- {p}" for p in result.problems) or "(none)"),
            "files_not_in_manifest": len(result.unlisted),
        },
    )


CHECKS = [mamaretrieval_release_verifies]

"""Materialise the corpus and multipassage groups in a fresh process (partitions come from MAMA_CONFIG at import).

Usage: ``MAMA_CONFIG=cfg.yaml python -m mama_pipeline_tests.multipassage.dagster_run OUT.json [ROUNDS]``.
Writes each step's success, check results and materialisation metadata as JSON; ROUNDS (default 1)
repeats the whole sequence (a second round shows what is reused).
"""
import json
import sys

import dagster as dg

from mama_pipeline.corpus.definitions import defs as corpus_defs
from mama_pipeline.multipassage.definitions import defs
from mama_pipeline.release.definitions import defs as release_defs
from mama_pipeline.resources import shared_resources
from mama_pipeline.settings import load_settings

RELEASE = [a for a in release_defs.assets if "mamaretrieval_multipassage_release" in
           {k.to_user_string() for k in a.keys}]


def main(out_path: str, rounds: int = 1) -> None:
    assets = [*corpus_defs.assets, *defs.assets, *RELEASE]
    checks = [*defs.asset_checks, *[c for c in release_defs.asset_checks if "multipassage" in str(c.check_keys)]]
    resources = shared_resources()
    report: dict = {"steps": []}

    def run(selection, partition=None):
        result = dg.materialize([*assets, *checks], resources=resources, selection=selection,
                                partition_key=partition, raise_on_error=False)
        step = {"selection": str(selection), "partition": partition, "success": result.success,
                "checks": {c.check_name: c.passed for c in result.get_asset_check_evaluations()}, "metadata": {}}
        for mat in result.get_asset_materialization_events():
            m = mat.materialization
            step["metadata"][m.asset_key.to_user_string()] = {k: str(v.value) for k, v in m.metadata.items()}
        if not result.success:
            step["errors"] = [str(e.event_specific_data.error)[:4000] for e in result.all_events
                              if e.is_failure and getattr(e.event_specific_data, "error", None)]
        report["steps"].append(step)

    def checked(*names):
        return dg.AssetSelection.assets(*names) | dg.AssetSelection.checks_for_assets(*names)

    for _ in range(rounds):
        run(dg.AssetSelection.assets("corpus_chunks", "corpus_issues", "sampled_chunks", "sampling_rejections"))
        run(checked("multipassage_candidates", "multipassage_decisions", "multipassage_questions"))
        for name in load_settings().retrieval.retriever_names:
            run(dg.AssetSelection.assets("multipassage_rankings"), name)
        run(checked("multipassage_pool", "multipassage_labels", "multipassage_scoreboard", "multipassage_per_query",
                    "multipassage_significance", "multipassage_report", *[k.to_user_string() for a in RELEASE
                                                                           for k in a.keys]))
    with open(out_path, "w") as fh:
        json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1)

"""The ``llm_plan`` asset (group ``plan``): the bill of every LLM stage, to materialise before a run."""

import dagster as dg
import polars as pl

from mama_pipeline.common.metadata import md_table
from mama_pipeline.plan._plan_text import bills_frame, plan_bills, render
from mama_pipeline.resources import SettingsResource
from mama_pipeline.settings import config_path_from_env

GROUP = "plan"
SETTINGS_READ = {  # the settings each asset reads, ``section`` or ``section.field`` (common/code_version.py)
    "llm_plan": "calibration corpus judging llm mamabench multipassage queries.max_words retrieval.audit "
    "retrieval.audited retrieval.include_seed_chunk retrieval.pool_depth retrieval.pooled retrieval.retrievers "
    "robustness systems",
}
# what the plan reads of the store (plan/_planners.py): each LLM-calling asset's inputs, and those assets and
# judged_set and the submissions' scores, whose requests fill the answer cache and the label store it consults
PLANNED_READS = (
    "audit_judgments",
    "audit_pool",
    "calibration_judge_labels",
    "calibration_side_file",
    "corpus_chunks",
    "generated_queries",
    "judge_pilot_sample",
    "judged_labels",
    "judged_set",
    "judgments",
    "mamabench_adapted",
    "mamabench_agreement",
    "mamabench_criteria",
    "mamabench_scope_verdicts",
    "multipassage_candidates",
    "multipassage_fact_labels",
    "multipassage_labels",
    "multipassage_pool",
    "multipassage_questions",
    "pooled_pairs",
    "query_variants",
    "rankings",
    "reference_judgments",
    "sampled_chunks",
    "submission_scores",
    "system_answers",
    "system_grades",
    "systems_items",
    "variant_labels",
    "variant_rankings",
)


@dg.asset(
    group_name=GROUP,
    deps=PLANNED_READS,  # it runs when one of them does, and is skipped when they come back unchanged
    description="Before a run: per LLM stage and answering system, the most requests it can send (a bound from the "
    "configuration and the raw inputs), and the requests it would send and those cached, prompt tokens, completion "
    "cap and expected time, from the inputs in the store; nothing is sent. "
    "Materialise it first (mama-pipeline plan prints the same for a selection).",
)
def llm_plan(context: dg.AssetExecutionContext, settings: SettingsResource) -> dg.Output[pl.DataFrame]:
    bills = plan_bills(settings.config_path or str(config_path_from_env()))
    text = render(bills)
    context.log.info("\n" + text)
    frame = bills_frame(bills)
    planned = frame.filter(pl.col("requests").is_not_null())
    return dg.Output(
        frame,
        metadata={
            "plan": dg.MetadataValue.md("```\n" + text + "\n```"),
            "table": md_table(frame.drop("tokens_counted_by", "latency_from")),
            "requests_to_send": int(planned["to_send"].sum()),
            "requests_bound": int(frame["bound"].sum()),  # of the stage plans bounded
            "prompt_tokens_bound": int(frame["bound_tokens"].sum()),  # of the stage plans whose tokens are bounded
            "stage_plans_not_bounded": frame.filter(pl.col("bound").is_null()).height,
            "prompt_tokens_to_send": int(planned["prompt_tokens"].sum()),
            "stages_over_budget": frame.filter(pl.col("over_budget") != "").height,
            "stage_plans_not_computed": frame.height - planned.height,
        },
    )

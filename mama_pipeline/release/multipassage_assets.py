"""The release asset of the multi-passage configuration (group ``release``) and its verification check."""
import dagster as dg
import polars as pl

from mama_pipeline.judging.rubric import RELEVANCE_JUDGE, label_prompt_hash, output_model
from mama_pipeline.multipassage.assets import RANKINGS_TABLE, stored_track_rankings
from mama_pipeline.multipassage.prompts import verifier_model, verifier_template, writer_model, writer_template
from mama_pipeline.release.assets import GROUP, producer
from mama_pipeline.release.mamaretrieval import PromptInfo
from mama_pipeline.release.multipassage import NAME, MultipassageInputs, write_multipassage_release
from mama_pipeline.release.verify import verify_release
from mama_pipeline.resources import SettingsResource, StoreResource
from mama_pipeline.settings import PipelineSettings


def prompt_infos(s: PipelineSettings) -> tuple[PromptInfo, PromptInfo, PromptInfo]:
    """The shipped prompts of the question writer, the verifier and the judge."""
    mp = s.multipassage
    w, v, j = getattr(s.llm, mp.writer_stage), getattr(s.llm, mp.verifier_stage), s.llm.judge
    w_tpl, v_tpl = writer_template(mp.max_words, w.reasoning == "json_field"), verifier_template(
        v.reasoning == "json_field")
    j_model = output_model(j.reasoning)
    return (
        PromptInfo(w_tpl, writer_model(w.reasoning == "json_field").model_json_schema(), w_tpl.hash, w.temperature,
                   w.embedded),
        PromptInfo(v_tpl, verifier_model(v.reasoning == "json_field").model_json_schema(), v_tpl.hash, v.temperature,
                   v.embedded),
        PromptInfo(RELEVANCE_JUDGE, j_model.model_json_schema(), label_prompt_hash(RELEVANCE_JUDGE, j_model),
                   j.temperature, j.embedded),
    )


@dg.asset(
    group_name=GROUP,
    deps=[dg.AssetKey(RANKINGS_TABLE)],
    ins={"chunks": dg.AssetIn("corpus_chunks"), "questions": dg.AssetIn("multipassage_questions"),
         "decisions": dg.AssetIn("multipassage_decisions"), "labels": dg.AssetIn("multipassage_labels"),
         "scoreboard": dg.AssetIn("multipassage_scoreboard")},
    description="The multi-passage configuration of the mamaretrieval release under "
    "<data_dir>/releases/mamaretrieval-multipassage/<version>: verified questions only, their rankings, labels, "
    "diversity qrels and card section.",
)
def mamaretrieval_multipassage_release(
    context: dg.AssetExecutionContext, settings: SettingsResource, store: StoreResource, chunks: pl.DataFrame,
    questions: pl.DataFrame, decisions: pl.DataFrame, labels: pl.DataFrame, scoreboard: pl.DataFrame,
) -> dg.MaterializeResult:
    s = settings.get()
    pooled = s.multipassage.pool_retrievers or s.retrieval.pooled
    writer, verifier, judge = prompt_infos(s)
    inputs = MultipassageInputs(
        version=s.release.mamaretrieval_version, chunks=chunks, questions=questions, decisions=decisions,
        rankings=stored_track_rankings(store.get(), pooled, questions), labels=labels, writer=writer, verifier=verifier,
        judge=judge, retrievers=pooled, pool_depth=s.multipassage.pool_depth, lenient=s.judging.lenient_cut,
        strict=s.judging.strict_cut, scoreboard=scoreboard, producer=producer(),
    )
    folder = s.release_path(NAME, inputs.version)
    manifest = write_multipassage_release(folder, inputs)
    context.log.info(f"{NAME} {inputs.version} written to {folder}")
    f = manifest["figures"]
    return dg.MaterializeResult(metadata={
        "path": dg.MetadataValue.path(str(folder)), "version": inputs.version, "smoke_test": manifest["smoke_test"],
        "questions": f["questions"], "not_released": f["not_released"], "judged_pairs": f["judged_pairs"],
        "files": len(manifest["files"]),
    })


@dg.asset_check(asset=mamaretrieval_multipassage_release, blocking=True)
def multipassage_release_verifies(settings: SettingsResource) -> dg.AssetCheckResult:
    """Every file of the folder matches the SHA-256 and row count in its manifest."""
    s = settings.get()
    result = verify_release(s.release_path(NAME, s.release.mamaretrieval_version))
    return dg.AssetCheckResult(passed=result.ok, metadata={
        "files_checked": len(result.checked),
        "problems": dg.MetadataValue.md("\n".join(f"- {p}" for p in result.problems) or "(none)"),
    })


ASSETS = [mamaretrieval_multipassage_release]
CHECKS = [multipassage_release_verifies]

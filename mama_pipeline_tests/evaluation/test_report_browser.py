"""Both HTML reports in headless Chromium: the page renders, every image loads, no console errors."""

from pathlib import Path

import polars as pl

from mama_pipeline.evaluation._beir_evaluation import beir_report_inputs, evaluate_beir, load_benchmark
from mama_pipeline.evaluation._retrieval_page import write_report
from mama_pipeline.evaluation.settings import BeirBenchmarkSettings
from mama_pipeline_tests.evaluation.test_report import full_inputs, graded  # noqa: F401 - fixture
from mama_pipeline_tests.headless_browser import check_page, find_chromium

SAMPLE = Path(__file__).resolve().parents[2] / "mama_pipeline" / "sample_data" / "upstream" / "miriad_beir_sample"


def beir_page(folder: Path) -> Path:
    """The BEIR report of the bundled MIRIAD sample, for two rankings: the gold passage first, or fifth."""
    cfg = BeirBenchmarkSettings(
        name="miriad-sample", path=str(SAMPLE), retrievers=["gold-first", "gold-fifth"], max_queries=40
    )
    loaded = load_benchmark(cfg, Path)
    gold = loaded.benchmark.qrels.group_by("query_id", maintain_order=True).agg(pl.col("doc_id").first())
    others = loaded.benchmark.corpus["doc_id"].head(6).to_list()
    rows = []
    for q, doc in gold.iter_rows():
        fillers = [d for d in others if d != doc][:5]
        rows += [(q, "gold-first", r + 1, d) for r, d in enumerate([doc, *fillers[:4]])]
        rows += [(q, "gold-fifth", r + 1, d) for r, d in enumerate([*fillers[:4], doc])]
    rankings = pl.DataFrame(rows, schema=["query_id", "retriever", "rank", "chunk_id"], orient="row")
    result = evaluate_beir(loaded, rankings, cfg, resamples=300)
    return write_report(beir_report_inputs(result, cfg, None, 300, 0), folder)


def assert_renders(page: Path, headings: list[str]) -> None:
    check = check_page(page, find_chromium())
    assert check.errors == []
    assert check.text_chars > 500 and check.title
    assert [h for h in headings if h not in check.headings] == []
    assert check.images and all(i["loaded"] and i["width"] > 100 for i in check.images), check.images
    files = {p.name for p in page.parent.glob("*.png")}
    assert {i["src"] for i in check.images} == files  # every figure written is shown, and none is missing


def test_mamaretrieval_report_renders_in_chromium(tmp_path, graded):  # noqa: F811
    page = write_report(full_inputs(graded), tmp_path / "mamaretrieval")
    assert_renders(
        page,
        [
            "Scoreboard",
            "Paired significance",
            "Per-tier results",
            "Per-source results",
            "Label distribution",
            "Judge reliability",
            "Pool completeness",
        ],
    )


def test_beir_report_renders_in_chromium(tmp_path):
    page = beir_page(tmp_path / "beir")
    html = page.read_text()
    assert "{" not in html.split("</style>")[1] and "40 queries (first 40)" in html
    assert_renders(
        page,
        [
            "Scoreboard",
            "Paired significance",
            "Measures by cutoff k",
            "Label distribution",
            "Leak audit (queries found verbatim in a relevant document)",
        ],
    )


def test_a_missing_image_is_reported(tmp_path, graded):  # noqa: F811
    page = write_report(full_inputs(graded), tmp_path / "broken")
    (page.parent / "per_source.png").unlink()
    check = check_page(page, find_chromium())
    assert [i["src"] for i in check.images if not i["loaded"]] == ["per_source.png"]
    assert any("per_source.png" in e or "ERR_FILE_NOT_FOUND" in e for e in check.errors), check.errors

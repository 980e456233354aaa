"""Bad input at every entry point: one line naming the file (and line or record) and the reason, exit status 2.

Each case writes one missing, empty, truncated, wrongly encoded or wrongly shaped
input and either runs a ``mama-pipeline`` command on it (exit status 2, one stderr
line, no traceback) or calls the loader a Dagster asset calls (an InputError
whose message is one line).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import mama_pipeline
from mama_pipeline.calibration._meta_eval import read_meta_eval
from mama_pipeline.cli import main as cli_main
from mama_pipeline.clinician._annotations import parse_export, read_export_file
from mama_pipeline.clinician._label_studio import LabelStudio
from mama_pipeline.common import input_errors
from mama_pipeline.common.input_errors import InputError, describe, run_cli
from mama_pipeline.corpus._bundle import format_chunk, load_bundle
from mama_pipeline.mamabench._pools import POOL_BY_NAME
from mama_pipeline.mamabench._sources import load_pool
from mama_pipeline.mamabench.settings import SourceLocation
from mama_pipeline.robustness._abbreviations import load_table
from mama_pipeline_tests.support.llm_stages import with_embedded

SAMPLE = Path(mama_pipeline.__file__).resolve().parent / "sample_data"
UP = SAMPLE / "upstream"
BEIR = UP / "miriad_beir_sample"
GOOD_CHUNK = format_chunk("msf", 1, ["Bleeding"], "Give oxytocin 10 IU intramuscularly within one minute of birth.")


@dataclass(frozen=True)
class Case:
    id: str
    file: str  # the bad file or folder, relative to the case folder
    content: bytes | Callable[[Path], None] | None  # None: the input does not exist
    run: Callable[[Path], list[str] | Callable[[], object]]  # argv for mama-pipeline, or a loader call
    reason: str  # substring of the message


def text(s: str) -> bytes:
    return s.encode("utf-8")


def half(path: Path) -> bytes:
    data = path.read_bytes()
    return data[: len(data) // 2]


def chop_last_line(path: Path) -> bytes:
    data = path.read_bytes().rstrip(b"\n")
    return data[: data.rfind(b"\n") + 1] + data[data.rfind(b"\n") + 1 :][:25]


def latin1(path: Path, at: int = 40) -> bytes:
    data = path.read_bytes()
    return data[:at] + b"\xe9" + data[at:]


# -- entry points -------------------------------------------------------------
def bundle(name: str) -> Callable[[Path], Callable[[], object]]:
    return lambda d: lambda: load_bundle(d / name)


def pool(name: str, file: str) -> Callable[[Path], Callable[[], object]]:
    def run(d: Path) -> Callable[[], object]:
        return lambda: load_pool(POOL_BY_NAME[name], SourceLocation(path=str(d / file)), Path)

    run.pool = name
    return run


def trec(run: str = "run.txt", qrels: str = "qrels.txt") -> Callable[[Path], list[str]]:
    return lambda d: ["eval", "trec", "--run", str(d / run), "--qrels", str(d / qrels)]


def audit(folder: str = "beir") -> Callable[[Path], list[str]]:
    return lambda d: ["eval", "audit", "--benchmark", str(d / folder)]


def verify(folder: str = "release") -> Callable[[Path], list[str]]:
    return lambda d: ["verify", str(d / folder)]


def imported(run: str) -> Callable[[Path], list[str]]:
    return lambda d: [
        "eval",
        "beir",
        "--benchmark",
        str(d / "imported" / "beir"),
        "--retriever",
        "a",
        "--out",
        str(d / "out"),
        "--config",
        str(d / "imported" / "config.yaml"),
    ]


def config(file: str = "config.yaml") -> Callable[[Path], list[str]]:
    return lambda d: ["eval", "export", "--out", str(d / "out"), "--config", str(d / file)]


# -- builders of bad folders --------------------------------------------------
def beir_with(name: str, content: bytes) -> Callable[[Path], None]:
    def build(folder: Path) -> None:
        (folder / "qrels").mkdir(parents=True)
        for rel in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
            (folder / rel).write_bytes((BEIR / rel).read_bytes())
        (folder / name).write_bytes(content)

    return build


def beir_dev_split_only(folder: Path) -> None:
    beir_with("qrels/dev.tsv", (BEIR / "qrels" / "test.tsv").read_bytes())(folder)
    (folder / "qrels" / "test.tsv").unlink()


def beir_parquet_with_bad_corpus(folder: Path) -> None:
    for sub in ("corpus", "queries", "qrels"):
        (folder / sub).mkdir(parents=True)
    (folder / "corpus" / "corpus-00000.parquet").write_bytes(b"PAR1 this is not a parquet file")


def release_with(manifest: bytes | None) -> Callable[[Path], None]:
    def build(folder: Path) -> None:
        folder.mkdir()
        (folder / "data.jsonl").write_text('{"a": 1}\n')
        if manifest is not None:
            (folder / "manifest.json").write_bytes(manifest)

    return build


def imported_run(name: str, write: Callable[[Path], None]) -> Callable[[Path], None]:
    """The sample BEIR benchmark, a configuration naming retriever ``a`` = an imported run file, and that file."""

    def build(folder: Path) -> None:
        beir_with("corpus.jsonl", (BEIR / "corpus.jsonl").read_bytes())(folder / "beir")
        (folder / "config.yaml").write_text(
            with_embedded(
                f"data_dir: {folder / 'data'}\nretrieval:\n  retrievers:\n"
                f"    - {{name: a, kind: imported, params: {{path: {folder / name}}}}}\n"
            )
        )
        write(folder / name)

    return build


BEIR_QUERY, BEIR_DOC = "68_406582_8_1", "68_406582_8"


def trec_run_with_problems(path: Path) -> None:
    path.write_text(
        f"{BEIR_QUERY} Q0 {BEIR_DOC} 1 2.0 a\n{BEIR_QUERY} Q0 nope 2 1.0 a\n"
        f"{BEIR_QUERY} Q0 {BEIR_DOC} 3 0.5 a\nq_unknown Q0 {BEIR_DOC} 1 high a\n"
    )


def parquet_run_with_problems(path: Path) -> None:
    import polars as pl

    pl.DataFrame(
        {
            "query_id": [BEIR_QUERY, BEIR_QUERY, "q_unknown"],
            "chunk_id": [BEIR_DOC, "nope", BEIR_DOC],
            "score": [2.0, float("nan"), 1.0],
        }
    ).write_parquet(path)


RUN = "q1 Q0 d1 1 2.5 bm25\nq1 Q0 d2 2 1.5 bm25\n"
QRELS = "q1 0 d1 1\n"
RUN_AND_QRELS = {"run.txt": text(RUN), "qrels.txt": text(QRELS)}


def trec_files(**bad: bytes | None) -> Callable[[Path], None]:
    def build(folder: Path) -> None:
        folder.mkdir()
        for name, content in {**RUN_AND_QRELS, **bad}.items():
            if content is not None:
                (folder / name).write_bytes(content)

    return build


def ls_export(edit: Callable[[list[dict]], None]) -> Callable[[Path], None]:
    """The clinician fixture's relevance export (one annotator) with ``edit`` applied."""

    def build(path: Path) -> None:
        from mama_pipeline_tests.clinician.fixtures import export_file_tasks

        tasks = export_file_tasks("relevance", {"one": 11})
        edit(tasks)
        path.write_text(json.dumps(tasks))

    return build


def clinician_labels(d: Path) -> Callable[[], object]:
    return lambda: parse_export(read_export_file(d / "export.json"), str(d / "export.json"))


def label_studio_at_web_page(d: Path) -> Callable[[], object]:
    """Label Studio's client against a server answering every request with the case's HTML page (HTTP 502), served
    under the case folder's path so that the URL in the message names it."""

    def call() -> object:
        body = (d / "page.html").read_bytes()

        class Page(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(502)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        with ThreadingHTTPServer(("127.0.0.1", 0), Page) as httpd:
            threading.Thread(target=httpd.serve_forever, daemon=True).start()
            try:
                with LabelStudio(f"http://127.0.0.1:{httpd.server_port}{d}", "token") as ls:
                    return ls.whoami()
            finally:
                httpd.shutdown()

    return call


BAD_GATEWAY = (
    "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n"
    "<center><h1>502 Bad Gateway</h1></center>\n<hr><center>nginx</center>\n"
    + "<!-- padding -->\n" * 5
    + "</body>\n</html>\n"
)

CASES = [
    # corpus bundle
    Case(
        "bundle-missing", "chunks_for_rag.txt", None, bundle("chunks_for_rag.txt"), "corpus bundle file does not exist"
    ),
    Case(
        "bundle-empty", "chunks_for_rag.txt", b"", bundle("chunks_for_rag.txt"), "not a corpus bundle: no <sep>[SOURCE"
    ),
    Case(
        "bundle-truncated-header",
        "chunks_for_rag.txt",
        text(GOOD_CHUNK + "<sep>[SOURCE:msf|PA"),
        bundle("chunks_for_rag.txt"),
        ":4: malformed header",
    ),
    Case(
        "bundle-truncated-after-header",
        "chunks_for_rag.txt",
        text(GOOD_CHUNK + "<sep>[SOURCE:msf|PAGE:2]\n"),
        bundle("chunks_for_rag.txt"),
        ":4: empty chunk",
    ),
    Case(
        "bundle-latin1",
        "chunks_for_rag.txt",
        text(GOOD_CHUNK).replace(b"oxytocin", b"oxytoc\xedn"),
        bundle("chunks_for_rag.txt"),
        ":1: bytes that are not UTF-8: byte 0xed at line 3",
    ),
    Case(
        "bundle-csv-shaped",
        "chunks_for_rag.txt",
        b"chunk_id,text\nabc,hello\n",
        bundle("chunks_for_rag.txt"),
        ":1: not a corpus bundle",
    ),
    Case(
        "bundle-parquet-garbage",
        "chunks.parquet",
        b"PAR1 not really",
        bundle("chunks.parquet"),
        "not a corpus bundle: cannot read as parquet",
    ),
    # the nine upstream pools
    Case("medmcqa-missing", "validation.parquet", None, pool("medmcqa", "validation.parquet"), "does not exist"),
    Case(
        "medmcqa-truncated",
        "validation.parquet",
        lambda p: p.write_bytes(half(UP / "medmcqa/validation-sample-120.parquet")),
        pool("medmcqa", "validation.parquet"),
        "cannot be read as .parquet",
    ),
    Case("medqa-empty", "test.jsonl", b"", pool("medqa_usmle", "test.jsonl"), "no records"),
    Case(
        "medqa-truncated",
        "test.jsonl",
        lambda p: p.write_bytes(chop_last_line(UP / "medqa_usmle/us_4_options_test-sample-150.jsonl")),
        pool("medqa_usmle", "test.jsonl"),
        "test.jsonl:150: not valid JSON",
    ),
    Case(
        "afrimedqa-mcq-latin1",
        "afrimedqa.csv",
        lambda p: p.write_bytes(latin1(UP / "afrimedqa/afrimedqa_v2_sample_10.csv", 400)),
        pool("afrimedqa_mcq", "afrimedqa.csv"),
        "bytes that are not UTF-8",
    ),
    Case(
        "afrimedqa-saq-wrong-columns",
        "saq.csv",
        b"question,answer\nWhat?,That.\n",
        pool("afrimedqa_saq", "saq.csv"),
        "missing column(s)",
    ),
    Case("kenya-empty", "vignettes.csv", b"", pool("kenya_vignettes", "vignettes.csv"), "empty CSV file"),
    Case(
        "kenya-truncated",
        "vignettes.csv",
        lambda p: p.write_bytes(chop_last_line(UP / "kenya_vignettes/vignettes-sample-60.csv")),
        pool("kenya_vignettes", "vignettes.csv"),
        "where the header has",
    ),
    Case(
        "whb-truncated",
        "whb.json",
        lambda p: p.write_bytes(half(UP / "whb/WHB_subset.json")),
        pool("whb", "whb.json"),
        "not valid JSON",
    ),
    Case("whb-object-not-list", "whb.json", b'{"question": "x"}', pool("whb", "whb.json"), "expected a JSON list"),
    Case(
        "oss-eval-latin1",
        "oss.jsonl",
        lambda p: p.write_bytes(latin1(UP / "healthbench/oss_eval-sample-40.jsonl")),
        pool("healthbench_oss_eval", "oss.jsonl"),
        "oss.jsonl:1: bytes that are not UTF-8",
    ),
    Case(
        "consensus-array-records",
        "consensus.jsonl",
        b"[1, 2]\n",
        pool("healthbench_consensus", "consensus.jsonl"),
        "line 1: expected a JSON object",
    ),
    Case(
        "hard-missing-key",
        "hard.jsonl",
        b'{"prompt_id": "x"}\n',
        pool("healthbench_hard", "hard.jsonl"),
        "line 1: missing column(s)",
    ),
    # the HealthBench meta-evaluation file (calibration side-file)
    Case(
        "meta-eval-empty",
        "meta.jsonl",
        b"\n",
        lambda d: lambda: read_meta_eval(d / "meta.jsonl"),
        "meta.jsonl: no rows",
    ),
    Case(
        "meta-eval-latin1",
        "meta.jsonl",
        b'{"prompt_id": "caf\xe9"}\n',
        lambda d: lambda: read_meta_eval(d / "meta.jsonl"),
        "meta.jsonl:1: bytes that are not UTF-8",
    ),
    # the robustness track's abbreviation table (robustness.abbreviations)
    Case(
        "abbreviations-latin1",
        "abbreviations.tsv",
        b"long_form\tshort_form\nblood pressure\tBP\ncaf\xe9\tcf\n",
        lambda d: lambda: load_table(d / "abbreviations.tsv"),
        "abbreviations.tsv:3: bytes that are not UTF-8",
    ),
    # BEIR folders through `mama-pipeline eval audit`
    Case("beir-missing", "beir", None, audit(), "BEIR folder does not exist"),
    Case("beir-empty-corpus", "beir", beir_with("corpus.jsonl", b""), audit(), "corpus.jsonl: no corpus records"),
    Case(
        "beir-truncated-corpus",
        "beir",
        beir_with("corpus.jsonl", b'{"_id": "d1", "text": "abc"}\n{"_id": "d2", "te'),
        audit(),
        "corpus.jsonl:2: not valid JSON",
    ),
    Case(
        "beir-latin1-queries",
        "beir",
        beir_with("queries.jsonl", b'{"_id": "q1", "text": "caf\xe9"}\n'),
        audit(),
        "queries.jsonl:1: bytes that are not UTF-8",
    ),
    Case(
        "beir-qrels-wrong-header",
        "beir",
        beir_with("qrels/test.tsv", b"qid docid rel\nq1 d1 1\n"),
        audit(),
        "test.tsv:1: header must be",
    ),
    Case(
        "beir-only-dev-split",
        "beir",
        beir_dev_split_only,
        lambda d: ["eval", "beir", "--benchmark", str(d / "beir"), "--retriever", "bm25", "--out", str(d / "out")],
        "qrels: no qrels of split 'test'; the folder has split(s) dev: pass --split dev",
    ),
    Case("beir-qrels-empty", "beir", beir_with("qrels/test.tsv", b""), audit(), "test.tsv: empty qrels file"),
    Case("beir-parquet-garbage", "beir", beir_parquet_with_bad_corpus, audit(), "cannot be read as parquet"),
    # TREC runs and qrels through `mama-pipeline eval trec`
    Case(
        "run-missing",
        "trec",
        trec_files(**{"run.txt": None}),
        trec("trec/run.txt", "trec/qrels.txt"),
        "run.txt: run file does not exist",
    ),
    Case(
        "run-empty",
        "trec",
        trec_files(**{"run.txt": b""}),
        trec("trec/run.txt", "trec/qrels.txt"),
        "run.txt: empty run file",
    ),
    Case(
        "run-truncated",
        "trec",
        trec_files(**{"run.txt": text(RUN + "q1 Q0 d3 3")}),
        trec("trec/run.txt", "trec/qrels.txt"),
        "run.txt:3: expected 6 fields",
    ),
    Case(
        "run-latin1",
        "trec",
        trec_files(**{"run.txt": text(RUN) + b"q2 Q0 d\xe9 1 1.0 bm25\n"}),
        trec("trec/run.txt", "trec/qrels.txt"),
        "run.txt:3: bytes that are not UTF-8",
    ),
    Case(
        "run-bad-score",
        "trec",
        trec_files(**{"run.txt": b"q1 Q0 d1 1 high bm25\n"}),
        trec("trec/run.txt", "trec/qrels.txt"),
        "run.txt:1: rank '1' must be an integer and score 'high' a number",
    ),
    Case(
        "qrels-missing",
        "trec",
        trec_files(**{"qrels.txt": None}),
        trec("trec/run.txt", "trec/qrels.txt"),
        "qrels.txt: qrels file does not exist",
    ),
    Case(
        "qrels-empty",
        "trec",
        trec_files(**{"qrels.txt": b"\n\n"}),
        trec("trec/run.txt", "trec/qrels.txt"),
        "qrels.txt: empty qrels file",
    ),
    Case(
        "qrels-graded-as-text",
        "trec",
        trec_files(**{"qrels.txt": b"q1 0 d1 relevant\n"}),
        trec("trec/run.txt", "trec/qrels.txt"),
        "qrels.txt:1: relevance 'relevant' is not an integer",
    ),
    # imported run files (retriever kind imported) through `mama-pipeline eval beir`
    Case(
        "imported-trec-several-problems",
        "imported",
        imported_run("run.trec", trec_run_with_problems),
        imported("run.trec"),
        "run.trec:line 2: unknown chunk id 'nope' (and 3 more problems)",
    ),
    Case(
        "imported-trec-latin1",
        "imported",
        imported_run(
            "run.trec", lambda p: p.write_bytes(text(f"{BEIR_QUERY} Q0 {BEIR_DOC} 1 2.0 a\n") + b"q\xe9 Q0 d 2 1.0 a\n")
        ),
        imported("run.trec"),
        "run.trec:2: bytes that are not UTF-8: byte 0xe9 at column 2",
    ),
    Case(
        "imported-parquet-several-problems",
        "imported",
        imported_run("run.parquet", parquet_run_with_problems),
        imported("run.parquet"),
        "run.parquet:row 2: unknown chunk id 'nope' (and 2 more problems)",
    ),
    # release folders through `mama-pipeline verify`
    Case("release-missing", "release", None, verify(), "release folder does not exist"),
    Case("release-no-manifest", "release", release_with(None), verify(), "no manifest"),
    Case("release-manifest-empty", "release", release_with(b""), verify(), "manifest.json:1: not valid JSON"),
    Case(
        "release-manifest-truncated",
        "release",
        release_with(b'{"files": {"data.jsonl": {"sha256": "ab'),
        verify(),
        "manifest.json:1: not valid JSON",
    ),
    Case(
        "release-manifest-latin1",
        "release",
        release_with(b'{"files": {"caf\xe9.jsonl": "00"}}'),
        verify(),
        "manifest.json:1: bytes that are not UTF-8",
    ),
    Case(
        "release-manifest-files-list",
        "release",
        release_with(b'{"files": ["data.jsonl"]}'),
        verify(),
        "'files' must map file paths",
    ),
    # configuration files through `mama-pipeline eval export --config`
    Case("config-missing", "config.yaml", None, config(), "configuration file does not exist"),
    Case(
        "config-truncated",
        "config.yaml",
        b"corpus:\n  on_bad_chunk: skip\n  tiers: {high: {quota: 3, sources: [a, b",
        config(),
        "config.yaml:3: configuration file is not valid YAML",
    ),
    Case(
        "config-latin1",
        "config.yaml",
        b"corpus:\n  bundle: caf\xe9.txt\n",
        config(),
        "config.yaml:2: bytes that are not UTF-8",
    ),
    Case("config-empty", "config.yaml", b"# settings to come\n", config(), "config.yaml: configuration file is empty"),
    Case("config-list", "config.yaml", b"- corpus\n- judging\n", config(), "top level must be a mapping, not list"),
    Case("config-unknown-key", "config.yaml", b"corpus:\n  bundel: x.txt\n", config(), "key 'corpus.bundel'"),
    Case(
        "config-near-miss-key",
        "config.yaml",
        b"data_dir: data\nllm:\n  judge:\n    modle: qwen\n",
        config(),
        "config.yaml:4: configuration file: key 'llm.judge.modle' (line 4): Extra inputs are not permitted; "
        "did you mean 'model'?",
    ),
    Case(
        "config-moved-corpus-sensor-interval",
        "config.yaml",
        b"data_dir: data\nrelease:\n  mamabench_version: 1.0.0\n  corpus_sensor_interval_s: 600\n",
        config(),
        "config.yaml:4: configuration file: key 'release.corpus_sensor_interval_s' (line 4): moved to "
        "corpus.sensor_interval_s",
    ),
    Case(
        "config-moved-mamabench-sources-cron",
        "config.yaml",
        b"release:\n  mamabench_sources_cron: '0 5 * * *'\n",
        config(),
        "config.yaml:2: configuration file: key 'release.mamabench_sources_cron' (line 2): moved to "
        "mamabench.sources_cron",
    ),
    Case(
        "config-near-miss-key-in-a-retriever",
        "config.yaml",
        b"retrieval:\n  retrievers:\n    - name: a\n      kind: dense\n      params: {query_promt: x}\n",
        config(),
        "config.yaml:5: configuration file: key 'retrieval.retrievers.0.params.query_promt' (line 5): Extra inputs "
        "are not permitted; did you mean 'query_prompt'?",
    ),
    Case(
        "config-dense-retriever-not-configured",
        "config.yaml",
        lambda target: target.write_text(
            with_embedded(
                "retrieval:\n  retrievers:\n    - {name: bm25, kind: bm25}\nmultipassage:\n  dense_retriever: octen\n"
            )
        ),
        config(),
        "key 'multipassage.dense_retriever' (line ",
    ),
    Case(
        "config-stage-without-endpoint",
        "config.yaml",
        lambda target: target.write_text(
            with_embedded("data_dir: data\n").replace("rubric_judge:\n    embedded: true\n", "rubric_judge: {}\n")
        ),
        config(),
        "configuration file: key 'llm.rubric_judge' (line ",
    ),
    Case(
        "config-wrong-type",
        "config.yaml",
        b"corpus:\n  min_body_words: many\n  on_bad_chunk: sometimes\n",
        config(),
        "key 'corpus.min_body_words'",
    ),
    # Label Studio exports and servers of the clinician loop
    Case(
        "ls-export-result-not-object",
        "export.json",
        ls_export(lambda t: t[1]["annotations"][0].update(result=["yes"])),
        clinician_labels,
        "task 1 (id 2), annotation 0: a result entry is not an object",
    ),
    Case(
        "ls-export-string-task-id",
        "export.json",
        ls_export(lambda t: t[0].update(id="t-1")),
        clinician_labels,
        "task 0 (id 't-1'): task id 't-1' is not int",
    ),
    Case(
        "ls-export-string-annotation-id",
        "export.json",
        ls_export(lambda t: t[3]["annotations"][0].update(id="a-4")),
        clinician_labels,
        "task 3 (id 4), annotation 0: annotation id 'a-4' is not int",
    ),
    Case(
        "ls-export-data-disagrees-with-key",
        "export.json",
        ls_export(lambda t: t[2]["data"].update(query_id="q_00001")),
        clinician_labels,
        "task 2 (id 3): data (query_id 'q_00001', chunk_id 'cccccccccccccccc') disagrees with its task_key "
        "'relevance:q_00003:cccccccccccccccc'",
    ),
    Case(
        "ls-server-answers-html",
        "page.html",
        text(BAD_GATEWAY),
        label_studio_at_web_page,
        "GET /api/current-user/whoami failed with HTTP 502 (text/html): '<html> <head><title>502 Bad Gateway",
    ),
]


def test_the_sweep_covers_every_kind_of_bad_input():
    assert len(CASES) >= 30
    kinds = {c.id.split("-")[0] for c in CASES}
    assert {"bundle", "beir", "run", "qrels", "release", "config"} <= kinds
    assert {getattr(c.run, "pool", None) for c in CASES} - {None} == set(POOL_BY_NAME)  # all nine pools
    assert {kind for c in CASES for kind in ("missing", "empty", "truncated", "latin1") if kind in c.id} == {
        "missing",
        "empty",
        "truncated",
        "latin1",
    }


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_naming_file_and_reason(case: Case, tmp_path: Path, capsys, monkeypatch):
    monkeypatch.setenv("MAMA_DATA_DIR", str(tmp_path / "data"))
    target = tmp_path / case.file
    if callable(case.content):
        case.content(target)
    elif case.content is not None:
        target.write_bytes(case.content)
    action = case.run(tmp_path)
    if isinstance(action, list):
        raw: list[str] = []  # the error's own message, before the command line folds it onto one line
        monkeypatch.setattr(input_errors, "describe", lambda exc: raw.append(str(exc)) or describe(exc))
        code = cli_main(action)
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert code == 2, err
        assert len(lines) == 1 and "Traceback" not in err, err
        assert lines[0].startswith(("mama-pipeline eval: error: ", "ERROR ")), err  # verify's own prefix
        assert all("\n" not in m for m in raw), raw
        message = lines[0]
    else:
        with pytest.raises(InputError) as info:
            action()
        message = str(info.value)
        assert "\n" not in message, message
    assert str(tmp_path) in message, message  # names the file
    assert case.reason in message, message


def test_materialize_reports_a_bad_configuration_before_running_anything(tmp_path, monkeypatch, capsys):
    config = tmp_path / "config.yaml"
    config.write_text("corpus:\n  tiers: [")
    monkeypatch.setenv("MAMA_CONFIG", str(config))
    assert cli_main(["materialize", "--select", "corpus_chunks"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"mama-pipeline: error: {config}:2: configuration file is not valid YAML") and "\n" not in err


@pytest.mark.parametrize(
    "select, reason", [("a,b", "Invalid selection string"), ("no_such_asset", "['no_such_asset'] were selected")]
)
def test_materialize_refuses_a_bad_selection_in_one_line(tmp_path, monkeypatch, capsys, select, reason):
    monkeypatch.setenv("MAMA_DATA_DIR", str(tmp_path / "data"))
    assert cli_main(["materialize", "--select", select, "--executor", "in_process"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"mama-pipeline: error: --select {select!r}: ") and reason in err and "\n" not in err


def test_run_cli_names_the_file_of_an_os_error_and_lets_bugs_through(capsys):
    def missing() -> int:
        raise FileNotFoundError(2, "No such file or directory", "/data/x.parquet")

    assert run_cli("prog", missing) == 2
    assert capsys.readouterr().err == "prog: error: /data/x.parquet: No such file or directory\n"
    assert run_cli("prog", lambda: (_ for _ in ()).throw(KeyError("no retriever named 'x'")), also=(KeyError,)) == 2
    assert capsys.readouterr().err == "prog: error: no retriever named 'x'\n"
    with pytest.raises(RuntimeError):
        run_cli("prog", lambda: (_ for _ in ()).throw(RuntimeError("a bug keeps its traceback")))


def test_materialize_prints_a_failed_steps_reason_and_claims_only_what_this_run_did(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("MAMA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    config = tmp_path / "config.yaml"
    monkeypatch.setenv("MAMA_CONFIG", str(config))
    argv = ["materialize", "--select", "key:mamabench_raw_whb", "--executor", "in_process"]
    config.write_text(with_embedded(f"mamabench: {{sources: {{whb: {{path: {UP / 'whb' / 'WHB_subset.json'}}}}}}}\n"))
    assert cli_main(argv) == 0  # an earlier run materialised it
    capfd.readouterr()
    (tmp_path / "whb.json").write_bytes(b'[{"question": "caf\xe9"}]')
    config.write_text(with_embedded(f"mamabench: {{sources: {{whb: {{path: {tmp_path / 'whb.json'}}}}}}}\n"))
    assert cli_main(argv) == 1
    lines = capfd.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if "FAILED mamabench_raw_whb" in " ".join(line.split()))
    assert f"{tmp_path / 'whb.json'}" in lines[at + 1] and "bytes that are not UTF-8" in lines[at + 1]
    [group] = [line for line in lines if line.strip().startswith("mamabench ")]
    assert "0 of" in group and "materialised this run; 1 from earlier runs" in group, group

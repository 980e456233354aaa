"""``mama-pipeline submit`` end to end: a real store, the fault-injecting fake LLM server, the Dagster instance
under the data directory, and the command line as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from mama_pipeline.cli import main
from mama_pipeline.judging._rubric import RELEVANCE_JUDGE, label_prompt_hash, output_model
from mama_pipeline.store import Store
from mama_pipeline_tests.retrieval.fixtures import chunks_frame, queries_frame
from mama_pipeline_tests.robustness.test_assets import synthetic_judgments
from mama_pipeline_tests.support.llm_stages import with_embedded
from mama_pipeline_tests.systems import fixtures as sfx

RETRIEVAL_CONFIG = """
data_dir: {data}
llm:
  judge: {{base_urls: ["{url}"], model: fake-judge, backoff_base_s: 0.01}}
retrieval:
  retrievers:
    - {{name: bm25, kind: bm25}}
  pool_depth: 3
evaluation:
  cutoffs: [1, 3, 5]
  significance_measures: ["Success(rel=3)@3"]
  headline_measure: "Success(rel=3)@3"
"""


@pytest.fixture
def env(tmp_path, monkeypatch):
    for var in ("MAMA_DATA_DIR", "DAGSTER_HOME"):
        monkeypatch.delenv(var, raising=False)

    def configure(text: str) -> tuple[Path, Store]:
        config = tmp_path / "config.yaml"
        config.write_text(with_embedded(text))
        monkeypatch.setenv("MAMA_CONFIG", str(config))
        return config, Store(tmp_path / "data" / "mama.duckdb")

    return configure


def partitions(tmp_path: Path) -> list[str]:
    with dg.DagsterInstance.from_config(str(tmp_path / "data" / "dagster_home")) as instance:
        return instance.get_dynamic_partitions("submissions")


def retrieval_store(tmp_path: Path, url: str, env) -> tuple[Store, list[str], pl.DataFrame]:
    _, store = env(RETRIEVAL_CONFIG.format(data=tmp_path / "data", url=url))
    chunks, queries = chunks_frame(), queries_frame()
    ids = chunks["chunk_id"].to_list()
    store.write_table("corpus_chunks", chunks)
    store.write_table("generated_queries", queries)
    # the configured judge labelled chunks 0 and 1 of every query (its pool)
    pool = pl.DataFrame({"query_id": [q for q in queries["query_id"] for _ in range(2)], "chunk_id": ids[:2] * 5})
    judgments = synthetic_judgments(pool, label_prompt_hash(RELEVANCE_JUDGE, output_model("server")))
    store.write_table("judgments", judgments)
    variant = {
        "variant_id": "q_00002~typo",
        "parent_id": "q_00002",
        "kind": "typo",
        "method": "noise",
        "query_text": "treatmnet of eclampsia",
        "parent_text": "treatment of eclampsia",
        "tier": "very_high",
        "source": "sample-guideline",
    }
    store.write_table("query_variants", pl.DataFrame([variant]))
    return store, ids, judgments


def test_a_run_is_validated_its_holes_judged_once_and_scored_with_judged_at_k(tmp_path, env, fake_llm, capsys):
    store, ids, judgments = retrieval_store(tmp_path, fake_llm.url, env)
    run = tmp_path / "my-run.trec"
    lines = [  # top 3 of q_00001: one judged chunk, two holes; q_00002's variant: its parent's labels, one hole;
        f"q_00001 Q0 {ids[2]} 1 9.0 mine",
        f"q_00001 Q0 {ids[0]} 2 8.0 mine",
        f"q_00001 Q0 {ids[3]} 3 7.0 mine",
        f"q_00001 Q0 {ids[4]} 4 6.0 mine",  # rank 4: below the pool depth, never judged
        f"q_00002~typo Q0 {ids[1]} 1 3.0 mine",
        f"q_00002~typo Q0 {ids[5]} 2 2.5 mine",
    ]
    run.write_text("\n".join(lines) + "\n")
    holes = {("q_00001", ids[2]), ("q_00001", ids[3]), ("q_00002", ids[5])}  # by hand: unlabelled, rank <= 3
    before = fake_llm.stats()["chat_calls"]
    assert (
        main(
            [
                "submit",
                str(run),
                "--kind",
                "retrieval",
                "--name",
                "My retriever",
                "--model",
                "m1",
                "--link",
                "https://example.org/m1",
                "--date",
                "2026-11-30",
            ]
        )
        == 0
    )
    assert fake_llm.stats()["chat_calls"] - before == len(holes)  # exactly the holes, one request each
    terminal = capsys.readouterr()
    assert " - DEBUG - " not in terminal.out + terminal.err  # Dagster's event lines stay in the event log
    assert "STEP_START" not in terminal.out + terminal.err and "scoring" in terminal.out
    (record,) = store.read_table("submissions").to_dicts()
    sid = record["submission_id"]
    with dg.DagsterInstance.from_config(str(tmp_path / "data" / "dagster_home")) as instance:
        (made,) = [r for r in instance.get_runs() if r.tags.get("mama/submission") == sid]
        event = instance.get_latest_materialization_event(dg.AssetKey("submission_scores"))
    from mama_pipeline.definitions import defs

    # built through mama_pipeline.definitions (dg.materialize's ephemeral job had no code version)
    version = defs.resolve_asset_graph().get(dg.AssetKey("submission_scores")).code_version
    assert made.job_name != "__ephemeral_asset_job__" and event.run_id == made.run_id
    assert version and event.asset_materialization.tags.get("dagster/code_version") == version
    assert sid.startswith("sub-") and len(sid) == 20 and partitions(tmp_path) == [sid]
    assert (record["name"], record["model"], record["submitted_on"], record["judge_model"]) == (
        "My retriever",
        "m1",
        "2026-11-30",
        "fake-judge",
    )
    files = json.loads(record["files_json"])
    assert files[0]["name"] == "my-run.trec"
    assert (tmp_path / "data" / "submissions" / sid / "my-run.trec").read_bytes() == run.read_bytes()
    labels = store.read_table("judgment_labels")
    assert set(labels.select("query_id", "chunk_id").iter_rows()) == holes  # only the holes were labelled

    per_query = store.read_table("submission_per_query")
    assert set(per_query["track"]) == {"main", "robustness"}
    assert per_query.filter(pl.col("track") == "main")["query_id"].n_unique() == 5  # every main query
    assert set(per_query.filter(pl.col("track") == "robustness")["query_id"]) == {"q_00002~typo"}
    judged = {
        (r["query_id"], r["measure"]): r["value"]
        for r in per_query.filter(pl.col("measure").str.starts_with("Judged")).iter_rows(named=True)
    }
    assert judged[("q_00001", "Judged@3")] == 1.0  # after the holes, the top 3 is judged
    assert judged[("q_00001", "Judged@5")] == 0.75  # 3 of the 4 chunks it returned: rank 4 was not judged
    assert judged[("q_00002~typo", "Judged@3")] == 1.0
    # the configured measures, one value per query
    measures = set(per_query["measure"])
    assert {"Success(rel=3)@3", "RR(rel=3)", "nDCG@3", "wP@3", "Judged@1", "Judged@3", "Judged@5"} <= measures
    tracks = {r["track"]: r for r in store.read_table("submission_tracks").iter_rows(named=True)}
    assert (tracks["main"]["n_items"], tracks["main"]["n_scored"], tracks["main"]["n_unanswered"]) == (5, 1, 4)
    assert tracks["main"]["n_holes_judged"] == 2 and tracks["robustness"]["n_holes_judged"] == 1
    assert tracks["main"]["refused"] is None

    tables = {
        t: store.read_table(t) for t in ("submissions", "submission_per_query", "submission_tracks", "judgment_labels")
    }
    calls = fake_llm.stats()["chat_calls"]
    capsys.readouterr()
    assert main(["submit", str(run), "--kind", "retrieval", "--name", "Renamed", "--date", "2026-12-24"]) == 0
    assert "nothing asked, nothing added" in capsys.readouterr().out
    assert fake_llm.stats()["chat_calls"] == calls and partitions(tmp_path) == [sid]
    for name, frame in tables.items():
        assert store.read_table(name).equals(frame), name  # the first record (name, date) is kept
    # every submission re-scored by the ordinary command (the partitions are read from the instance): the holes'
    # labels come from the label store, nothing is asked
    assert main(["materialize", "--select", "submission_scores", "--executor", "in_process"]) == 0
    assert fake_llm.stats()["chat_calls"] == calls
    for name, frame in tables.items():
        assert store.read_table(name).equals(frame), name


def test_a_bad_run_file_ends_in_one_line_naming_file_and_line_and_adds_nothing(tmp_path, env, fake_llm, capsys):
    store, ids, _ = retrieval_store(tmp_path, fake_llm.url, env)
    run = tmp_path / "bad.trec"
    run.write_text(f"q_00001 Q0 {ids[0]} 1 2.0 x\nq_00001 Q0 {ids[1]} 2 1.0 x\nq_00001 Q0 0000000000000000 3 0.5 x\n")
    before = fake_llm.stats()["chat_calls"]
    assert main(["submit", str(run), "--kind", "retrieval", "--name", "bad"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"mama-pipeline: error: {run}:3: unknown chunk id '0000000000000000': not in the corpus"
    assert fake_llm.stats()["chat_calls"] == before
    assert not store.table_exists("submissions") and not (tmp_path / "data" / "submissions").exists()
    assert partitions(tmp_path) == []


def test_an_answers_file_is_graded_absent_items_unanswered_and_a_track_over_its_bound_refused(
    tmp_path, env, fake_llm, capsys
):
    import yaml

    cfg = {
        "data_dir": str(tmp_path / "data"),
        "llm": {
            stage: {"base_urls": [fake_llm.url], "model": f"fake-{stage}", "backoff_base_s": 0.01}
            for stage in ("answer_grader", "rubric_judge")
        },
    }
    _, store = env(yaml.safe_dump(cfg))
    items = [
        sfx.mcq("m-1", "Drug of choice for eclampsia?", ["oxytocin", "magnesium sulfate", "diazepam"], 1),
        sfx.mcq("m-2", "Uterotonic after birth?", ["oxytocin", "nifedipine", "labetalol"], 0),
        sfx.mcq("m-3", "Warmth for a newborn?", ["bath", "skin-to-skin", "fan"], 1),
        sfx.short("s-1", "A newborn is cold. What do you do?", f"Dry, skin-to-skin {sfx.grade('correct')}"),
        sfx.short("s-2", "Heavy bleeding after birth: first drug?", f"Oxytocin {sfx.grade('partially_correct')}"),
        sfx.rubric(
            "r-1",
            "How do I keep my newborn warm?",
            [
                (f"Advises skin-to-skin {sfx.verdict(True)}", 5),
                (f"Recommends a bottle {sfx.verdict(False)}", -3),
                (f"Says to keep the baby warm {sfx.verdict(True)}", 4),
            ],
        ),
    ]
    store.write_table("mamabench_items", sfx.items_frame(items))
    store.write_table(
        "mamabench_criteria",
        sfx.criteria_frame(
            [
                f"Advises skin-to-skin {sfx.verdict(True)}",
                f"Recommends a bottle {sfx.verdict(False)}",
                f"Says to keep the baby warm {sfx.verdict(True)}",
            ]
        ),
    )
    store.write_table("corpus_chunks", sfx.chunks_frame())
    chunk = sfx.chunks_frame()["chunk_id"][0]
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"item_id": "m-1", "answer": "B"},  # correct
                {"item_id": "m-2", "answer": "Answer: C"},  # wrong
                {"item_id": "m-3", "answer": "skin to skin, I think"},  # no letter: invalid, 0
                {"item_id": "s-1", "answer": "Dry the baby and put it skin-to-skin.", "cited_chunk_ids": [chunk]},
                {"item_id": "r-1", "answer": "Skin-to-skin contact and a warm room."},
            ]
        )
        + "\n"
    )  # s-2 is absent: unanswered
    before = fake_llm.stats()["chat_calls"]
    assert main(["submit", str(answers), "--kind", "answers", "--name", "My system"]) == 0
    assert fake_llm.stats()["chat_calls"] - before == 1 + 3  # one short answer graded, three rubric criteria
    (record,) = store.read_table("submissions").to_dicts()
    assert record["kind"] == "answers" and record["judge_model"].startswith("short_answer=fake-answer_grader")
    tracks = {r["track"]: r for r in store.read_table("submission_tracks").iter_rows(named=True)}
    assert (tracks["mcq"]["n_items"], tracks["mcq"]["n_invalid"], tracks["mcq"]["refused"]) == (3, 1, None)
    short = tracks["short_answer"]
    assert (short["n_items"], short["n_unanswered"], short["n_scored"]) == (2, 1, 1)  # exclude: left out
    assert "1 of 2 items failed (50.00%), bound 5.00%" in short["refused"]
    scores = {
        (r["track"], r["query_id"]): r["value"] for r in store.read_table("submission_per_query").iter_rows(named=True)
    }
    assert scores == {
        ("mcq", "m-1"): 1.0,
        ("mcq", "m-2"): 0.0,
        ("mcq", "m-3"): 0.0,
        ("short_answer", "s-1"): None,
        ("short_answer", "s-2"): None,  # refused: no figures
        ("rubric", "r-1"): 1.0,
    }  # (5 + 4) of 9 positive points


@pytest.mark.parametrize(
    "content, line, reason",
    [
        ("q_00001 Q0 {c0} 1 1.0\n", 1, "expected 6 fields"),
        ("q_00001 Q0 {c0} 1 1.0 x\nq_00001 Q0 {c1} 2 high x\n", 2, "score 'high' a number"),
        ("q_00001 Q0 {c0} 1 1.0 x\nq_00001 Q0 {c0} 2 0.5 x\n", 2, "appears twice for query 'q_00001'"),
        ("q_00001 Q0 {c0} 1 1.0 x\nq_99999 Q0 {c1} 2 0.5 x\n", 2, "unknown query id 'q_99999'"),
        ('{{\n "q_00001": {{\n  "{c0}": 1.0,\n  "nope": 0.5\n }}\n}}\n', 4, "unknown chunk id 'nope'"),
        ('{{\n "q_00001": {{\n  "{c0}": "high"\n }}\n}}\n', 3, "is not a number"),
    ],
)
def test_run_file_errors_name_the_line(tmp_path, content, line, reason):
    from mama_pipeline.common.input_errors import InputError
    from mama_pipeline.submissions._submission_files import read_run_file

    ids = chunks_frame()["chunk_id"].to_list()
    path = tmp_path / "run.txt"
    path.write_text(content.format(c0=ids[0], c1=ids[1]))
    with pytest.raises(InputError) as exc:
        read_run_file(path, {"q_00001"}, set(ids))
    assert str(exc.value).startswith(f"{path}:{line}: ") and reason in str(exc.value)


def test_non_utf8_run_file_names_its_line(tmp_path):
    from mama_pipeline.common.input_errors import InputError
    from mama_pipeline.submissions._submission_files import read_run_file

    path = tmp_path / "run.txt"
    path.write_bytes(b"q_00001 Q0 a 1 1.0 x\nq_00001 Q0 b\xff 2 0.5 x\n")
    with pytest.raises(InputError, match=rf"^{path}:2: bytes that are not UTF-8"):
        read_run_file(path, {"q_00001"}, {"a", "b"})


def test_a_beir_results_file_ranks_like_trec_eval(tmp_path):
    from mama_pipeline.submissions._submission_files import read_run_file

    path = tmp_path / "results.json"
    path.write_text(json.dumps({"q1": {"a": 0.5, "b": 0.9, "c": 0.5}}))
    run = read_run_file(path, {"q1"}, {"a", "b", "c"})
    assert run.select("doc_id", "rank").rows() == [("b", 1), ("c", 2), ("a", 3)]  # ties: doc id descending


def test_a_run_on_the_multipassage_track_has_its_holes_judged_for_relevance_and_facts(tmp_path, env, fake_llm):
    store, ids, _ = retrieval_store(tmp_path, fake_llm.url, env)
    config = tmp_path / "config.yaml"
    config.write_text(with_embedded(config.read_text() + "multipassage: {pool_depth: 2}\n"))
    question = {
        "query_id": "mq_00001",
        "query_text": "oxytocin and magnesium: doses",
        "set_id": "s1",
        "chunk_ids": ids[:2],
        "facts": ["oxytocin 10 IU IM", "magnesium 4 g IV"],
        "fact_chunk_ids": ids[:2],
        "kind": "cross_source",
        "size": 2,
        "source": "sample-guideline",
        "tier": "very_high",
        "writer_model": "w",
        "writer_prompt_hash": "0" * 16,
        "verifier_model": "v",
        "verifier_prompt_hash": "0" * 16,
        "temperature": 0.0,
        "corpus_version": "v1",
    }
    store.write_table("multipassage_questions", pl.DataFrame([question]))
    pool = [
        {
            "query_id": "mq_00001",
            "chunk_id": c,
            "status": "labelled",
            "reused": False,
            "score": 5,
            "required_piece": True,
        }
        for c in ids[:2]
    ]
    store.write_table("multipassage_labels", pl.DataFrame(pool))
    store.write_table(
        "multipassage_fact_labels",
        pl.DataFrame(
            [
                {
                    "query_id": "mq_00001",
                    "chunk_id": c,
                    "required_piece": True,
                    "status": "labelled",
                    "facts": [n],
                    "judge_model": "fake-judge",
                    "prompt_hash": "0" * 16,
                }
                for n, c in enumerate(ids[:2], start=1)
            ]
        ),
    )
    run = tmp_path / "mp.trec"
    run.write_text(f"mq_00001 Q0 {ids[0]} 1 2.0 x\nmq_00001 Q0 {ids[2]} 2 1.0 x\nmq_00001 Q0 {ids[3]} 3 0.5 x\n")
    before = fake_llm.stats()["chat_calls"]
    assert main(["submit", str(run), "--kind", "retrieval", "--name", "mp"]) == 0
    assert (
        fake_llm.stats()["chat_calls"] - before == 2
    )  # one hole (rank 2; rank 3 is below the depth): relevance + facts
    per_query = store.read_table("submission_per_query")
    assert set(per_query["track"]) == {"multipassage"}
    values = dict(per_query.select("measure", "value").iter_rows())
    assert values["Judged@1"] == 1.0 and values["Judged@3"] == pytest.approx(2 / 3)
    assert {"AllIn@10[pieces]", "R@10[pieces]", "alpha_nDCG@10"} <= set(values)
    (track,) = store.read_table("submission_tracks").to_dicts()
    assert (track["track"], track["n_items"], track["n_holes_judged"], track["refused"]) == ("multipassage", 1, 1, None)


def test_holes_the_judge_cannot_label_refuse_the_track_instead_of_counting_as_non_relevant(tmp_path, env, fake_llm):
    store, ids, _ = retrieval_store(tmp_path, fake_llm.url, env)
    queries = store.read_table("generated_queries").with_columns(
        pl.when(pl.col("query_id") == "q_00005")
        .then(pl.col("query_text") + " [[fault:500]]")
        .otherwise(pl.col("query_text"))
        .alias("query_text")
    )
    store.write_table("generated_queries", queries)  # every request about q_00005 answers HTTP 500
    run = tmp_path / "run.trec"
    run.write_text(f"q_00001 Q0 {ids[2]} 1 2.0 x\nq_00005 Q0 {ids[3]} 1 2.0 x\nq_00005 Q0 {ids[4]} 2 1.0 x\n")
    assert main(["submit", str(run), "--kind", "retrieval", "--name", "faulty"]) == 0
    (track,) = store.read_table("submission_tracks").to_dicts()
    assert (track["n_holes_judged"], track["n_grade_failed"]) == (1, 2)
    assert "stage judge: 2 of 3 main holes of this submission failed" in track["refused"]
    values = store.read_table("submission_per_query")["value"]
    assert values.len() == values.null_count() > 0  # every figure refused, the rows kept


@pytest.mark.parametrize(
    "lines, line, reason",
    [
        (['{"item_id": "m-1", "answer": "B"}', '{"item_id": "m-9", "answer": "A"}'], 2, "unknown item id 'm-9'"),
        (
            ['{"item_id": "m-1", "answer": "B"}', '{"item_id": "m-1", "answer": "A"}'],
            2,
            "answered twice (first on line 1)",
        ),
        (['{"item_id": "m-1", "answer": 2}'], 1, "answer must be a string"),
        (['{"item_id": "m-1", "answer": "B", "cited_chunk_ids": ["zz"]}'], 1, "unknown chunk id 'zz'"),
        (['{"item_id": "m-1", "answer": "B", "confidence": 1}'], 1, "keys must be item_id, answer"),
        (["", '{"item_id": "m-1", "answer": "B"'], 2, "not valid JSON"),
    ],
)
def test_answers_file_errors_name_the_line(tmp_path, lines, line, reason):
    from mama_pipeline.common.input_errors import InputError
    from mama_pipeline.submissions._submission_files import read_answers_file

    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as exc:
        read_answers_file(path, {"m-1"}, {"c1"})
    assert str(exc.value).startswith(f"{path}:{line}: ") and reason in str(exc.value)


def test_a_run_made_on_another_corpus_version_is_refused_before_anything_is_stored(tmp_path, env, fake_llm, capsys):
    store, ids, _ = retrieval_store(tmp_path, fake_llm.url, env)
    run = tmp_path / "run.trec"
    run.write_text(f"q_00001 Q0 {ids[0]} 1 1.0 x\n")
    assert main(["submit", str(run), "--kind", "retrieval", "--name", "old", "--corpus-version", "v0"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"mama-pipeline: error: {run}: made on corpus version v0, the store holds v1"
    )
    assert not store.table_exists("submissions") and partitions(tmp_path) == []

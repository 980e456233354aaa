"""The calibration fixture and scope verdicts for its prompts, shared by the tests."""

from pathlib import Path

import polars as pl

import mama_pipeline

META_EVAL_SAMPLE = Path(mama_pipeline.__file__).parent / "sample_data" / "calibration" / "oss_meta_eval-sample.jsonl"

# verdicts for the fixture's 16 prompts (see its README); a68cd296 is left without a
# verdict and 191a0709 is unclassified (null category) to exercise the accounting
VERDICTS = pl.DataFrame(
    {
        "prompt_id": [
            "e6fe887a-4a2c-4416-a007-46826d06abe3",
            "ceaf092b-aa46-4bb8-aca2-fffafd1bf34a",
            "ecee12e7-4ee4-44ac-8c08-f864c8bc0407",
            "1c16e366-c35d-4722-81b8-a8d7c88e763a",
            "dd5be674-118a-4002-8a16-66baa884f390",
            "9db3e66f-9e4e-4683-9279-65fe41679e8d",
            "674409d7-ce82-4dd9-a698-66d417f2c516",
            "bf6c713b-0bae-4a28-8c3e-611e87943b43",
            "6c1eaabb-908a-4414-8d73-597b5347e73b",
            "587009b1-9755-40be-80b2-cc5e7e17b05a",
            "2ed8139f-d755-48fd-bc48-54cc5750ab56",
            "c5f6bb12-a633-4ee4-b6a8-e6f9539472dc",
            "93f54838-ec39-40f2-9ea5-b9ab75a28d09",
            "f84789b4-ff31-4902-9145-185c7985412e",
            "191a0709-26ae-4de2-895d-17393b7082c7",
            "ffffffff-0000-0000-0000-000000000000",  # a verdict for a prompt the meta-eval lacks
        ],
        "category": ["MATERNAL"] * 7
        + ["CHILD_HEALTH"] * 3
        + ["SEXUAL_AND_REPRODUCTIVE_HEALTH"]
        + ["NONE"] * 3
        + [None, "NEONATAL"],
    }
)
# rows per outcome in the fixture under VERDICTS (prompts x rows from the file):
# MATERNAL 6+4+4+4+4+6+4 = 32 rows / 7 prompts; CHILD_HEALTH 4+4+4 = 12 / 3; SRH 4 / 1;
# out_of_scope 4+6+4 = 14 / 3; unclassified 4 / 1; no_verdict 6 / 1; total 72
EXPECTED_ACCOUNTING = [
    ("kept", "MATERNAL", 32, 7),
    ("kept", "NEONATAL", 0, 0),
    ("kept", "CHILD_HEALTH", 12, 3),
    ("kept", "SEXUAL_AND_REPRODUCTIVE_HEALTH", 4, 1),
    ("out_of_scope", None, 14, 3),
    ("unclassified", None, 4, 1),
    ("no_verdict", None, 6, 1),
]

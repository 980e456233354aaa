"""The bundle parser on good and broken bundles, in every format."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import polars as pl
import pytest

from mama_pipeline.corpus._bundle import BundleError, format_chunk, load_bundle, write_text_bundle
from mama_pipeline.corpus._hashing import chunk_id, corpus_version, text_digest

PPH = "Give oxytocin 10 IU intramuscularly within one minute of birth. Massage the uterus until firm."
ECL = "Magnesium sulfate is the drug of choice to prevent and treat eclamptic fits in pre-eclampsia."
NEO = "Dry the baby thoroughly and keep it warm; drying is often enough to start breathing."


def cid(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def write(tmp_path: Path, text: str | bytes, name: str = "chunks_for_rag.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def good_bundle() -> str:
    return (
        "----------\n"
        f"[SOURCE:msf-essential-obstetric-and-newborn-care|PAGE:12|CID:{cid(PPH)}]\n"
        "> Chapter 3: Bleeding after birth\n"
        "> Active management\n"
        f"{PPH}\n"
        "\n"
        "----------\n"
        f"[SOURCE:who-midwifery-education-modules-3|PAGE:7|CID:{cid(ECL)}]\n"
        "> Module 2 > Magnesium sulfate\n"
        f"{ECL}\n"
        "----------\n"
        f"[SOURCE:who-midwifery-education-modules-3|PAGE:8|CID:{cid(NEO)}]\n"
        f"{NEO}\n"
    )


def test_chunk_id_is_sha256_prefix_of_utf8_text():
    text = "Prévention de l’hémorragie — 10 UI"
    assert chunk_id(text) == hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    assert len(chunk_id(text)) == 16
    assert chunk_id(text) != chunk_id(text + " ")


def test_corpus_version_ignores_order_and_sees_every_change():
    digests = [text_digest(t) for t in (PPH, ECL, NEO)]
    assert corpus_version(digests) == corpus_version(list(reversed(digests)))
    assert corpus_version(digests) != corpus_version(digests[:2])
    assert corpus_version(digests) != corpus_version([*digests[:2], text_digest(NEO + ".")])


def test_parses_headers_breadcrumbs_and_body(tmp_path):
    parsed = load_bundle(write(tmp_path, good_bundle()))
    df = parsed.chunks
    assert df.get_column("chunk_id").to_list() == [cid(PPH), cid(ECL), cid(NEO)]
    assert df.get_column("text").to_list() == [PPH, ECL, NEO]  # canonical text = body without breadcrumb
    assert df.get_column("source").to_list()[0] == "msf-essential-obstetric-and-newborn-care"
    assert df.get_column("page").to_list() == [12, 7, 8]
    assert df.get_column("line").to_list() == [2, 8, 12]
    assert df.get_column("breadcrumb").to_list() == [
        ["Chapter 3: Bleeding after birth", "Active management"],
        ["Module 2", "Magnesium sulfate"],  # one line, levels joined by " > "
        [],
    ]
    assert parsed.issues.is_empty()
    assert parsed.corpus_version == corpus_version([text_digest(t) for t in (PPH, ECL, NEO)])
    assert df.get_column("corpus_version").unique().to_list() == [parsed.corpus_version]


def test_with_breadcrumb_canonical_text_changes_ids(tmp_path):
    crumb_text = f"> Chapter 3: Bleeding after birth\n> Active management\n{PPH}"
    bundle = f"[SOURCE:msf|PAGE:1|CID:{cid(crumb_text)}]\n{crumb_text}\n"
    parsed = load_bundle(write(tmp_path, bundle), canonical="with_breadcrumb")
    assert parsed.chunks.get_column("text").to_list() == [crumb_text]
    assert parsed.chunks.get_column("chunk_id").to_list() == [cid(crumb_text)]
    by_body = load_bundle(write(tmp_path, bundle))  # the bundle's CIDs hash breadcrumb + body; ids hash the body
    assert by_body.cid_convention == "with_breadcrumb"
    assert by_body.chunks.get_column("chunk_id").to_list() == [cid(PPH)]


def test_crlf_and_bom_are_tolerated(tmp_path):
    text = "\ufeff" + good_bundle().replace("\n", "\r\n")
    parsed = load_bundle(write(tmp_path, text))
    assert parsed.chunks.get_column("text").to_list() == [PPH, ECL, NEO]


def test_writer_round_trips(tmp_path):
    path = tmp_path / "out.txt"
    n = write_text_bundle(path, [("src-a", 3, ["Top", "Sub"], PPH), ("src-b", 4, [], ECL)])
    assert n == 2 and not (tmp_path / "out.txt.tmp").exists()
    parsed = load_bundle(path)
    assert parsed.chunks.select("source", "page", "breadcrumb", "text").rows() == [
        ("src-a", 3, ["Top", "Sub"], PPH),
        ("src-b", 4, [], ECL),
    ]
    assert format_chunk("src-a", 3, [], PPH).splitlines()[0] == f"<sep>[SOURCE:src-a|PAGE:3|CID:{cid(PPH)}]"
    assert format_chunk("src-a", 3, ["Top"], PPH, "with_breadcrumb").splitlines()[0] == (
        f"<sep>[SOURCE:src-a|PAGE:3|CID:{cid('> Top' + chr(10) + PPH)}]"
    )
    assert format_chunk("src-a", 3, ["Top"], PPH, "none").splitlines()[0] == "<sep>[SOURCE:src-a|PAGE:3]"


@pytest.mark.parametrize(
    ("header", "line_no", "message"),
    [
        ("[SOURCE:msf|PAGE]", 8, "malformed header"),
        ("<sep>SOURCE:msf|PAGE:3", 8, "malformed header"),
        ("<sep>[SOURCE:msf|PAGE:3|CID:{cid}|X:1]", 8, "malformed header"),
        ("[SOURCE:msf|PAGE:twelve|CID:{cid}]", 8, "page is not a non-negative integer: PAGE:'twelve'"),
        ("[SOURCE:msf|PAGE:-1|CID:{cid}]", 8, "page is not a non-negative integer"),
        ("[SOURCE:msf|PAGE:3|CID:XYZ]", 8, "malformed header: CID 'XYZ'"),
        ("[SOURCE:bad slug!|PAGE:3|CID:{cid}]", 8, "malformed header: source 'bad slug!'"),
        (
            "[SOURCE:msf|PAGE:3|CID:0123456789abcdef]",
            8,
            "CID does not match the bundle's convention: given 0123456789abcdef, but the body hashes to .*1 of 3 given CIDs",
        ),
    ],
)
def test_bad_header_names_file_and_line(tmp_path, header, line_no, message):
    lines = good_bundle().splitlines()
    lines[7] = header.format(cid=cid(ECL))  # the second chunk's header
    path = write(tmp_path, "\n".join(lines) + "\n")
    with pytest.raises(BundleError, match=rf"chunks_for_rag.txt:{line_no}: {message}"):
        load_bundle(path)


def test_empty_chunk_fails(tmp_path):
    bundle = good_bundle().replace(f"{ECL}\n", "\n")
    with pytest.raises(BundleError, match=r"chunks_for_rag.txt:8: empty chunk"):
        load_bundle(write(tmp_path, bundle))


def test_non_utf8_byte_names_its_line(tmp_path):
    raw = good_bundle().encode("utf-8").replace(b"drug of choice", b"drug \xff choice")
    with pytest.raises(BundleError, match=r"chunks_for_rag.txt:8: bytes that are not UTF-8: byte 0xff at line 10"):
        load_bundle(write(tmp_path, raw))


def test_skip_mode_counts_every_bad_chunk_with_its_reason(tmp_path):
    lines = good_bundle().splitlines()
    lines[7] = "[SOURCE:msf|PAGE:seven|CID:0000000000000000]"
    raw = ("\n".join(lines) + "\n").encode().replace(b"Dry the baby", b"Dry the \xfe baby")
    raw += f"----------\n[SOURCE:x|PAGE:1|CID:{cid(PPH)}]\n> Only a breadcrumb\n".encode()
    raw += f"----------\n[SOURCE:x|PAGE:2|CID:{cid(ECL)}]\n{NEO}\n".encode()
    parsed = load_bundle(write(tmp_path, raw), on_bad="skip")
    assert parsed.chunks.get_column("chunk_id").to_list() == [cid(PPH)]
    assert parsed.records_read == 5
    assert parsed.issues.select("line", "reason", "action").rows() == [
        (8, "bad_page", "skipped"),
        (12, "non_utf8", "skipped"),
        (15, "empty_chunk", "skipped"),
        (18, "cid_mismatch", "skipped"),
    ]
    assert parsed.counts()["skipped/cid_mismatch"] == 1
    assert parsed.counts()["chunks"] == 1


def test_duplicate_ids_dropped_and_duplicate_texts_reported(tmp_path):
    shouty = PPH.upper()
    bundle = good_bundle() + (
        f"----------\n[SOURCE:other-source|PAGE:99|CID:{cid(PPH)}]\n> Elsewhere\n{PPH}\n"
        f"----------\n[SOURCE:other-source|PAGE:100|CID:{cid(shouty)}]\n{shouty}\n"
    )
    parsed = load_bundle(write(tmp_path, bundle))
    assert parsed.chunks.height == 4
    assert parsed.chunks.get_column("chunk_id").is_unique().all()
    issues = parsed.issues.select("line", "chunk_id", "reason", "action").rows()
    assert issues == [(15, cid(PPH), "duplicate_id", "dropped"), (19, cid(shouty), "duplicate_text", "reported")]
    assert "line 2" in parsed.issues.get_column("detail")[0]


def test_the_chunk_table_built_a_few_rows_at_a_time_is_the_same_table(tmp_path, monkeypatch):
    """The chunk table is built in blocks of rows (memory holds the chunks read or the table, not both): blocks of
    two rows, with a duplicate id and a duplicate text among them, give the rows, order and issues of one block."""
    import mama_pipeline.corpus._bundle as bundle_module

    shouty = PPH.upper()
    bundle = good_bundle() + (
        f"----------\n[SOURCE:other-source|PAGE:99|CID:{cid(PPH)}]\n> Elsewhere\n{PPH}\n"
        f"----------\n[SOURCE:other-source|PAGE:100|CID:{cid(shouty)}]\n{shouty}\n"
        f"----------\n[SOURCE:other-source|PAGE:101]\n> A > B\nA fifth chunk, in a third block.\n"
    )
    path = write(tmp_path, bundle)
    whole = load_bundle(path)
    monkeypatch.setattr(bundle_module, "BLOCK_ROWS", 2)
    blocks = load_bundle(path)
    assert whole.chunks.height == 5 and whole.chunks.equals(blocks.chunks)
    assert blocks.chunks.get_column("ordinal").to_list() == [0, 1, 2, 3, 4]
    assert blocks.chunks.get_column("breadcrumb").to_list()[-1] == ["A", "B"]
    assert whole.issues.equals(blocks.issues) and whole.corpus_version == blocks.corpus_version
    assert blocks.issues.select("reason").to_series().to_list() == ["duplicate_id", "duplicate_text"]


@pytest.mark.parametrize(
    "content",
    [
        b"chunk_id,text\nabc,hello\n",
        b"# A markdown file\n\nSome text.\n",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        b"\n\n----------\n\n",
    ],
)
def test_not_a_bundle_fails_fast_even_when_skipping(tmp_path, content):
    with pytest.raises(BundleError, match="not a corpus bundle"):
        load_bundle(write(tmp_path, content), on_bad="skip")


def test_unknown_suffix_and_missing_file(tmp_path):
    with pytest.raises(BundleError, match="unsupported suffix '.csv'"):
        load_bundle(write(tmp_path, "a,b\n", "chunks.csv"))
    with pytest.raises(BundleError, match="does not exist"):
        load_bundle(tmp_path / "nope.txt")


def records() -> list[dict]:
    return [
        {
            "source": "msf",
            "page": 12,
            "chunk_id": cid(PPH),
            "breadcrumb": ["Chapter 3", "Active management"],
            "text": PPH,
        },
        {"source": "who-mod-3", "page": 7, "breadcrumb": "> Module 2 > Magnesium sulfate", "text": ECL},
        {"source": "who-mod-3", "page": "8", "cid": cid(NEO), "text": NEO},
    ]


def test_jsonl_and_parquet_give_the_same_chunks_as_text(tmp_path):
    jsonl = write(tmp_path, "\n".join(json.dumps(r) for r in records()) + "\n", "chunks.jsonl")
    rows = [
        {
            **r,
            "breadcrumb": r.get("breadcrumb")
            if isinstance(r.get("breadcrumb"), list)
            else ["Module 2", "Magnesium sulfate"]
            if r.get("breadcrumb")
            else [],
            "page": int(r["page"]),
            "chunk_id": r.get("chunk_id") or r.get("cid"),
        }
        for r in records()
    ]
    parquet = tmp_path / "chunks.parquet"
    pl.DataFrame([{k: v for k, v in r.items() if k != "cid"} for r in rows]).write_parquet(parquet)
    from_jsonl = load_bundle(jsonl)
    from_parquet = load_bundle(parquet)
    cols = ["chunk_id", "source", "page", "breadcrumb", "text"]
    assert from_jsonl.chunks.select(cols).rows() == from_parquet.chunks.select(cols).rows()
    assert from_jsonl.chunks.get_column("chunk_id").to_list() == [cid(PPH), cid(ECL), cid(NEO)]
    assert from_jsonl.chunks.get_column("breadcrumb").to_list()[1] == ["Module 2", "Magnesium sulfate"]
    assert (
        from_jsonl.corpus_version
        == from_parquet.corpus_version
        == load_bundle(write(tmp_path, good_bundle())).corpus_version
    )


def test_jsonl_bad_records_name_their_line(tmp_path):
    lines = [json.dumps(r) for r in records()]
    lines.insert(1, '{"source": "msf", "page": 3.5, "text": "x y z"}')
    lines.insert(2, "{not json")
    lines.insert(3, json.dumps({"source": "msf", "page": 4}))
    path = write(tmp_path, "\n".join(lines) + "\n", "chunks.jsonl")
    with pytest.raises(BundleError, match=r"chunks.jsonl:2: page is not a non-negative integer: page 3.5"):
        load_bundle(path)
    parsed = load_bundle(path, on_bad="skip")
    assert parsed.issues.select("line", "reason").rows() == [(2, "bad_page"), (3, "bad_record"), (4, "bad_record")]
    assert "missing field(s) text" in parsed.issues.get_column("detail")[2]
    assert parsed.chunks.height == 3


def test_parquet_without_required_columns_is_not_a_bundle(tmp_path):
    path = tmp_path / "x.parquet"
    pl.DataFrame({"chunk_id": ["a"], "text": ["b"]}).write_parquet(path)
    with pytest.raises(BundleError, match="not a corpus bundle: missing column"):
        load_bundle(path)
    bogus = write(tmp_path, b"not parquet at all", "y.parquet")
    with pytest.raises(BundleError, match="not a corpus bundle: cannot read as parquet"):
        load_bundle(bogus)


# -- the real chunks_for_rag.txt form -----------------------------------------
REAL = Path(__file__).parent / "fixtures"  # real-format bundles (synthetic text), copied from the shared fixtures
CRUMBED = [("src-a", 1, ["Chapter 3", "Bleeding"], PPH), ("src-b", 7, ["Module 2"], ECL), ("src-a", 2, [], NEO)]


def test_real_header_with_sep_parses(tmp_path):
    text = (
        f"<sep>[SOURCE:source-00-guideline|PAGE:1|CID:{cid(PPH)}]\n> Chapter 1 > Section 1\n{PPH}\n"
        f"<sep>[SOURCE:NICE_intrapartum_2023|PAGE:14]\n\n{ECL}\n\n"
    )
    parsed = load_bundle(write(tmp_path, text))
    assert parsed.chunks.select("chunk_id", "source", "page", "breadcrumb", "text", "line").rows() == [
        (cid(PPH), "source-00-guideline", 1, ["Chapter 1", "Section 1"], PPH, 1),
        (cid(ECL), "NICE_intrapartum_2023", 14, [], ECL, 4),  # older header without CID: id computed
    ]
    assert parsed.cid_convention == "body" and parsed.cid_matches == {"body": 1, "absent": 1}


@pytest.mark.parametrize("canonical", ["body", "with_breadcrumb"])
def test_ids_and_version_do_not_depend_on_the_cid_convention(tmp_path, canonical):
    parsed = {}
    for cid_of in ("body", "with_breadcrumb", "none"):
        path = tmp_path / f"{cid_of}.txt"
        write_text_bundle(path, CRUMBED, cid_of=cid_of)
        assert path.read_text().startswith("<sep>[SOURCE:src-a|PAGE:1")
        parsed[cid_of] = load_bundle(path, canonical=canonical)
    assert {k: p.cid_convention for k, p in parsed.items()} == {
        "body": "body",
        "with_breadcrumb": "with_breadcrumb",
        "none": "none_given",
    }
    assert parsed["body"].cid_matches == {"body": 2, "both": 1}  # the chunk without breadcrumb fits both
    ids = {k: p.chunks.get_column("chunk_id").to_list() for k, p in parsed.items()}
    assert ids["body"] == ids["with_breadcrumb"] == ids["none"]
    assert len({p.corpus_version for p in parsed.values()}) == 1
    expected = (
        [cid(PPH), cid(ECL), cid(NEO)]
        if canonical == "body"
        else [cid(f"> Chapter 3\n> Bleeding\n{PPH}"), cid(f"> Module 2\n{ECL}"), cid(NEO)]
    )
    assert ids["body"] == expected


def test_real_format_fixtures_of_both_conventions_give_the_same_chunks():
    body = load_bundle(REAL / "bundle-body-cid.txt")
    crumb = load_bundle(REAL / "bundle-breadcrumb-cid.txt")
    assert (body.cid_convention, crumb.cid_convention) == ("body", "with_breadcrumb")
    assert body.chunks.height == crumb.chunks.height == 24
    assert body.chunks.drop("given_cid").equals(crumb.chunks.drop("given_cid"))
    assert body.corpus_version == crumb.corpus_version
    assert body.chunks.get_column("chunk_id").to_list() == body.chunks.get_column("given_cid").to_list()
    assert body.chunks.get_column("breadcrumb")[0].to_list() == ["Chapter 1", "Section 1"]


def test_cids_matching_neither_text_fail_with_counts_or_are_skipped(tmp_path):
    text = "".join(format_chunk(*c) for c in CRUMBED).replace(f"CID:{cid(ECL)}", "CID:00000000000000aa")
    text += f"<sep>[SOURCE:src-c|PAGE:9|CID:00000000000000bb]\n> Top\n{PPH} Extra.\n"
    path = write(tmp_path, text)
    with pytest.raises(
        BundleError,
        match=r"chunks_for_rag.txt:5: CID does not match the bundle's convention: "
        r"given 00000000000000aa.*2 of 4 given CIDs .*\(body\), at lines 5, 10",
    ):
        load_bundle(path)
    parsed = load_bundle(path, on_bad="skip")
    assert parsed.chunks.get_column("chunk_id").to_list() == [cid(PPH), cid(NEO)]
    assert parsed.issues.select("line", "reason", "action").rows() == [
        (5, "cid_mismatch", "skipped"),
        (10, "cid_mismatch", "skipped"),
    ]
    assert parsed.cid_matches == {"body": 1, "both": 1, "neither": 2}


def test_all_cids_matching_neither_is_reported_as_such(tmp_path):
    text = "".join(format_chunk(*c) for c in CRUMBED[:2])
    text = text.replace(cid(PPH), "0" * 16).replace(cid(ECL), "1" * 16)
    path = write(tmp_path, text)
    with pytest.raises(BundleError, match=r":1: .*2 of 2 given CIDs do not fit the bundle's convention \(neither\)"):
        load_bundle(path)
    with pytest.raises(BundleError, match="no usable chunks"):
        load_bundle(path, on_bad="skip")


def test_a_minority_convention_is_a_mismatch(tmp_path):
    text = format_chunk(*CRUMBED[0]) + format_chunk(*CRUMBED[1]) + format_chunk(*CRUMBED[0][:3], NEO, "with_breadcrumb")
    parsed = load_bundle(write(tmp_path, text), on_bad="skip")
    assert parsed.cid_convention == "body"
    assert parsed.issues.get_column("detail").to_list() == [
        f"given {cid(chr(10).join(['> Chapter 3', '> Bleeding', NEO]))} hashes the with_breadcrumb text, "
        "but the bundle's CIDs hash the body text"
    ]


@pytest.mark.parametrize("preamble", ["Title page\n", "<sep>\nnotes\n"])
def test_content_before_the_first_header_names_its_line(tmp_path, preamble):
    path = write(tmp_path, "\n" + preamble + format_chunk(*CRUMBED[0]))
    with pytest.raises(BundleError, match=r"chunks_for_rag.txt:(2|3): not a corpus bundle: expected a <sep>\[SOURCE"):
        load_bundle(path, on_bad="skip")

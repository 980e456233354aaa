"""The guideline corpus: bundle parsing, content-derived chunk ids and tier-weighted sampling.

Canonical text: a chunk's body without its breadcrumb lines (``corpus.canonical_text:
body``), stripped of surrounding whitespace. It is hashed into the chunk id and is
the text retrieved, judged and released; the breadcrumb is a separate column.
"""

from mama_pipeline.common.face import lazy_face

DEFINED_IN = {  # public name -> the module that defines it (common/face.py)
    "HEADER_FORM": "mama_pipeline.corpus._bundle",
    "HEADER_RE": "mama_pipeline.corpus._bundle",
    "boilerplate_reason": "mama_pipeline.corpus._boilerplate",
    "changed_sources": "mama_pipeline.corpus._watch",
    "hub_commit": "mama_pipeline.corpus._watch",
    "load_bundle": "mama_pipeline.corpus._bundle",
    "parse_hub_spec": "mama_pipeline.corpus._location",
    "recorded_fingerprints": "mama_pipeline.corpus._watch",
    "resolve_bundle": "mama_pipeline.corpus._location",
    "sample_chunks": "mama_pipeline.corpus._sampling",
    "sample_source": "mama_pipeline.corpus._sampling",
    "source_fingerprints": "mama_pipeline.corpus._watch",
    "write_text_bundle": "mama_pipeline.corpus._bundle",
}
__all__ = [
    "HEADER_FORM",
    "HEADER_RE",
    "boilerplate_reason",
    "changed_sources",
    "hub_commit",
    "load_bundle",
    "parse_hub_spec",
    "recorded_fingerprints",
    "resolve_bundle",
    "sample_chunks",
    "sample_source",
    "source_fingerprints",
    "write_text_bundle",
]
__getattr__, __dir__ = lazy_face(__name__, DEFINED_IN)

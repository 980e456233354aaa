"""The guideline corpus: bundle parsing, content-derived chunk ids and tier-weighted sampling.

Canonical text: a chunk's body without its breadcrumb lines (``corpus.canonical_text:
body``), stripped of surrounding whitespace. It is hashed into the chunk id and is
the text retrieved, judged and released; the breadcrumb is a separate column.
"""

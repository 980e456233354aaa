"""The retriever kinds, one module each (``<kind>_kind.py``, defining ``KIND``), found at run time by
:func:`mama_pipeline.retrieval._retriever_kinds.kinds`."""

FOUND_AT_RUN_TIME = True  # the import graph: importing this package reaches every module in it

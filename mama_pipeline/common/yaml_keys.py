"""Where a key sits in a YAML file, and the nearest valid key to a misspelt one (for one-line config errors)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

import yaml


def key_line(text: str, path: Sequence[str | int]) -> tuple[int, bool] | None:
    """The 1-based line of the deepest key of ``path`` present in the YAML ``text``, and whether that key is the
    whole path (None: not even the first key is there)."""
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return None
    line, depth = None, 0
    for part in path:
        if isinstance(node, yaml.MappingNode):
            found = next(((k, v) for k, v in node.value if getattr(k, "value", None) == str(part)), None)
            if found is None:
                break
            line, node = found[0].start_mark.line + 1, found[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
        depth += 1
    return None if line is None else (line, depth == len(path))


def near_miss(key: str, valid: Iterable[str]) -> str | None:
    """The valid key closest to ``key`` (difflib's ratio of at least 0.6), or None."""
    matches = difflib.get_close_matches(key, sorted(valid), n=1, cutoff=0.6)
    return matches[0] if matches else None

"""Reading a tool's numbered answer back into the stored texts its lines show."""

from __future__ import annotations

import re

_OBSERVATION_LINE = re.compile(r"^\d+\. \[[^\]]*\] \([-\d.]+,[-\d.]+\) \[[^\]]*\] (.*)$")
_REPEATS = re.compile(r" \(x\d+[^)]*\)$")


def line_texts(answer: str) -> list[str | None]:
    """The observation text of each line of ``answer`` in order; None for a line that shows no
    observation (a gist, an area, an entity). A line of a text seen several times carries a
    ``(x{n}, ...)`` suffix; callers match the text with and without it."""
    texts: list[str | None] = []
    for line in answer.splitlines():
        match = _OBSERVATION_LINE.match(line)
        shown = line.split(". ", 1)[-1]
        other = shown.startswith(("[gist/", "[area", "[entity/"))
        texts.append(None if match is None or other else match.group(1))
    return texts


def matched(text: str | None, stored: dict[str, list[str]]) -> list[str] | None:
    """The ids stored under ``text`` (exact text, or without a repeat suffix), or None."""
    if text is None:
        return None
    if text in stored:
        return stored[text]
    bare = _REPEATS.sub("", text)
    return stored.get(bare)


def is_summary_line(line: str) -> bool:
    """Whether a numbered line shows a gist or an area rather than a stored text."""
    head = line.split(". ", 1)[-1]
    return head.startswith(("[gist/", "[area"))

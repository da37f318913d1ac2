"""Digests: the no-LLM text of a gist, a summary rather than a concatenation.

A digest of many observations names each distinct thing once with how often it was seen
("refrigerator 9x, cup 6x, coffee machine 4x" from detection lists such as "1 cup, 1
refrigerator", names kept whole), keeps the one or two most representative free texts (captions,
notes; each once, with its count, cut at a word boundary), and ends with how many observations
it covers, where and when ("20 observations around (4.3, 2.1), 2026-11-22 08:00:00–08:06:22").
It is at most ``max_chars`` long and shorter than its parts put back to back.

A digest of digests (an episode of several chunks, an area of several rooms) adds up the
children's counts and keeps the most representative of their free texts: it never concatenates
them. ``acceptable`` checks an LLM's summary by the same rules (bounded, no repeated sentence,
shorter than its parts) so that a rambling answer falls back to the digest.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np

from emem_graph.text.detections import parse_detections
from emem_graph.text.extractive import Embed, select_representative, unique_texts

GIST_MAX_CHARS = 300
"""Longest digest (characters)."""
LLM_GIST_MAX_CHARS = 450
"""Longest LLM summary accepted (with its footer); a longer answer falls back to the digest."""
MAX_TEXTS = 2
"""Free texts a digest keeps."""
TEXT_CHARS = 90
"""Longest free text a digest keeps (cut at a word boundary)."""
MAX_THINGS = 8
"""Things a digest names; the rest are counted ("and 3 more")."""

_THINGS_RE = re.compile(r"Detected (?P<items>[^.]*?)(?: and (?P<more>\d+) more)?\.(?:\s|$)")
_ITEM_RE = re.compile(r"^(?P<label>.+?)(?: (?P<count>\d+)x)?$")
_FOOTER_RE = re.compile(r"\s*\d+ observations? (?:around|near the [^()]*?) \([^)]*\)[^.]*\.\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass
class Digest:
    """What a digest says, before it is written: things with counts, free texts with counts,
    and the span in space and time."""

    things: dict[str, int] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)
    text_counts: list[int] = field(default_factory=list)
    text_vectors: np.ndarray | None = None
    count: int = 0
    center: tuple[float, float] | None = None
    start: float | None = None
    end: float | None = None
    place: str | None = None


def things_seen(texts: Sequence[str]) -> dict[str, int]:
    """Each label of the detection lists among ``texts`` with the number of lists naming it,
    most seen first (ties: first seen first). Labels are whole names ("coffee machine")."""
    seen: dict[str, int] = {}
    for text in texts:
        items = parse_detections(text)
        for label in dict.fromkeys(d.label for d in items or []):
            seen[label] = seen.get(label, 0) + 1
    order = {label: i for i, label in enumerate(seen)}
    return dict(sorted(seen.items(), key=lambda item: (-item[1], order[item[0]])))


def clip_words(text: str, limit: int) -> str:
    """``text`` (spaces collapsed) cut to at most ``limit`` characters at a word boundary,
    with "…" when cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: max(1, limit - 1)]
    space = cut.rfind(" ")
    if space > limit // 3:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


def time_span(start: float, end: float) -> str:
    """``2026-11-22 08:00:00–08:06:22`` (the end's date too when it is another day)."""
    first = datetime.fromtimestamp(start, tz=timezone.utc)
    last = datetime.fromtimestamp(end, tz=timezone.utc)
    head = first.strftime("%Y-%m-%d %H:%M:%S")
    if int(end) == int(start):
        return head
    tail = last.strftime("%H:%M:%S" if last.date() == first.date() else "%Y-%m-%d %H:%M:%S")
    return f"{head}–{tail}"


def footer(
    count: int,
    center: tuple[float, float] | None,
    start: float,
    end: float,
    place: str | None = None,
) -> str:
    """``20 observations around (4.3, 2.1), 2026-11-22 08:00:00–08:06:22.``, or ``near the
    fridge (4.3, 2.1)`` with a ``place`` (the name of a landmark there)."""
    noun = "observation" if count == 1 else "observations"
    near = f"near the {' '.join(place.split())}" if place and "(" not in place else "around"
    where = "" if center is None else f" {near} ({center[0]:.1f}, {center[1]:.1f})"
    return f"{count} {noun}{where}, {time_span(start, end)}."


def things_sentence(things: dict[str, int], limit: int = MAX_THINGS) -> str:
    """``Detected refrigerator 9x, cup 6x, coffee machine.`` (a count of 1 is not written)."""
    if not things:
        return ""
    items = [f"{label} {n}x" if n > 1 else label for label, n in list(things.items())[:limit]]
    more = len(things) - limit
    tail = f" and {more} more" if more > 0 else ""
    return f"Detected {', '.join(items)}{tail}."


def text_sentence(text: str, count: int, limit: int = TEXT_CHARS) -> str:
    """A free text as a sentence, capitalised, cut at ``limit``, with ``(3x)`` when repeated."""
    body = clip_words(text, limit).rstrip(".!?")
    body = body[:1].upper() + body[1:]
    return f"{body} ({count}x)." if count > 1 else f"{body}."


def parts_length(texts: Sequence[str]) -> int:
    """Length of ``texts`` put back to back (one space between)."""
    kept = [" ".join(t.split()) for t in texts if t.strip()]
    return sum(len(t) for t in kept) + max(0, len(kept) - 1)


def digest_of(
    texts: Sequence[str],
    embed: Embed,
    *,
    vectors: np.ndarray | None = None,
    positions: Sequence[tuple[float, float]] | None = None,
    times: Sequence[float] | None = None,
    place: str | None = None,
) -> Digest:
    """What a digest of ``texts`` (observation texts, time order) says: the things of its
    detection lists, its distinct free texts with their counts and vectors (``vectors``: one
    row per text, e.g. the stored ones; None: embedded), and its span."""
    free = [i for i, t in enumerate(texts) if t.strip() and parse_detections(t) is None]
    distinct, counts, first = unique_texts([texts[i] for i in free])
    matrix: np.ndarray | None = None
    if distinct:
        if vectors is not None:
            rows = [free[i] for i in first]
            matrix = np.asarray(vectors, dtype=np.float32)[rows]
        else:
            matrix = np.asarray(embed(distinct), dtype=np.float32)
    center = None
    if positions:
        points = np.asarray(positions, dtype=np.float64)
        center = (float(points[:, 0].mean()), float(points[:, 1].mean()))
    things = things_seen(texts)
    if place is not None and _names_a_thing(place, things):
        place = None  # "Detected coffee machine 5x. ... near the silver coffee machine": once
    return Digest(
        things=things,
        texts=distinct,
        text_counts=counts,
        text_vectors=matrix,
        count=len(texts),
        center=center,
        start=min(times) if times else None,
        end=max(times) if times else None,
        place=place,
    )


def _names_a_thing(place: str, things: dict[str, int]) -> bool:
    """Whether a landmark's name holds one of the detected things' names, whole words: the
    digest names each thing once, with its count, and the footer's coordinates say where
    (which landmark is known depends on how far entity extraction has got when the gist is
    written, so such a footer came and went from run to run)."""
    words = f" {' '.join(re.findall(r'[a-z0-9]+', place.lower()))} "
    return any(
        f" {' '.join(re.findall(r'[a-z0-9]+', label.lower()))} " in words for label in things
    )


def write_digest(digest: Digest, *, parts: int, max_chars: int = GIST_MAX_CHARS) -> str:
    """The text of ``digest``: at most ``max_chars`` and shorter than ``parts`` characters
    (the length of what it summarizes, back to back; the same length for a single part), or
    "" when no form of it is (a few tiny parts)."""
    tail = (
        footer(digest.count, digest.center, digest.start, digest.end, digest.place)
        if digest.start is not None and digest.end is not None
        else ""
    )
    things = things_sentence(digest.things)
    budget = max_chars - len(tail) - len(things) - 2
    chosen: list[int] = []
    if digest.texts and digest.text_vectors is not None:
        order = select_representative(digest.text_vectors, digest.text_counts, MAX_TEXTS)
        chosen = sorted(order)
    sentences: list[str] = []
    for index in chosen:
        room = budget - sum(len(s) + 1 for s in sentences)
        limit = min(TEXT_CHARS, room)
        if limit < 20:
            break
        sentences.append(text_sentence(digest.texts[index], digest.text_counts[index], limit))
    if len(digest.texts) > len(sentences) and sentences:
        others = len(digest.texts) - len(sentences)
        note = f"And {others} other {'text' if others == 1 else 'texts'}."
        if sum(len(s) + 1 for s in sentences) + len(note) <= budget:
            sentences.append(note)
    body = " ".join(s for s in [*sentences, things] if s)
    limit = min(max_chars, parts - 1 if parts > 1 else parts)
    plain = " ".join(text_sentence(t, 1) for t in digest.texts)
    for candidate in (f"{body} {tail}".strip(), body, plain):
        if candidate and len(candidate) <= limit:
            return candidate
    return ""


def summarize_texts(
    texts: Sequence[str],
    embed: Embed,
    *,
    vectors: np.ndarray | None = None,
    positions: Sequence[tuple[float, float]] | None = None,
    times: Sequence[float] | None = None,
    place: str | None = None,
    max_chars: int = GIST_MAX_CHARS,
) -> str:
    """The digest of observation texts (see the module docstring); ``place``: the name of a
    landmark at their centre, if one is known."""
    digest = digest_of(texts, embed, vectors=vectors, positions=positions, times=times, place=place)
    written = write_digest(digest, parts=parts_length(texts), max_chars=max_chars)
    if written:
        return written
    # A few tiny parts ("x", "y"): their distinct texts are the shortest summary there is.
    return clip_words(" ".join(unique_texts(texts)[0]), max_chars)


def parse_digest(text: str) -> tuple[dict[str, int], list[str]]:
    """The things (with counts) and the other sentences of a digest (its footer left out);
    other summaries give no things and their sentences."""
    things: dict[str, int] = {}
    body = _FOOTER_RE.sub("", text)
    match = _THINGS_RE.search(body)
    items = [_ITEM_RE.match(i.strip()) for i in match.group("items").split(", ")] if match else []
    if match and items and all(f and len(f.group("label").split()) <= 3 for f in items):
        for found in items:
            if found:
                label = found.group("label")
                things[label] = things.get(label, 0) + int(found.group("count") or 1)
        body = body[: match.start()] + body[match.end() :]
    return things, [s for s in sentences_of(body) if not s.startswith("And ")]


def is_digest(text: str) -> bool:
    """True when ``text`` is a digest: it ends with a footer or counts what was detected."""
    return bool(_FOOTER_RE.search(text)) or bool(parse_digest(text)[0])


def summarize_summaries(
    texts: Sequence[str],
    weights: Sequence[float],
    embed: Embed,
    *,
    count: int | None = None,
    center: tuple[float, float] | None = None,
    start: float | None = None,
    end: float | None = None,
    max_chars: int = GIST_MAX_CHARS,
) -> str:
    """A digest of digests: the children's thing counts added up, the most representative of
    their sentences (weighted by the children's sizes ``weights``), and the whole span."""
    kept = [t for t in texts if t.strip()]
    if len(kept) == 1:
        return kept[0]
    things: dict[str, int] = {}
    candidates: list[str] = []
    candidate_weights: list[float] = []
    for text, weight in zip(texts, weights, strict=True):
        child_things, sentences = parse_digest(text)
        for label, n in child_things.items():
            things[label] = things.get(label, 0) + n
        for sentence in sentences:
            candidates.append(re.sub(r" \(\d+x\)\.$", ".", sentence))
            candidate_weights.append(float(weight) / max(1, len(sentences)))
    distinct, _, _ = unique_texts(candidates)
    merged = [0.0] * len(distinct)
    keys = {" ".join(d.split()).lower().rstrip("."): i for i, d in enumerate(distinct)}
    for sentence, weight in zip(candidates, candidate_weights, strict=True):
        merged[keys[" ".join(sentence.split()).lower().rstrip(".")]] += weight
    digest = Digest(
        things=dict(sorted(things.items(), key=lambda item: -item[1])),
        texts=distinct,
        text_counts=[1] * len(distinct),
        text_vectors=np.asarray(embed(distinct), dtype=np.float32) if distinct else None,
        count=count or 0,
        center=center,
        start=start,
        end=end,
    )
    if digest.text_vectors is not None:
        # Representativeness weighted by the children's sizes, not by repetition.
        order = select_representative(digest.text_vectors, merged, MAX_TEXTS)
        digest.texts = [distinct[i] for i in sorted(order)]
        digest.text_counts = [1] * len(digest.texts)
        digest.text_vectors = digest.text_vectors[sorted(order)]
    written = write_digest(digest, parts=parts_length(kept), max_chars=max_chars)
    return written or clip_words(" ".join(unique_texts(kept)[0]), max_chars)


def sentences_of(text: str) -> list[str]:
    """The sentences of a text (split after . ! ?)."""
    return [s.strip() for s in _SENTENCE_END.split(" ".join(text.split())) if s.strip()]


def acceptable(answer: object, parts: int, max_chars: int = LLM_GIST_MAX_CHARS) -> str | None:
    """An LLM's summary cleaned (spaces collapsed), or None when it must not be used: empty,
    longer than ``max_chars``, not shorter than its ``parts`` (characters back to back), or
    repeating a sentence."""
    if not isinstance(answer, str):
        return None
    text = " ".join(answer.split())
    if not text or len(text) > max_chars or (parts > 1 and len(text) >= parts):
        return None
    keys = [s.lower().rstrip(".!?") for s in sentences_of(text)]
    if len(keys) != len(set(keys)):
        return None
    return text

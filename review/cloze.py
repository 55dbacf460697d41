"""Cloze fronts: a card asks for a memory's most telling words instead of showing them.

A one-line memory's first line is the whole answer, so a front built from it makes review
re-reading. A cloze front shows the memory with one to three gaps, chosen without a
language model, most telling first:

1. numbers and dates ("1969", "3.5", "2024-05-01", "12:30"), which are exactly what a
   person forgets;
2. names: capitalised words not opening a sentence ("Kyoto", "Ada Lovelace": neighbouring
   capitalised words are one gap), and acronyms ("NASA");
3. other content words, rarest in the namespace first (`counts`: how many memories of the
   namespace hold the word; a word no other memory holds is the most telling), then the
   longest.

Stopwords are never hidden and at least half the memory's content words stay visible, so
the front keeps enough context to answer. The choice depends only on the text and the
counts, so a card keeps its gaps from one review to the next while the namespace is stable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from memories.text import STOP_WORDS

GAP = "[…]"
MAX_GAPS = 3

# A token: a number or date with its inner separators and a short unit or suffix written
# against it ("7am", "5km", "3rd", "1990s", "40%": a gap never leaves "[…]am" behind), or
# a word with inner apostrophes and hyphens ("don't", "well-known").
_TOKEN = re.compile(
    r"\d+(?:[.,:/-]\d+)*(?:%|[^\W\d_]{1,3}(?![^\W\d_]))?"
    r"|[^\W\d_]+(?:['\u2019-][^\W\d_]+)*",
    re.UNICODE,
)
_SENTENCE_END = re.compile(r"[.!?:;\n]\s*$")


@dataclass(frozen=True)
class Segment:
    """A run of the memory's text; `gap` marks a hidden one (its text is the answer)."""

    text: str
    gap: bool = False


@dataclass(frozen=True)
class Cloze:
    segments: tuple[Segment, ...]

    @property
    def answers(self) -> list[str]:
        return [segment.text for segment in self.segments if segment.gap]

    @property
    def front(self) -> str:
        """The question as plain text, each gap shown as […]."""
        return "".join(GAP if segment.gap else segment.text for segment in self.segments)


@dataclass(frozen=True)
class _Token:
    start: int
    end: int
    text: str
    sentence_start: bool


def tokens(text: str) -> list[_Token]:
    found = []
    for match in _TOKEN.finditer(text):
        before = text[: match.start()]
        opens = not before.strip() or bool(_SENTENCE_END.search(before))
        found.append(_Token(match.start(), match.end(), match.group(), opens))
    return found


def content_words(text: str) -> list[str]:
    """The words a cloze may hide, folded to lower case: what `counts` is asked for."""
    return sorted({t.text.lower() for t in tokens(text) if _is_content(t) and not _is_number(t)})


def _is_number(token: _Token) -> bool:
    return token.text[0].isdigit()


def _is_content(token: _Token) -> bool:
    if _is_number(token):
        return True
    # Contractions ("don't") are function words however they are spelled.
    text = token.text
    return text.isalpha() and text.lower() not in STOP_WORDS and len(text) >= 3


def _is_name(token: _Token) -> bool:
    text = token.text
    if _is_number(token) or len(text) < 2:
        return False
    if text.isupper():
        return True  # an acronym
    return text[0].isupper() and not token.sentence_start


def gap_count(content_word_count: int) -> int:
    """One gap up to 8 content words, two up to 20, three beyond; never more than half."""
    if content_word_count <= 1:
        return content_word_count
    wanted = 1 if content_word_count <= 8 else 2 if content_word_count <= 20 else MAX_GAPS
    return max(1, min(wanted, content_word_count // 2))


def cloze(text: str, counts: Mapping[str, int] | None = None) -> Cloze | None:
    """The memory's text with its most telling words as gaps; None when it has no word
    worth hiding (then the card falls back to its first line)."""
    found = tokens(text)
    candidates = [(i, t) for i, t in enumerate(found) if _is_content(t)]
    if not candidates:
        return None
    counts = counts or {}

    def rank(entry: tuple[int, _Token]) -> tuple:
        index, token = entry
        kind = 0 if _is_number(token) else 1 if _is_name(token) else 2
        seen = counts.get(token.text.lower(), 0) if kind == 2 else 0
        return (kind, seen, -len(token.text), index)

    chosen: list[tuple[int, int]] = []  # token index ranges, end exclusive
    for index, token in sorted(candidates, key=rank):
        if len(chosen) == gap_count(len(candidates)):
            break
        if any(start <= index < end for start, end in chosen):
            continue
        start, end = index, index + 1
        if _is_name(token):
            # A multi-word name is one gap ("Ada Lovelace", "New York").
            while start > 0 and _joins(found[start - 1]) and _adjacent(text, found, start - 1):
                start -= 1
            while end < len(found) and _joins(found[end]) and _adjacent(text, found, end - 1):
                end += 1
        chosen.append((start, end))
    chosen.sort()
    segments: list[Segment] = []
    cursor = 0
    for start, end in chosen:
        begin, finish = found[start].start, found[end - 1].end
        if begin > cursor:
            segments.append(Segment(text[cursor:begin]))
        segments.append(Segment(text[begin:finish], gap=True))
        cursor = finish
    if cursor < len(text):
        segments.append(Segment(text[cursor:]))
    return Cloze(tuple(segments))


def _joins(token: _Token) -> bool:
    """A capitalised word next to a name belongs to it, unless it is a stopword ("The")."""
    return (
        not _is_number(token) and token.text[0].isupper() and token.text.lower() not in STOP_WORDS
    )


def _adjacent(text: str, found: list[_Token], index: int) -> bool:
    """Only a single space joins the token at `index` to the next one."""
    return text[found[index].end : found[index + 1].start] == " "

"""What the search page says about a result: which query word matched which word of the
memory and how, one relevance on a fixed scale, and why associative results and digests
are there at all.

Recall ranks for agents (recall.pipeline), and its raw_score is relative to the best
candidate of the query: a lone typo match reads 1.0. A person wants to know how good a
match is, so each query word is rated against the memory's words on one fixed scale
(match_word) and the result's relevance is the mean over the query's words (relevance).
Associative results and digests are shown only at or above RELEVANCE_FLOOR, each with its
reason. Nothing here changes what recall returns or its order: the page explains and, for
those two kinds only, hides.

Pure: plain values in, plain values out (and escaped HTML for the highlight); no ORM,
clock or settings.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from memories.text import WORD, fold, is_cjk
from recall.stages import EMBEDDINGS, SIGNATURES
from recall.stages.full_text import FUZZY_SIMILARITY, MIN_TRIGRAM_TERM, trigrams

if TYPE_CHECKING:
    from recall.pipeline import RecallHit
    from recall.stages.digests import DigestHit

# How a query word met a word of the memory, best first.
EXACT = "exact"  # the same word (case and accents aside)
FORM = "form"  # another form of it: databases / database, running / run
PART = "part"  # the query word inside a longer word: kyot / Kyoto, memory / maxmemory
TYPO = "typo"  # one or two letters apart: fushini / Fushimi
TRIGRAM = "trigram"  # sharing enough three-letter pieces: what recall's trigram step keeps

FORM_QUALITY = 0.9
# Every fuzzy match scores below this, so no typo ever reads as an exact match.
FUZZY_CEILING = 0.8
# Associative results and digests below this relevance are not shown (docs/dashboard.md).
RELEVANCE_FLOOR = 0.35


def relevance_help(spread: float) -> str:
    """What the relevance number means, for its tooltip and the note above the results."""
    return (
        "Relevance is how well a memory matches the query's words, averaged over them: "
        "1 exact, 0.9 another form of the word, at most 0.8 for a partial word, a typo or "
        "a trigram match (less the further apart), 0 not found. A result found by meaning "
        "(Se) or worded like the query (Ss) has at least that stage's score; an associative "
        f"result {spread:g} x link weight x the relevance of the result it is linked to. "
        f"Associative results and digests below {RELEVANCE_FLOOR:g} are not shown."
    )


LINK_KINDS = {
    "next_turn": "next turn of the same session",
    "near_turn": "same session",
    "related": "related",
    "near_duplicate": "near-duplicate",
}
SOURCES = {
    "keywords": " (in its keywords)",
    "original": " (in its original-language text)",
    "topic": " (its topic)",
}


# --- One word against one word --------------------------------------------------------------


def _stem(word: str) -> str:
    """A crude English stem, enough to tell inflections apart from typos (not Porter's)."""
    for suffix, replacement in (("ies", "y"), ("ied", "y"), ("sses", "ss"), ("ing", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            word = word[: -len(suffix)] + replacement
            break
    else:
        past = word.endswith("ed") and len(word) > 4
        if past or (word.endswith("es") and len(word) > 3 and word[-3] in "sxzh"):
            word = word[:-2]
        elif word.endswith("s") and len(word) > 3 and not word.endswith(("ss", "us", "is")):
            word = word[:-1]
    if word.endswith("e") and len(word) >= 3:
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
        word = word[:-1]  # running -> runn -> run
    return word


def edit_distance(a: str, b: str, cap: int) -> int:
    """Letters added, removed, changed or swapped to turn a into b; cap + 1 once above cap."""
    if abs(len(a) - len(b)) > cap:
        return cap + 1
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = ca != cb
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > cap:
            return cap + 1
        before, previous = previous, current
    return previous[-1]


def typo_allowance(term: str) -> int:
    """Letters a query word may be off by: none below 4 letters, 1 up to 7, 2 from 8."""
    if len(term) < 4:
        return 0
    return 1 if len(term) < 8 else 2


@functools.lru_cache(maxsize=16384)
def match_word(term: str, word: str) -> tuple[str, float, int, float] | None:
    """How a folded query word matches a folded word of a memory: (kind, quality, letters
    apart, trigram similarity), or None.

    The one scale of match quality: EXACT 1.0, FORM 0.9, and the fuzzy kinds at most
    FUZZY_CEILING, scaled by how much of the word agrees: PART by the share of the word the
    query word covers, TYPO by 1 - letters apart / length, TRIGRAM by the trigram Jaccard
    (at least recall's FUZZY_SIMILARITY). So an exact match rates above a one-typo match,
    and that above a weak trigram match.
    """
    if term == word:
        return EXACT, 1.0, 0, 1.0
    if is_cjk(term) and term in word:
        # Chinese and Japanese are written without spaces: their word inside a run is the
        # word itself, as Sf finds it (memories.text.cjk_tokens), not a part of a longer one.
        return EXACT, 1.0, 0, 1.0
    if len(term) > 1 and len(word) > 1 and _stem(term) == _stem(word):
        return FORM, FORM_QUALITY, 0, 0.0
    if len(term) < MIN_TRIGRAM_TERM or len(word) < MIN_TRIGRAM_TERM:
        return None
    if term in word:
        return PART, FUZZY_CEILING * len(term) / len(word), len(word) - len(term), 0.0
    allowed = typo_allowance(term)
    if allowed:
        apart = edit_distance(term, word, allowed)
        if apart <= allowed:
            return TYPO, FUZZY_CEILING * (1 - apart / max(len(term), len(word))), apart, 0.0
    ours, theirs = trigrams(term), trigrams(word)
    similarity = len(ours & theirs) / len(ours | theirs)
    if similarity >= FUZZY_SIMILARITY:
        return TRIGRAM, FUZZY_CEILING * similarity, 0, similarity
    return None


@dataclass(frozen=True)
class WordMatch:
    """One query word and the memory's word it matched best."""

    term: str  # the folded query word
    word: str  # the memory's word as written
    kind: str
    quality: float
    apart: int = 0
    similarity: float = 0.0
    source: str = ""  # "" the content, "keywords" or "original"

    @property
    def fuzzy(self) -> bool:
        return self.kind not in (EXACT, FORM)

    def describe(self) -> str:
        """'fushini ≈ Fushimi, 1 letter apart': what a person reads next to the result."""
        if self.kind == EXACT:
            text = f"{self.term}: exact"
        elif self.kind == FORM:
            text = f"{self.term} ~ {self.word}: another form of the word"
        elif self.kind == PART:
            text = f"{self.term} is part of {self.word}"
        elif self.kind == TYPO:
            text = f"{self.term} ≈ {self.word}, {_letters(self.apart)} apart"
        else:
            text = f"{self.term} ≈ {self.word}, trigram similarity {self.similarity:.2f}"
        return text + SOURCES.get(self.source, "")


def _letters(n: int) -> str:
    return f"{n} letter" if n == 1 else f"{n} letters"


def relevance(qualities: Sequence[float], *, semantic: float = 0.0) -> float:
    """The relevance the page shows, in [0, 1]: the mean of the query words' match qualities
    (0 for a word not found), or the semantic stages' own score (Se cosine, Ss Hamming
    similarity) when that is higher. Absolute, not relative to the other results."""
    lexical = sum(qualities) / len(qualities) if qualities else 0.0
    return min(1.0, max(0.0, lexical, semantic))


def association_relevance(*, weight: float, origin: float, spread: float) -> float:
    """What an associative result is worth: recall's spreading gain (spread x link weight x
    the linked result's relevance, recall.ranking.association_support) on the page's scale."""
    return min(1.0, max(0.0, spread * weight * origin))


# --- A query against a text -----------------------------------------------------------------


def _tokens(text: str) -> list[tuple[re.Match[str], str]]:
    return [(match, fold(match.group())) for match in WORD.finditer(text or "")]


def best_matches(
    terms: Sequence[str], sources: Sequence[tuple[str, str]]
) -> dict[str, WordMatch | None]:
    """Per query word, its best match among the words of (source, text) pairs; earlier
    sources win ties (the content before keywords before the original-language text)."""
    best: dict[str, WordMatch | None] = dict.fromkeys(terms)
    for source, text in sources:
        for match, folded in _tokens(text):
            for term in terms:
                found = match_word(term, folded)
                current = best[term]
                if found and (current is None or found[1] > current.quality):
                    kind, quality, apart, similarity = found
                    best[term] = WordMatch(
                        term, match.group(), kind, quality, apart, similarity, source
                    )
    return best


def highlight(text: str, terms: Sequence[str]) -> SafeString:
    """The text, escaped, with the words that match a query word wrapped in <mark>.

    Every exact match and every other form of a query word is marked; a query word with
    neither in the text marks its best fuzzy matches instead, with class "fuzzy" and a
    title that says how they match ("fushini ≈ Fushimi, 1 letter apart").
    """
    tokens = _tokens(text)
    if not terms or not tokens:
        return escape(text)
    marks: dict[int, WordMatch] = {}
    for term in terms:
        scored = [(i, match_word(term, folded)) for i, (_m, folded) in enumerate(tokens)]
        found = [(i, m) for i, m in scored if m is not None]
        if not found:
            continue
        top = max(m[1] for _i, m in found)
        for i, (kind, quality, apart, similarity) in found:
            if kind in (EXACT, FORM) or quality == top:
                mark = WordMatch(term, tokens[i][0].group(), kind, quality, apart, similarity)
                if i not in marks or mark.quality > marks[i].quality:
                    marks[i] = mark
    parts: list[str] = []
    last = 0
    for i, (match, _folded) in enumerate(tokens):
        mark = marks.get(i)
        if mark is None:
            continue
        parts.append(escape(text[last : match.start()]))
        if mark.fuzzy:
            parts.append(
                format_html('<mark class="fuzzy" title="{}">{}</mark>', mark.describe(), mark.word)
            )
        else:
            parts.append(f"<mark>{escape(mark.word)}</mark>")
        last = match.end()
    parts.append(escape(text[last:]))
    # Every piece was escaped above, so the joined string is safe.
    return mark_safe("".join(parts))


# --- Results ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Link:
    """Why an associative result is there: the shown result it is linked to."""

    memory_id: int
    excerpt: str
    kind: str  # a LINK_KINDS label
    weight: float


@dataclass
class Explanation:
    """What the page says about one memory result."""

    memory_id: int
    relevance: float
    matches: list[WordMatch] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    semantic: list[str] = field(default_factory=list)
    link: Link | None = None
    shown: bool = True


def excerpt(text: str, limit: int = 48) -> str:
    """The text on one line, cut at a word boundary with an ellipsis past `limit`."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if text[limit - 1] != " " and " " in cut:
        cut = cut.rsplit(" ", 1)[0]  # no half words
    return cut.rstrip(" ,;:.") + "…"


def explain_hits(
    hits: Sequence[RecallHit],
    *,
    terms: Sequence[str],
    originals: dict[int, str],
    links: Iterable[tuple[int, int, float, str]],
    spread: float,
    floor: float = RELEVANCE_FLOOR,
) -> list[Explanation]:
    """One explanation per recall hit, in their order.

    A hit a stage found is rated by its words (content, keywords, original-language text)
    and its semantic scores, and always shown. An associative hit is rated by its best link
    (links: source, target, weight, kind) to a shown hit a stage found, and shown only at
    or above `floor`: with no such link it is worth 0.
    """
    explained: dict[int, Explanation] = {}
    direct = [hit for hit in hits if not hit.associative]
    for hit in direct:
        sources = [("", hit.content), ("keywords", " ".join(_strings(hit.metadata)))]
        sources.append(("original", originals.get(hit.memory_id, "")))
        best = best_matches(terms, sources)
        semantic = []
        if EMBEDDINGS in hit.stage_scores:
            semantic.append(f"close in meaning (cosine {hit.stage_scores[EMBEDDINGS]:.2f})")
        if SIGNATURES in hit.stage_scores:
            semantic.append(
                f"worded like the query (signature similarity {hit.stage_scores[SIGNATURES]:.2f})"
            )
        scores = [hit.stage_scores.get(s, 0.0) for s in (EMBEDDINGS, SIGNATURES)]
        explained[hit.memory_id] = Explanation(
            memory_id=hit.memory_id,
            relevance=relevance(
                [m.quality if m else 0.0 for m in best.values()], semantic=max(scores)
            ),
            matches=[m for m in best.values() if m],
            missing=[term for term, m in best.items() if m is None],
            semantic=semantic,
        )
    content = {hit.memory_id: hit.content for hit in direct}
    neighbours: dict[int, list[tuple[int, float, str]]] = {}
    for source, target, weight, kind in links:
        neighbours.setdefault(source, []).append((target, weight, kind))
        neighbours.setdefault(target, []).append((source, weight, kind))
    for hit in hits:
        if not hit.associative:
            continue
        best_link, worth = None, 0.0
        for other, weight, kind in neighbours.get(hit.memory_id, []):
            if other not in content:
                continue
            gain = association_relevance(
                weight=weight, origin=explained[other].relevance, spread=spread
            )
            if gain > worth or best_link is None:
                label = LINK_KINDS.get(kind, kind.replace("_", " "))
                best_link, worth = Link(other, excerpt(content[other]), label, weight), gain
        explained[hit.memory_id] = Explanation(
            memory_id=hit.memory_id, relevance=worth, link=best_link, shown=worth >= floor
        )
    return [explained[hit.memory_id] for hit in hits]


def _strings(metadata: dict[str, Any]) -> list[str]:
    keywords = metadata.get("keywords") or []
    return [k for k in keywords if isinstance(k, str)] if isinstance(keywords, list) else []


# --- Digests ----------------------------------------------------------------------------------

# memories.consolidation.digest_text's lines: the header, and one bullet per quoted memory
# ending with its id and score. Only the quoted text says what a digest is about; the rest
# is the template's own words ("digest", "memory", "score", "week"), which match anything.
_HEADER = re.compile(r"^(daily|weekly|quarterly) digest for .*: \d+ memor(y|ies)\b", re.I)
_BULLET = re.compile(r"^([-*•]\s*)(.*?)(\s*\(#\d+, score -?[\d.]+\))?$", re.S)


def digest_parts(paragraph: str) -> tuple[str, str, str]:
    """(before, body, after) of a digest paragraph: the body is what it says about its
    memories (a quoted excerpt; for the header, nothing but the topic it names)."""
    if _HEADER.match(paragraph):
        return paragraph, "", ""
    bullet = _BULLET.match(paragraph)
    if bullet:
        return bullet.group(1), bullet.group(2), bullet.group(3) or ""
    return "", paragraph, ""


@dataclass
class DigestExplanation:
    """What the page says about one digest paragraph."""

    digest: DigestHit
    relevance: float
    reason: str
    text: SafeString
    matches: list[WordMatch] = field(default_factory=list)
    shown: bool = True


def explain_digests(
    digests: Sequence[DigestHit], *, terms: Sequence[str], floor: float = RELEVANCE_FLOOR
) -> list[DigestExplanation]:
    """Each digest paragraph rated by its own words against the query, shown only at or
    above `floor`, with the reason it is there: what the digest is of, and what matched."""
    out = []
    for digest in digests:
        before, body, after = digest_parts(digest.text)
        best = best_matches(terms, [("", body), ("topic", digest.topic)])
        matches = [m for m in best.values() if m]
        worth = relevance([m.quality if m else 0.0 for m in best.values()])
        text = format_html("{}{}{}", before, highlight(body, terms), after)
        out.append(
            DigestExplanation(
                digest=digest,
                relevance=worth,
                reason=digest_reason(digest.period, len(digest.memory_ids), digest.topic),
                text=text,
                matches=matches,
                shown=worth >= floor,
            )
        )
    return out


def digest_reason(period: str, memories: int, topic: str) -> str:
    """'weekly digest of 3 memories about “Kyoto”'."""
    about = f"about “{topic}”" if topic else "without a topic"
    noun = "memory" if memories == 1 else "memories"
    return f"{period} digest of {memories} {noun} {about}"

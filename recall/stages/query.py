"""A recall query reduced to the words the stages match on, and the dates it names."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, tzinfo

from memories.text import STOP_WORDS, cjk_pairs, is_cjk_character, words
from recall import temporal

MAX_QUERY_TERMS = 16


@dataclass
class QueryTerms:
    """A query reduced to what the stages match on."""

    text: str
    terms: list[str]  # folded content words, stop words and dates removed, in query order
    all_words: list[str]  # every folded word, stop words included
    # The times it names (recall.temporal); empty unless analysed with a `now`.
    when: temporal.TemporalQuery = field(default_factory=temporal.TemporalQuery)

    @property
    def only_common_words(self) -> bool:
        return bool(self.all_words) and not self.terms and not self.when


def analyse_query(
    text: str, *, now: datetime | None = None, tz: tzinfo | None = None
) -> QueryTerms:
    """Content words of `text`; with `now` (and the user's `tz`), also the dates it names,
    whose words are then not content words ("in May 2023" matches memories written then,
    not memories saying "May")."""
    all_words = words(text)
    when = temporal.parse(text, now=now, tz=tz or now.tzinfo) if now else temporal.TemporalQuery()
    content = words(when.rest) if when else all_words
    # One-character words are noise, except a Chinese or Japanese character (猫, 寿): a
    # word of its own, matched as a prefix (prefix_term).
    terms = [
        w
        for w in dict.fromkeys(content)
        if w not in STOP_WORDS and (len(w) > 1 or is_cjk_character(w))
    ]
    # A run of unspaced CJK text is one word to the tokenizers: its character pairs, which
    # the full-text indexes hold (memories.text.cjk_tokens), follow it ("東京タワー" finds
    # "東京に行った"; "東京" finds "東京タワー").
    terms = list(dict.fromkeys(t for w in terms for t in (w, *cjk_pairs(w))))
    return QueryTerms(text=text, terms=terms[:MAX_QUERY_TERMS], all_words=all_words, when=when)


def prefix_term(term: str) -> bool:
    """Whether Sf matches a term as a prefix of the CJK tokens rather than as a word: a
    single CJK character, which the index holds only inside its pairs (and alone at the end
    of a run: memories.text.cjk_tokens), so "猫" finds "我的猫" and "猫が好き"."""
    return is_cjk_character(term)

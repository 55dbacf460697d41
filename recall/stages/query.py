"""A recall query reduced to the words the stages match on."""

from __future__ import annotations

from dataclasses import dataclass

from memories.text import STOP_WORDS, words

MAX_QUERY_TERMS = 16


@dataclass
class QueryTerms:
    """A query reduced to what the stages match on."""

    text: str
    terms: list[str]  # folded content words, stop words removed, in query order
    all_words: list[str]  # every folded word, stop words included

    @property
    def only_common_words(self) -> bool:
        return bool(self.all_words) and not self.terms


def analyse_query(text: str) -> QueryTerms:
    all_words = words(text)
    terms = [w for w in dict.fromkeys(all_words) if w not in STOP_WORDS and len(w) > 1]
    return QueryTerms(text=text, terms=terms[:MAX_QUERY_TERMS], all_words=all_words)

"""A recall query reduced to the words the stages match on."""

from __future__ import annotations

from dataclasses import dataclass

from memories.text import words

MAX_QUERY_TERMS = 16
# English function words: the union of the usual IR stop lists (PostgreSQL's english
# dictionary, Lucene, NLTK) trimmed to words that never carry a query's meaning.
_STOP_WORDS = """a about above after again against all am an and any are aren as at be because been
    before being below between both but by can cannot could couldn d did didn do does doesn
    doing don down during each few for from further had hadn has hasn have haven having he
    her here hers herself him himself his how i if in into is isn it its itself just ll m me
    more most mustn my myself no nor not now of off on once only or other ought our ours
    ourselves out over own re s same shan she should shouldn so some such t than that the
    their theirs them themselves then there these they this those through to too under until
    up ve very was wasn we were weren what when where which while who whom why will with won
    would wouldn y you your yours yourself yourselves"""
STOP_WORDS = frozenset(_STOP_WORDS.split())


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

"""Stage Sf of seed 002: memories by their words, in three sub-queries.

Stemmed full text first (PostgreSQL's generated tsvector ranked with an idf per term,
SQLite's FTS5 porter table ranked by bm25), then for words with no stemmed match a
trigram sub-query over the folded text (typos, substrings), then the same over the
original-language text while results are still short; a query naming a date whose words
match nothing gets the memories written then (recall.temporal). Hits come back as plain
(memory id, raw score, sub-query) triples; recall.fusion turns them into scores.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import connection

from config.db import is_postgres
from recall import termstats
from recall.rows import row_columns, row_from
from recall.stages.filters import RecallFilters
from recall.stages.query import QueryTerms, prefix_term
from recall.temporal import TimeRange

MIN_TRIGRAM_TERM = 3
FUZZY_SIMILARITY = 0.45  # trigram Jaccard a typo'd word must reach against a stored word
TRIGRAM_CANDIDATES = 50
TRIGRAM_SCAN = 500  # rows the trigram index may propose per sub-query
# Below this many memories (and below the match budget) a namespace's own rows are read
# and matched rather than the words' index entries over every namespace of the table.
SMALL_NAMESPACE = 2_000


@dataclass
class FullTextResult:
    """Sf's hits in its own order (stemmed, then trigram, then original-language)."""

    hits: list[tuple[int, float, str]] = field(default_factory=list)  # id, raw score, step
    # The stemmed hits' candidate rows (recall.rows), read by the same statement: the
    # pipeline loads only the other hits' rows.
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    document_frequency: dict[str, int] = field(default_factory=dict)
    matched_terms: list[str] = field(default_factory=list)
    dropped_terms: list[str] = field(default_factory=list)
    unmatched_terms: list[str] = field(default_factory=list)
    note: str = ""


def full_text(
    query: QueryTerms,
    filters: RecallFilters,
    *,
    limit: int,
    candidate_cap: int,
    match_budget: int,
) -> FullTextResult:
    """Seed 002's three sub-queries, deduplicated by id, each with the filters in SQL.

    The stemmed sub-query matches only the rarest terms whose document frequencies add up
    to at most match_budget (always at least one), and ranks at most match_budget matching
    rows (the newest), so a query of common words ranks a bounded set instead of the
    namespace. Terms with no stemmed match at all (typos, substrings, other spellings,
    other languages) go to the trigram sub-query, and to the original-language sub-query
    while results are still short of the limit.
    """
    result = FullTextResult()
    if not query.terms:
        result.note = "only common words" if query.only_common_words else "no words"
        return _dated_fallback(result, query, filters, candidate_cap)
    # Counting stops early: a word in more than a quarter of the budget is "common" and
    # its exact count changes neither the term choice much nor its (low) idf.
    df, n_docs = document_frequencies(
        query.terms, filters, cap=match_budget // 4 + 1, n_cap=match_budget
    )
    result.document_frequency = df
    present = sorted((t for t in query.terms if df[t] > 0), key=lambda t: df[t])
    result.unmatched_terms = [t for t in query.terms if df[t] == 0]
    df_cap = match_budget // 4 + 1
    chosen: list[str] = []
    total = 0
    for term in present:
        # A word whose count hit the cap is common: matched on only when nothing rarer is.
        if chosen and (df[term] >= df_cap or total + df[term] > match_budget):
            break
        chosen.append(term)
        total += df[term]
    result.matched_terms = chosen
    result.dropped_terms = [t for t in present if t not in chosen]
    seen: set[int] = set()
    if chosen:
        rows = (
            _stemmed_postgres(query.terms, chosen, df, n_docs, filters, candidate_cap, match_budget)
            if is_postgres()
            else _stemmed_sqlite(chosen, df, filters, candidate_cap, match_budget)
        )
        for memory_id, score, row in rows:
            if memory_id not in seen:
                seen.add(memory_id)
                result.hits.append((memory_id, float(score), "stemmed"))
                result.rows[memory_id] = row
    fuzzy_terms = [t for t in result.unmatched_terms if len(t) >= MIN_TRIGRAM_TERM]
    small = _small(n_docs, match_budget)
    if fuzzy_terms:
        for memory_id, score in _trigram(fuzzy_terms, filters, "search_text", small=small):
            if memory_id not in seen:
                seen.add(memory_id)
                result.hits.append((memory_id, score, "trigram"))
    if len(result.hits) < limit:
        # Only words the English index does not know can be in another language.
        original_terms = fuzzy_terms
        if original_terms:
            for memory_id, score in _trigram(
                original_terms, filters, "search_original", small=small
            ):
                if memory_id not in seen:
                    seen.add(memory_id)
                    result.hits.append((memory_id, score, "original"))
    return _dated_fallback(result, query, filters, candidate_cap)


def _dated_fallback(
    result: FullTextResult, query: QueryTerms, filters: RecallFilters, cap: int
) -> FullTextResult:
    """A query that names a date and matched no words ("what happened yesterday?"): the
    memories written then, newest first."""
    if result.hits or not query.when.ranges:
        return result
    result.hits = [(i, 1.0, "dated") for i in _dated(query.when.ranges, filters, cap)]
    if result.hits:
        result.note = "written " + query.when.describe()
    return result


def document_frequencies(
    terms: Sequence[str], filters: RecallFilters, *, cap: int, n_cap: int = 2000
) -> tuple[dict[str, int], int]:
    """Matching-row counts per term, each capped at `cap` rows, and the collection size.

    Counted over what the caller may know of (RecallFilters.population_sql: the live
    memories of its namespaces at or below its ceiling), never over the namespace or the
    table: the counts choose the words Sf matches on and Sf's explanation names them, so a
    count that saw a memory above the ceiling would tell the caller that a word is in it.

    One statement in all. PostgreSQL caps the collection size at n_cap rows: enough for
    idf to tell rare from common, and a scan of a few thousand entries rather than the
    namespace. SQLite counts each word's matches in the full-text table that pass the
    same filter, and needs no collection size.
    """
    population, population_params = filters.population_sql("m")
    if is_postgres():
        # Large namespaces have stored counts (recall.termstats); count only the rest.
        # The statistics count whole lexemes; a prefix term's matches are counted live.
        known, size = termstats.lookup(
            [t for t in terms if not prefix_term(t)], filters.namespace_ids, filters.ceiling
        )
        live = [term for term in terms if term not in known]
        if not live and size is not None:
            return {term: known[term] for term in terms}, size
        if size is None:
            # No statistics: a namespace below RECALL_TERM_STATS_MIN_MEMORIES (n_cap), or
            # one the worker has not counted yet. A small one is counted from its own rows.
            scanned = _scanned_frequencies(live, filters, min(n_cap, SMALL_NAMESPACE))
            if scanned is not None:
                counts, size = scanned
                return {term: min(counts[term], cap) for term in terms}, size
        parts = []
        params: list = []
        for term in live:
            tsquery, param = _tsquery(term)
            parts.append(
                "(SELECT count(*) FROM (SELECT 1 FROM memories_memory m "
                f"WHERE {population} AND m.search_vector @@ {tsquery} LIMIT %s) s)"
            )
            params += [*population_params, param, cap]
        if size is None:
            parts.append(
                "(SELECT count(*) FROM (SELECT 1 FROM memories_memory m "
                f"WHERE {population} LIMIT %s) s)"
            )
            params += [*population_params, n_cap]
        with connection.cursor() as cursor:
            cursor.execute("SELECT " + ", ".join(parts), params)
            counts = cursor.fetchone()
        counted = dict(zip(live, counts[: len(live)], strict=True))
        df = {term: int(known[term] if term in known else counted[term]) for term in terms}
        return df, size if size is not None else int(counts[len(live)])
    parts = [
        # CROSS JOIN: SQLite walks the word's matches and looks each row up, never the
        # namespace's rows.
        "(SELECT count(*) FROM (SELECT 1 FROM memories_memory_fts t "
        "CROSS JOIN memories_memory m ON m.id = t.rowid "
        f"WHERE memories_memory_fts MATCH %s AND {population} LIMIT %s))"
    ] * len(terms)
    params = []
    for term in terms:
        params += [_fts_term(term), *population_params, cap]
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(parts), params)
        counts = cursor.fetchone()
    df = {term: int(count) for term, count in zip(terms, counts[: len(terms)], strict=True)}
    n_docs = int(counts[len(terms)]) if len(counts) > len(terms) else 0
    return df, n_docs


def _small(n_docs: int, budget: int) -> bool:
    """Whether the namespaces are read by their own rows: fewer than SMALL_NAMESPACE rows
    and than the budget (so the match's LIMIT never cuts). n_docs is exact below both."""
    return n_docs < min(budget, SMALL_NAMESPACE)


def _own_rows(column: str, where: str) -> str:
    """`own`: the id and `column` of the rows passing the filters' `where` (over `m`), read
    by namespace and kept apart, so that the match runs on them rather than on the index
    (PostgreSQL; for namespaces that are _small)."""
    return (
        f"WITH own AS MATERIALIZED (SELECT m.id, m.{column} FROM memories_memory m WHERE {where})"
    )


def _scanned_frequencies(
    terms: Sequence[str], filters: RecallFilters, n_cap: int
) -> tuple[dict[str, int], int] | None:
    """Exact matching-row counts of terms and the collection size, read from the
    namespaces' own rows the caller may know of in one pass, or None when they hold more
    than n_cap rows.

    For a small namespace in a large table this is the cheap way: the GIN index would
    read each word's posting list over every namespace (a word in 8 % of 1,000,000
    memories: about 3 ms), to keep the few entries of this one.
    """
    population, params = filters.population_sql("m")
    queries = [_tsquery(term) for term in terms]
    counts = "".join(
        f", count(*) FILTER (WHERE r.search_vector @@ {tsquery})" for tsquery, _ in queries
    )
    sql = (
        "WITH r AS MATERIALIZED (SELECT m.search_vector FROM memories_memory m "
        f"WHERE {population} LIMIT %s) SELECT count(*){counts} FROM r"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, n_cap + 1, *(param for _, param in queries)])
        size, *found = cursor.fetchone()
    if size > n_cap:
        return None
    return dict(zip(terms, map(int, found), strict=True)), int(size)


def _fts_phrase(term: str) -> str:
    # Words are \w runs, so they never contain a double quote.
    return f'"{term}"'


def _fts_term(term: str) -> str:
    """FTS5's query of one term: the word, or a single CJK character as the prefix of a
    token of the CJK column (query.prefix_term)."""
    if prefix_term(term):
        return f"(search_pairs : {_fts_phrase(term)}*)"
    return _fts_phrase(term)


def _tsquery(term: str) -> tuple[str, str]:
    """PostgreSQL's query of one term and its parameter: the word as the english
    configuration reads it, or a single CJK character as the prefix of a lexeme ('simple',
    as the CJK tokens are indexed; any lexeme that starts with it holds it)."""
    if prefix_term(term):
        return "to_tsquery('simple', %s)", f"{term}:*"
    return "plainto_tsquery('english', %s)", term


def _stemmed_sqlite(
    chosen: list[str],
    df: dict[str, int],
    filters: RecallFilters,
    cap: int,
    budget: int,
) -> list[tuple[int, float, dict[str, Any]]]:
    """FTS5 porter match ranked by bm25 (content weighs twice the keywords).

    The inner query walks the index newest first, keeps the matches that pass the filters
    and stops after `budget` of them (FTS5 computes bm25 only for the rows it returns), so
    even a query whose rarest word is in half the memories does bounded work; below the
    budget it returns every match. The filters apply before the budget: another
    namespace's newer matches never use it up.
    """
    match = " OR ".join(_fts_term(t) for t in chosen)
    where, params = filters.sql("m")
    sql = (
        f"SELECT m.id, f.score, {row_columns()} FROM ("
        "SELECT t.rowid AS id, -bm25(memories_memory_fts, 1.0, 0.5, 1.0) AS score "
        "FROM memories_memory_fts t CROSS JOIN memories_memory m ON m.id = t.rowid "
        f"WHERE memories_memory_fts MATCH %s AND {where} "
        "ORDER BY t.rowid DESC LIMIT %s) f "
        "JOIN memories_memory m ON m.id = f.id ORDER BY f.score DESC LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [match, *params, budget, cap])
        return [(values[0], values[1], row_from(values[2:])) for values in cursor.fetchall()]


def _stemmed_postgres(
    terms: list[str],
    chosen: list[str],
    df: dict[str, int],
    n_docs: int,
    filters: RecallFilters,
    cap: int,
    budget: int,
) -> list[tuple[int, float, dict[str, Any]]]:
    """BM25-like ranking: sum over query terms of idf(term) * ts_rank(vector, term).

    ts_rank alone knows no document frequency, so a name found in half the namespace
    would weigh as much as a rare word; the capped counts give the idf. The inner LIMIT
    bounds the rows ranked whatever the terms.
    """
    n_docs = max(n_docs, *df.values(), 1)
    ranked_terms = [t for t in terms if df.get(t, 0) > 0]
    ranked = [_tsquery(term) for term in ranked_terms]
    rank_sql = " + ".join(f"%s * ts_rank(c.search_vector, {tsquery}, 1)" for tsquery, _ in ranked)
    rank_params: list = []
    for term, (_, param) in zip(ranked_terms, ranked, strict=True):
        rank_params += [_idf(df[term], n_docs), param]
    matches = [_tsquery(term) for term in chosen]
    match_sql = " || ".join(tsquery for tsquery, _ in matches)
    match_params = [param for _, param in matches]
    where, params = filters.sql("m")
    if _small(n_docs, budget):
        # The namespaces hold fewer rows than the budget (n_docs is exact below it): read
        # them by namespace and match each, rather than walk the words' posting lists
        # over every namespace of the table (54,000 entries, 13 ms, for four words of a
        # 1,000-memory namespace among 1,000,000 memories). The same rows match.
        matching = (
            f"{_own_rows('search_vector', where)} SELECT own.id, own.search_vector FROM own "
            f"WHERE own.search_vector @@ ({match_sql}) LIMIT %s"
        )
        matching_params = [*params, *match_params, budget]
    else:
        matching = (
            "SELECT m.id, m.search_vector FROM memories_memory m "
            f"WHERE m.search_vector @@ ({match_sql}) AND {where} LIMIT %s"
        )
        matching_params = [*match_params, *params, budget]
    # The ranked ids joined back to their rows in the same statement (a nested loop over
    # the sorted ranking keeps its order), which saves the pipeline a round trip. Equal
    # scores are ordered by id, newest first, whichever way the rows were found.
    sql = (
        f"SELECT r.id, r.score, {row_columns()} FROM ("
        f"SELECT c.id, {rank_sql} AS score FROM ({matching}) c "
        "ORDER BY score DESC, c.id DESC LIMIT %s) r "
        "JOIN memories_memory m ON m.id = r.id ORDER BY r.score DESC, r.id DESC"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*rank_params, *matching_params, cap])
        return [(values[0], values[1], row_from(values[2:])) for values in cursor.fetchall()]


def _idf(df: int, n_docs: int) -> float:
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


def trigrams(word: str) -> frozenset[str]:
    """A word's trigrams, padded as pg_trgm pads them."""
    padded = f"  {word} "
    return frozenset(padded[i : i + 3] for i in range(len(padded) - 2))


def word_match(term: str, text_words: Iterable[str]) -> float:
    """How well one query word matches a text: 1.0 inside a word, else best trigram Jaccard."""
    best = 0.0
    term_grams = trigrams(term)
    for word in text_words:
        if term in word:
            return 1.0
        best = max(best, _word_score(term, term_grams, word, trigrams(word)))
    return best


def _word_score(term: str, term_grams: frozenset[str], word: str, grams: frozenset[str]) -> float:
    """One query word against one stored word: 1.0 inside it, else their trigram Jaccard."""
    if term in word:
        return 1.0
    shared = len(term_grams & grams)
    return shared / (len(term_grams) + len(grams) - shared)


def fuzzy_scores(
    terms: Sequence[str], texts: Iterable[tuple[int, str | None]]
) -> list[tuple[int, float]]:
    """(id, score) of the texts where some term matches a word at FUZZY_SIMILARITY or
    better; score = the sum of each term's best word_match that reaches it, over the
    number of terms.

    Each distinct word is matched against the terms once, not once per text it is in:
    the few hundred texts a sub-query proposes share most of their words, and matching
    word by word cost the typo path 40-90 ms of Python per query at 100,000 memories.
    """
    term_grams = [(term, trigrams(term)) for term in terms]

    def match(word: str) -> list[float]:
        # word_match(term, [word]) for each term, but 0 where it cannot reach
        # FUZZY_SIMILARITY: Jaccard is at most the smaller trigram set's size over the larger's.
        grams = trigrams(word)
        size = len(grams)
        scores = []
        for term, ours in term_grams:
            if term not in word and min(size, len(ours)) < FUZZY_SIMILARITY * max(size, len(ours)):
                scores.append(0.0)
            else:
                scores.append(_word_score(term, ours, word, grams))
        return scores

    split = [(memory_id, set((text or "").split())) for memory_id, text in texts]
    vocabulary: set[str] = set().union(*(words for _, words in split))
    matched: dict[str, list[float]] = {}  # word -> each term's match, if any is good
    for word in _sharing_trigrams(terms, vocabulary):
        scores = match(word)
        if max(scores, default=0.0) >= FUZZY_SIMILARITY:
            matched[word] = scores
    scored = []
    for memory_id, words in split:
        hits = words & matched.keys()
        if not hits:
            continue
        best = [max(matched[w][i] for w in hits) for i in range(len(terms))]
        good = [m for m in best if m >= FUZZY_SIMILARITY]
        scored.append((memory_id, sum(good) / len(terms)))
    return scored


def _sharing_trigrams(terms: Sequence[str], words: set[str]) -> Iterable[str]:
    """The words that share with some term a trigram other than its first ("  a"): the
    only ones that can contain a term or reach FUZZY_SIMILARITY with it (one shared
    trigram of the four or more a term of MIN_TRIGRAM_TERM letters has is at most 1/4).

    One regular expression over all the words, so the thousands that share nothing are
    passed over in C: a word shares " ab" by starting with a term's first two letters, a
    trigram inside by containing it, "yz " by ending with its last two.
    """
    if any(len(term) < MIN_TRIGRAM_TERM for term in terms) or not words:
        return words
    inner = {term[i : i + 3] for term in terms for i in range(len(term) - 2)}
    starts = {term[:2] for term in terms}
    ends = {term[-2:] for term in terms}
    alternatives = [f"{re.escape(a)}[^\n]*" for a in sorted(starts)]
    alternatives.append(f"[^\n]*(?:{'|'.join(re.escape(g) for g in sorted(inner))})[^\n]*")
    alternatives += [f"[^\n]*{re.escape(z)}" for z in sorted(ends)]
    pattern = re.compile(f"^(?:{'|'.join(alternatives)})$", re.MULTILINE)
    return pattern.findall("\n".join(words))


def _halves(term: str) -> list[str]:
    """Substrings that survive one typo: the word itself, or for words of six letters or
    more its two halves (an edit touches only one of them)."""
    if len(term) < 2 * MIN_TRIGRAM_TERM:
        return [term]
    middle = len(term) // 2
    return [term[:middle], term[middle:]]


def _trigram(
    terms: list[str], filters: RecallFilters, column: str, *, small: bool = False
) -> list[tuple[int, float]]:
    """Substring and typo matches of terms in a folded column; score = mean term match.

    The index proposes rows containing a term or one of its halves, at most TRIGRAM_SCAN
    rows that pass the filters (on SQLite and in `small` namespaces the newest); Python
    keeps those where each word is inside a stored word or shares a trigram Jaccard of at
    least FUZZY_SIMILARITY with one. `small`: the namespaces hold fewer rows than the match
    budget, so on PostgreSQL their own rows are read and matched, rather than the
    pieces' trigram posting lists over every namespace of the table.
    """
    where, params = filters.sql("m")
    pieces = list(dict.fromkeys(p for term in terms for p in _halves(term)))
    if is_postgres():
        # LIKE, not ILIKE: the column and the terms are both folded (memories.text.fold),
        # and ILIKE's case-insensitive recheck of each proposed row cost twice as much.
        condition_params = [f"%{_escape_like(piece)}%" for piece in pieces]
        if small:
            condition = " OR ".join([f"own.{column} LIKE %s"] * len(pieces))
            sql = (
                f"{_own_rows(column, where)} SELECT own.id, own.{column} FROM own "
                f"WHERE ({condition}) ORDER BY own.id DESC LIMIT %s"
            )
            all_params = [*params, *condition_params, TRIGRAM_SCAN]
        else:
            condition = " OR ".join([f"m.{column} LIKE %s"] * len(pieces))
            sql = (
                f"SELECT m.id, m.{column} FROM memories_memory m "
                f"WHERE ({condition}) AND {where} LIMIT %s"
            )
            all_params = [*condition_params, *params, TRIGRAM_SCAN]
    else:
        # The filters apply within the scan, as in _stemmed_sqlite: another namespace's
        # newer matches never use up the TRIGRAM_SCAN rows.
        match = f"{column} : ({' OR '.join(_fts_phrase(p) for p in pieces)})"
        sql = (
            f"SELECT m.id, m.{column} FROM memories_memory_trgm t "
            "CROSS JOIN memories_memory m ON m.id = t.rowid "
            f"WHERE memories_memory_trgm MATCH %s AND {where} ORDER BY t.rowid DESC LIMIT %s"
        )
        all_params = [match, *params, TRIGRAM_SCAN]
    with connection.cursor() as cursor:
        cursor.execute(sql, all_params)
        rows = cursor.fetchall()
    scored = fuzzy_scores(terms, rows)
    scored.sort(key=lambda pair: -pair[1])
    return scored[:TRIGRAM_CANDIDATES]


def _dated(ranges: list[TimeRange], filters: RecallFilters, cap: int) -> list[int]:
    """Ids of up to `cap` memories passing the filters written within any of the ranges,
    newest first."""
    ops = connection.ops
    where, params = filters.sql("m")
    within = " OR ".join(["(m.created_at >= %s AND m.created_at < %s)"] * len(ranges))
    for r in ranges:
        params += [
            ops.adapt_datetimefield_value(datetime.fromtimestamp(r.start, UTC)),
            ops.adapt_datetimefield_value(datetime.fromtimestamp(r.end, UTC)),
        ]
    sql = (
        f"SELECT m.id FROM memories_memory m WHERE {where} AND ({within}) "
        "ORDER BY m.created_at DESC LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, cap])
        return [row[0] for row in cursor.fetchall()]


def _escape_like(term: str) -> str:
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")

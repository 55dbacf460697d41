"""The recall stages of seed 002, each a function over one database round trip or a few.

Sf full text (stemmed, then trigram, then original-language trigram), Se embeddings,
Ss signatures, S6 consolidation digests and S8 entity relations. Every stage applies the
same filters in SQL (namespaces, classification ceiling, live status, hot storage, expiry,
topic, tier, time range) so nothing above the caller's ceiling is ever read into Python.

SQL is written per vendor: the PostgreSQL stages use the generated tsvector, pg_trgm and
bit operations; the SQLite stages use the FTS5 porter and trigram tables and a registered
Hamming function. Both return plain (memory id, raw score) lists; ranking is the
pipeline's job.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection
from django.db.models import Q

from memories.models import Consolidation, Entity, Memory, Relation
from memories.signatures import hamming_similarity, simhash
from memories.text import fold, words
from recall import termstats

LIVE_STATUSES = (Memory.Status.ACTIVE.value, Memory.Status.PROMOTED.value)
MAX_QUERY_TERMS = 16
MIN_TRIGRAM_TERM = 3
FUZZY_SIMILARITY = 0.45  # trigram Jaccard a typo'd word must reach against a stored word
TRIGRAM_CANDIDATES = 50
TRIGRAM_SCAN = 500  # rows the trigram index may propose per sub-query
DIGEST_SCORE = 0.5
DIGEST_TERMS = 5
RELATION_LIMIT = 20
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


def in_list(column: str, values: Sequence[int]) -> tuple[str, list]:
    """`column` is one of the integer values: a single array parameter on PostgreSQL (a
    list of a few hundred placeholders costs more to build and plan than the lookup
    itself), an IN list on SQLite. values must not be empty.

    The array goes as the text of a bigint[] literal: psycopg's list dumper quotes each
    element in Python, 0.4 ms for 200 ids against 0.06 ms for a join, and a recall sends
    five such lists.
    """
    if connection.vendor == "postgresql":
        return f"{column} = ANY(%s::bigint[])", ["{" + ",".join(str(int(v)) for v in values) + "}"]
    return f"{column} IN ({', '.join(['%s'] * len(values))})", list(values)


@dataclass(frozen=True)
class RecallFilters:
    """What every stage restricts to; built once per call by the service."""

    namespace_ids: tuple[int, ...]
    ceiling: int
    now: datetime
    topic: str | None = None
    tier: str | None = None
    time_start: datetime | None = None
    time_end: datetime | None = None
    include_expired: bool = False

    def sql(self, alias: str = "m", *, cold: bool = False) -> tuple[str, list]:
        """A WHERE fragment over memories_memory AS alias, and its parameters."""
        ops = connection.ops
        placeholders = ", ".join(["%s"] * len(self.namespace_ids))
        parts = [
            f"{alias}.namespace_id IN ({placeholders})",
            f"{alias}.classification <= %s",
            f"{alias}.status IN (%s, %s)",
        ]
        params: list = [*self.namespace_ids, self.ceiling, *LIVE_STATUSES]
        if not cold:
            parts.append(f"{alias}.storage = %s")
            params.append(Memory.Storage.HOT.value)
        if not self.include_expired:
            parts.append(f"({alias}.expires_at IS NULL OR {alias}.expires_at > %s)")
            params.append(ops.adapt_datetimefield_value(self.now))
        if self.topic:
            parts.append(f"{alias}.topic = %s")
            params.append(self.topic)
        if self.tier:
            parts.append(f"{alias}.tier = %s")
            params.append(self.tier)
        if self.time_start:
            parts.append(f"{alias}.created_at >= %s")
            params.append(ops.adapt_datetimefield_value(self.time_start))
        if self.time_end:
            parts.append(f"{alias}.created_at <= %s")
            params.append(ops.adapt_datetimefield_value(self.time_end))
        return " AND ".join(parts), params

    def q(self, *, cold: bool = True) -> Q:
        """The same restriction as an ORM Q (associative results may be cold)."""
        condition = Q(
            namespace_id__in=self.namespace_ids,
            classification__lte=self.ceiling,
            status__in=LIVE_STATUSES,
        )
        if not cold:
            condition &= Q(storage=Memory.Storage.HOT)
        if not self.include_expired:
            condition &= Q(expires_at__isnull=True) | Q(expires_at__gt=self.now)
        if self.topic:
            condition &= Q(topic=self.topic)
        if self.tier:
            condition &= Q(tier=self.tier)
        if self.time_start:
            condition &= Q(created_at__gte=self.time_start)
        if self.time_end:
            condition &= Q(created_at__lte=self.time_end)
        return condition


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


@dataclass
class FullTextResult:
    """Sf's hits in its own order (stemmed, then trigram, then original-language)."""

    hits: list[tuple[int, float, str]] = field(default_factory=list)  # id, raw score, step
    document_frequency: dict[str, int] = field(default_factory=dict)
    matched_terms: list[str] = field(default_factory=list)
    dropped_terms: list[str] = field(default_factory=list)
    unmatched_terms: list[str] = field(default_factory=list)
    note: str = ""


# --- Sf: full text -----------------------------------------------------------------------


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
        return result
    vendor = connection.vendor
    # Counting stops early: a word in more than a quarter of the budget is "common" and
    # its exact count changes neither the term choice much nor its (low) idf.
    df, n_docs = _document_frequencies(
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
            if vendor == "postgresql"
            else _stemmed_sqlite(chosen, df, filters, candidate_cap, match_budget)
        )
        for memory_id, score in rows:
            if memory_id not in seen:
                seen.add(memory_id)
                result.hits.append((memory_id, float(score), "stemmed"))
    fuzzy_terms = [t for t in result.unmatched_terms if len(t) >= MIN_TRIGRAM_TERM]
    if fuzzy_terms:
        for memory_id, score in _trigram(fuzzy_terms, filters, "search_text"):
            if memory_id not in seen:
                seen.add(memory_id)
                result.hits.append((memory_id, score, "trigram"))
    if len(result.hits) < limit:
        # Only words the English index does not know can be in another language.
        original_terms = fuzzy_terms
        if original_terms:
            for memory_id, score in _trigram(original_terms, filters, "search_original"):
                if memory_id not in seen:
                    seen.add(memory_id)
                    result.hits.append((memory_id, score, "original"))
    return result


def _document_frequencies(
    terms: Sequence[str], filters: RecallFilters, *, cap: int, n_cap: int = 2000
) -> tuple[dict[str, int], int]:
    """Matching-row counts per term, each capped at `cap` rows, and the collection size.

    One statement in all. PostgreSQL counts within the namespaces (the collection size is
    capped at n_cap rows: enough for idf to tell rare from common, and an index-only scan
    of a few thousand entries rather than the namespace); SQLite
    counts in the shared FTS table (all namespaces), which is what its bm25() uses too, and
    needs no collection size.
    """
    if connection.vendor == "postgresql":
        # Large namespaces have stored counts (recall.termstats); count only the rest.
        known, size = termstats.lookup(list(terms), filters.namespace_ids)
        live = [term for term in terms if term not in known]
        if not live and size is not None:
            return {term: known[term] for term in terms}, size
        ns = ", ".join(["%s"] * len(filters.namespace_ids))
        parts = [
            "(SELECT count(*) FROM (SELECT 1 FROM memories_memory m "
            f"WHERE m.namespace_id IN ({ns}) "
            "AND m.search_vector @@ plainto_tsquery('english', %s) LIMIT %s) s)"
        ] * len(live)
        params: list = []
        for term in live:
            params += [*filters.namespace_ids, term, cap]
        if size is None:
            parts.append(
                "(SELECT count(*) FROM (SELECT 1 FROM memories_memory m "
                f"WHERE m.namespace_id IN ({ns}) LIMIT %s) s)"
            )
            params += [*filters.namespace_ids, n_cap]
        with connection.cursor() as cursor:
            cursor.execute("SELECT " + ", ".join(parts), params)
            counts = cursor.fetchone()
        counted = dict(zip(live, counts[: len(live)], strict=True))
        df = {term: int(known[term] if term in known else counted[term]) for term in terms}
        return df, size if size is not None else int(counts[len(live)])
    else:
        parts = [
            "(SELECT count(*) FROM (SELECT 1 FROM memories_memory_fts "
            "WHERE memories_memory_fts MATCH %s LIMIT %s))"
        ] * len(terms)
        params = []
        for term in terms:
            params += [_fts_phrase(term), cap]
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(parts), params)
        counts = cursor.fetchone()
    df = {term: int(count) for term, count in zip(terms, counts[: len(terms)], strict=True)}
    n_docs = int(counts[len(terms)]) if len(counts) > len(terms) else 0
    return df, n_docs


def _fts_phrase(term: str) -> str:
    # Words are \w runs, so they never contain a double quote.
    return f'"{term}"'


def _stemmed_sqlite(
    chosen: list[str],
    df: dict[str, int],
    filters: RecallFilters,
    cap: int,
    budget: int,
) -> list[tuple[int, float]]:
    """FTS5 porter match ranked by bm25 (content weighs twice the keywords).

    The inner query walks the index newest first and stops after `budget` matches (FTS5
    computes bm25 only for the rows it returns), so even a query whose rarest word is in
    half the memories does bounded work; below the budget it returns every match.
    """
    match = " OR ".join(_fts_phrase(t) for t in chosen)
    where, params = filters.sql("m")
    sql = (
        "SELECT m.id, f.score FROM ("
        "SELECT rowid AS id, -bm25(memories_memory_fts, 1.0, 0.5) AS score "
        "FROM memories_memory_fts WHERE memories_memory_fts MATCH %s "
        "ORDER BY rowid DESC LIMIT %s) f "
        f"JOIN memories_memory m ON m.id = f.id WHERE {where} ORDER BY f.score DESC LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [match, budget, *params, cap])
        return cursor.fetchall()


def _stemmed_postgres(
    terms: list[str],
    chosen: list[str],
    df: dict[str, int],
    n_docs: int,
    filters: RecallFilters,
    cap: int,
    budget: int,
) -> list[tuple[int, float]]:
    """BM25-like ranking: sum over query terms of idf(term) * ts_rank(vector, term).

    ts_rank alone knows no document frequency, so a name found in half the namespace
    would weigh as much as a rare word; the capped counts give the idf. The inner LIMIT
    bounds the rows ranked whatever the terms.
    """
    n_docs = max(n_docs, *df.values(), 1)
    ranked_terms = [t for t in terms if df.get(t, 0) > 0]
    rank_sql = " + ".join(
        "%s * ts_rank(c.search_vector, plainto_tsquery('english', %s), 1)" for _ in ranked_terms
    )
    rank_params: list = []
    for term in ranked_terms:
        rank_params += [_idf(df[term], n_docs), term]
    match_sql = " || ".join("plainto_tsquery('english', %s)" for _ in chosen)
    where, params = filters.sql("m")
    sql = (
        f"SELECT c.id, {rank_sql} AS score FROM ("
        "SELECT m.id, m.search_vector FROM memories_memory m "
        f"WHERE m.search_vector @@ ({match_sql}) AND {where} LIMIT %s) c "
        "ORDER BY score DESC LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*rank_params, *chosen, *params, budget, cap])
        return cursor.fetchall()


def _idf(df: int, n_docs: int) -> float:
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


def trigrams(word: str) -> set[str]:
    padded = f"  {word} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


def word_match(term: str, text_words: Iterable[str]) -> float:
    """How well one query word matches a text: 1.0 inside a word, else best trigram Jaccard."""
    best = 0.0
    term_grams = trigrams(term)
    for word in text_words:
        if term in word:
            return 1.0
        grams = trigrams(word)
        union = len(term_grams | grams)
        if union:
            best = max(best, len(term_grams & grams) / union)
    return best


def _halves(term: str) -> list[str]:
    """Substrings that survive one typo: the word itself, or for words of six letters or
    more its two halves (an edit touches only one of them)."""
    if len(term) < 2 * MIN_TRIGRAM_TERM:
        return [term]
    middle = len(term) // 2
    return [term[:middle], term[middle:]]


def _trigram(terms: list[str], filters: RecallFilters, column: str) -> list[tuple[int, float]]:
    """Substring and typo matches of terms in a folded column; score = mean term match.

    The index proposes rows containing a term or one of its halves, newest first and at
    most TRIGRAM_SCAN rows; Python keeps those where each word is inside a stored word or
    shares a trigram Jaccard of at least FUZZY_SIMILARITY with one.
    """
    where, params = filters.sql("m")
    pieces = list(dict.fromkeys(p for term in terms for p in _halves(term)))
    if connection.vendor == "postgresql":
        condition = " OR ".join([f"m.{column} ILIKE %s"] * len(pieces))
        condition_params = [f"%{_escape_like(piece)}%" for piece in pieces]
        sql = (
            f"SELECT m.id, m.{column} FROM memories_memory m WHERE ({condition}) AND {where} "
            "LIMIT %s"
        )
        all_params = [*condition_params, *params, TRIGRAM_SCAN]
    else:
        match = f"{column} : ({' OR '.join(_fts_phrase(p) for p in pieces)})"
        sql = (
            f"SELECT m.id, m.{column} FROM (SELECT rowid AS id FROM memories_memory_trgm "
            "WHERE memories_memory_trgm MATCH %s ORDER BY rowid DESC LIMIT %s) t "
            f"JOIN memories_memory m ON m.id = t.id WHERE {where}"
        )
        all_params = [match, TRIGRAM_SCAN, *params]
    with connection.cursor() as cursor:
        cursor.execute(sql, all_params)
        rows = cursor.fetchall()
    scored = []
    for memory_id, text in rows:
        text_words = set((text or "").split())
        matches = [word_match(term, text_words) for term in terms]
        good = [m for m in matches if m >= FUZZY_SIMILARITY]
        if good:
            scored.append((memory_id, sum(good) / len(terms)))
    scored.sort(key=lambda pair: -pair[1])
    return scored[:TRIGRAM_CANDIDATES]


def _escape_like(term: str) -> str:
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# --- Se: embeddings ----------------------------------------------------------------------


def embedding_search(
    vector,
    filters: RecallFilters,
    *,
    model: str,
    threshold: float,
    limit: int,
    rerank: int = 30,
) -> list[tuple[int, float]]:
    """Cosine similarity of the query vector to the namespace's stored vectors, in two steps.

    1. The sign codes of the filtered memories' vectors (recall.vectorcodes) are ranked by
       Hamming distance to the query's code, in SQL, and the best `rerank x limit` kept
       (at most RERANK_CAP rows, or limit if more);
    2. those are re-ranked exactly by cosine from their float32 vectors.

    Returns (id, cosine) best first, at most limit, at or above threshold. Step 1 first
    ranks the namespace's codes alone (a narrow table) and applies the filters to the best
    PREFILTER times as many as it keeps; when fewer pass, it ranks the filtered codes
    (a join per memory: slower, same result). Either way the filters are in SQL, so nothing
    outside them is read. Only vectors of `model` (and of the query's length) are compared.
    """
    import numpy as np

    from recall import vectorcodes

    query = np.asarray(vector, dtype=np.float32).ravel()
    norm = float(np.linalg.norm(query))
    if norm == 0 or limit <= 0:
        return []
    query = query / norm
    code = vectorcodes.sign_code(query)
    keep = max(limit, min(rerank * limit, RERANK_CAP))
    rows = _nearest_codes(code, filters, model=model, keep=keep, prefilter=PREFILTER * keep)
    if len(rows) < keep:
        rows = _nearest_codes(code, filters, model=model, keep=keep, prefilter=None)
    dim = query.shape[0]
    ids = []
    blobs = []
    for memory_id, blob in rows:
        data = bytes(blob)
        if len(data) == 4 * dim:
            ids.append(memory_id)
            blobs.append(data)
    if not ids:
        return []
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), dim)
    scores = matrix @ query
    order = np.argsort(-scores, kind="stable")[:limit]
    return [(ids[i], float(scores[i])) for i in order if scores[i] >= threshold]


# Step 1 filters the best PREFILTER x keep codes of the namespace before falling back to
# ranking only the filtered ones: at 4, the usual filters (live, hot, unexpired, within
# the ceiling) would have to hide three memories in four to force the fallback.
PREFILTER = 4
# Most vectors re-ranked by cosine (1.5 kB each read), whatever the limit: 900 for the
# usual limit of 10 (Se is asked for 30) at RECALL_VECTOR_RERANK = 30.
RERANK_CAP = 3_000


def _nearest_codes(
    code: bytes, filters: RecallFilters, *, model: str, keep: int, prefilter: int | None
) -> list[tuple[int, bytes]]:
    """(id, vector bytes) of the `keep` filtered memories whose codes are nearest `code`.

    With `prefilter`, only the nearest `prefilter` codes of the namespaces (no join) are
    looked up in memories_memory; without, every filtered memory's code is ranked.
    """
    from recall import vectorcodes

    where, params = filters.sql("m")
    namespaces, namespace_params = in_list("c.namespace_id", filters.namespace_ids)
    if connection.vendor == "postgresql":
        distance = "bit_count(c.code # %s::varbit)"
        distance_params = [vectorcodes.query_code_bits(code)]
        length_sql, length = "bit_length(c.code)", 8 * len(code)
    else:
        vectorcodes.register_sqlite_distance(code)
        distance = "engram_code_distance(c.code)"
        distance_params = []
        length_sql, length = "length(c.code)", len(code)
    codes_where = f"{namespaces} AND c.model = %s AND {length_sql} = %s"
    memory_where = f"m.embedding IS NOT NULL AND m.embedding_model = %s AND {where}"
    codes_params = [*namespace_params, model, length]
    if prefilter is not None:
        sql = (
            "SELECT n.memory_id, m.embedding FROM ("
            f"SELECT c.memory_id, {distance} AS distance FROM recall_embeddingcode c "
            f"WHERE {codes_where} ORDER BY distance, c.memory_id DESC LIMIT %s) n "
            f"JOIN memories_memory m ON m.id = n.memory_id WHERE {memory_where} "
            "ORDER BY n.distance, n.memory_id DESC LIMIT %s"
        )
        all_params = [*distance_params, *codes_params, prefilter, model, *params, keep]
    else:
        sql = (
            f"SELECT c.memory_id, m.embedding FROM recall_embeddingcode c "
            f"JOIN memories_memory m ON m.id = c.memory_id "
            f"WHERE {codes_where} AND {memory_where} "
            f"ORDER BY {distance}, c.memory_id DESC LIMIT %s"
        )
        all_params = [*codes_params, model, *params, *distance_params, keep]
    with connection.cursor() as cursor:
        cursor.execute(sql, all_params)
        return cursor.fetchall()


# --- Ss: signatures ----------------------------------------------------------------------


def _register_sqlite_hamming() -> None:
    """Register the Hamming similarity SQL function on this connection (cheap, idempotent)."""

    def similarity(a: bytes | None, b: bytes | None) -> float | None:
        if a is None or b is None or len(a) != len(b) or not a:
            return None
        return hamming_similarity(bytes(a), bytes(b))

    connection.connection.create_function(
        "engram_hamming_similarity", 2, similarity, deterministic=True
    )


def signature_search(
    text: str,
    filters: RecallFilters,
    *,
    bits: int,
    threshold: float,
    cap: int,
    scan_cap: int = 5_000,
) -> list[tuple[int, float]]:
    """Memories whose SimHash is within the Hamming similarity threshold, best first.

    PostgreSQL compares in SQL (bytea to bit string, XOR, bit_count); SQLite through a
    registered function. Both scan the newest scan_cap filtered rows: a 0.65 threshold is
    too loose for LSH banding to prune anything (see docs/recall.md).
    """
    signature = simhash(text, bits=bits)
    if not any(signature) or cap <= 0:
        return []
    n_bytes = bits // 8
    where, params = filters.sql("m")
    newest = (
        "SELECT m.id, m.signature FROM memories_memory m "
        f"WHERE {'octet_length' if connection.vendor == 'postgresql' else 'length'}"
        f"(m.signature) = %s AND {where} ORDER BY m.created_at DESC LIMIT %s"
    )
    connection.ensure_connection()
    if connection.vendor == "postgresql":
        sim = (
            f"1.0 - bit_count(('x' || encode(n.signature, 'hex'))::bit({bits}) "
            f"# q.bits)::float / {bits}"
        )
        sql = (
            f"WITH q AS (SELECT ('x' || %s)::bit({bits}) AS bits) "
            f"SELECT id, sim FROM (SELECT n.id, {sim} AS sim FROM ({newest}) n, q) s "
            "WHERE sim >= %s ORDER BY sim DESC, id LIMIT %s"
        )
        all_params = [signature.hex(), n_bytes, *params, scan_cap, threshold, cap]
    else:
        _register_sqlite_hamming()
        sql = (
            "SELECT id, sim FROM (SELECT n.id, engram_hamming_similarity(n.signature, %s) "
            f"AS sim FROM ({newest}) n) WHERE sim >= %s ORDER BY sim DESC, id LIMIT %s"
        )
        all_params = [signature, n_bytes, *params, scan_cap, threshold, cap]
    with connection.cursor() as cursor:
        cursor.execute(sql, all_params)
        return [(memory_id, float(sim)) for memory_id, sim in cursor.fetchall()]


# --- S6: consolidation digests -----------------------------------------------------------


@dataclass
class DigestHit:
    consolidation_id: int
    namespace_id: int
    period: str
    period_start: str
    topic: str
    text: str
    score: float
    memory_ids: list[int]
    content_hash: str

    def to_dict(self) -> dict:
        return {
            "kind": "consolidation",
            "consolidation_id": self.consolidation_id,
            "period": self.period,
            "period_start": self.period_start,
            "topic": self.topic,
            "text": self.text,
            "score": self.score,
            "memory_ids": self.memory_ids,
        }


def consolidation_search(
    query: QueryTerms,
    filters: RecallFilters,
    *,
    rare_first: Sequence[str],
    limit: int,
) -> list[DigestHit]:
    """Paragraphs of digests that mention a query keyword, fixed score 0.5.

    A digest is shown only when every memory it summarises is within the caller's ceiling
    (a digest quotes its memories). Deduplicated by a hash of the paragraph's first 80
    characters and the digest's period start, as seed 002 says.
    """
    terms = list(rare_first[:DIGEST_TERMS]) or query.terms[:DIGEST_TERMS]
    if not terms:
        return []
    rows = _digest_rows(terms, filters, limit * 4)
    quoted: set[int] = set()
    for row in rows:
        quoted.update(_int_ids(row["memory_ids"]))
    hidden: set[int] = set()
    if quoted:
        hidden = set(
            Memory.objects.filter(id__in=quoted, classification__gt=filters.ceiling).values_list(
                "id", flat=True
            )
        )
    hits: list[DigestHit] = []
    seen: set[str] = set()
    for row in rows:
        ids = _int_ids(row["memory_ids"])
        if hidden.intersection(ids):
            continue
        for paragraph in _paragraphs(row["text"]):
            folded = fold(paragraph)
            if not any(term in folded for term in terms):
                continue
            digest = hashlib.sha256(f"{paragraph[:80]}|{row['period_start']}".encode()).hexdigest()
            if digest in seen:
                continue
            seen.add(digest)
            hits.append(
                DigestHit(
                    consolidation_id=row["id"],
                    namespace_id=row["namespace_id"],
                    period=row["period"],
                    period_start=str(row["period_start"]),
                    topic=row["topic"],
                    text=paragraph,
                    score=DIGEST_SCORE,
                    memory_ids=ids,
                    content_hash=digest,
                )
            )
            if len(hits) >= limit:
                return hits
    return hits


def _digest_rows(terms: list[str], filters: RecallFilters, limit: int) -> list[dict]:
    """Digests of the namespaces that contain any of terms (case-insensitive), newest first.

    The queryset this replaces (an OR of icontains lookups) spent 1.5 ms per recall
    building its SQL, for a query that usually finds nothing.
    """
    ops = connection.ops
    table = ops.quote_name(Consolidation._meta.db_table)
    if connection.vendor == "postgresql":
        match = "UPPER(c.text) LIKE UPPER(%s)"
    else:
        match = "c.text LIKE %s ESCAPE '\\'"
    namespaces, params = in_list("c.namespace_id", filters.namespace_ids)
    # A digest is as sensitive as the most sensitive memory it was built from (stored, so
    # a purge of that memory does not lower it).
    where = [namespaces, "c.classification <= %s", "(" + " OR ".join([match] * len(terms)) + ")"]
    params += [filters.ceiling, *(f"%{ops.prep_for_like_query(term)}%" for term in terms)]
    if filters.topic:
        where.append("c.topic = %s")
        params.append(filters.topic)
    if filters.time_start:
        where.append("c.period_start >= %s")
        params.append(ops.adapt_datefield_value(filters.time_start.date()))
    if filters.time_end:
        where.append("c.period_start <= %s")
        params.append(ops.adapt_datefield_value(filters.time_end.date()))
    sql = (
        "SELECT c.id, c.namespace_id, c.period, c.period_start, c.topic, c.text, c.memory_ids "
        f"FROM {table} c WHERE {' AND '.join(where)} "
        f"ORDER BY c.period_start DESC, c.id LIMIT {int(limit)}"
    )
    names = ("id", "namespace_id", "period", "period_start", "topic", "text", "memory_ids")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]
    for row in rows:
        if isinstance(row["memory_ids"], str | bytes):
            try:
                row["memory_ids"] = json.loads(row["memory_ids"])
            except ValueError:
                row["memory_ids"] = []
    return rows


def _int_ids(values) -> list[int]:
    out = []
    for value in values or []:
        try:
            out.append(int(value))
        except (TypeError, ValueError):
            continue
    return out


def _paragraphs(text: str) -> list[str]:
    blocks = [block.strip() for block in text.split("\n\n")]
    paragraphs = []
    for block in blocks:
        if not block:
            continue
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        # Bullet lists are one fact per line: keep each line as its own paragraph.
        if len(lines) > 1 and all(line[:1] in "-*•" for line in lines):
            paragraphs += lines
        else:
            paragraphs.append(" ".join(lines))
    return paragraphs


# --- S8: entity graph --------------------------------------------------------------------


@dataclass
class RelationHit:
    relation_id: int
    entity: str
    subject: str
    predicate: str
    object: str
    score: float
    memory_id: int | None

    @property
    def text(self) -> str:
        return f"{self.subject} —[{self.predicate}]→ {self.object}"

    def to_dict(self) -> dict:
        return {
            "kind": "relation",
            "relation_id": self.relation_id,
            "entity": self.entity,
            "subject": self.subject,
            "predicate": self.predicate,
            "object": self.object,
            "text": self.text,
            "score": self.score,
            "memory_id": self.memory_id,
        }


def entity_candidates(all_words: list[str]) -> list[str]:
    """Names a query could mention: 1- to 3-word runs joined by space, hyphen, _ or nothing.

    Longer runs first at each position, positions in query order, so "project x" finds
    the entity "project-x" before the entity "project".
    """
    names: list[str] = []
    for start in range(len(all_words)):
        for size in (3, 2, 1):
            run = all_words[start : start + size]
            if len(run) < size:
                continue
            for joiner in (" ", "-", "_", ""):
                names.append(joiner.join(run))
    return list(dict.fromkeys(n for n in names if n not in STOP_WORDS))


def entity_search(
    query: QueryTerms, filters: RecallFilters
) -> tuple[str | None, list[RelationHit]]:
    """The first entity the query names and its relations (both directions).

    Entities and relations recorded above the ceiling are hidden, as are relations drawn
    from a memory now above it or no longer live; relations with no source memory (never
    one, or purged) are shown within their stored level.
    """
    candidates = entity_candidates(query.all_words)
    if not candidates:
        return None, []
    found = {
        name: (entity_id, display)
        for entity_id, name, display in Entity.objects.filter(
            namespace_id__in=filters.namespace_ids, name__in=candidates
        )
        .within_ceiling(filters.ceiling)
        .values_list("id", "name", "display_name")
    }
    first = next((name for name in candidates if name in found), None)
    if first is None:
        return None, []
    entity_id, display = found[first]
    visible_memory = Q(memory__isnull=True) | Q(
        memory__classification__lte=filters.ceiling, memory__status__in=LIVE_STATUSES
    )
    relations = (
        Relation.objects.filter(Q(subject_id=entity_id) | Q(object_id=entity_id))
        .filter(visible_memory, namespace_id__in=filters.namespace_ids)
        .filter(classification__lte=filters.ceiling)
        .select_related("subject", "object")
        .order_by("-weight", "id")[:RELATION_LIMIT]
    )
    hits = [
        RelationHit(
            relation_id=relation.pk,
            entity=display or first,
            subject=str(relation.subject),
            predicate=relation.predicate,
            object=str(relation.object),
            score=relation.weight,
            memory_id=relation.memory_id,
        )
        for relation in relations
    ]
    return display or first, hits

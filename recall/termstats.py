"""Document frequencies of stemmed words per namespace, kept by the worker (PostgreSQL).

Stage Sf needs, per query word, how many memories hold it: to match on the rarest words
first and to weigh each word by its idf. Counting matches in the GIN index costs a scan
of the word's whole posting list, which grows with the namespace (a word in 8 % of
100,000 memories: about 3 ms per word). For namespaces of at least
RECALL_TERM_STATS_MIN_MEMORIES memories, the worker stores the counts of every word in
at least RECALL_TERM_STATS_MIN_DOCUMENTS of them (PostgreSQL's ts_stat over the
namespace's tsvectors), and recall reads them with one indexed look-up. Words below
that count, and namespaces without statistics, are counted live as before: a rare
word's count is cheap, and a missing row never makes a result wrong, only slower.

Counts are kept per classification level, of live memories only, and a recall adds up
the levels at or below its ceiling: a word that only memories above the caller's ceiling
hold must neither change which words Sf matches on nor appear in its explanation.

The statistics go stale as memories come and go; a namespace is refreshed when its
number of memories has moved by RECALL_TERM_STATS_CHANGE (10 %) since the last refresh.
An idf computed from counts a few percent off ranks the same words as rare or common.

SQLite needs none of this: FTS5 counts matches from its own index cheaply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from config.db import is_postgres
from memories.models import LIVE_STATUSES, Classification, Memory
from recall.models import TermStat

_TABLE = TermStat._meta.db_table
_MEMORY_TABLE = Memory._meta.db_table


def supported() -> bool:
    return is_postgres()


@dataclass
class RefreshReport:
    refreshed: list[int] = field(default_factory=list)  # namespace ids
    skipped_fresh: int = 0
    words: int = 0

    def counts(self) -> dict[str, Any]:
        return {
            "namespaces_refreshed": len(self.refreshed),
            "namespaces_fresh": self.skipped_fresh,
            "words": self.words,
        }


def refresh(
    *,
    namespace: int | None = None,
    force: bool = False,
    min_memories: int | None = None,
    min_documents: int | None = None,
) -> RefreshReport:
    """Recompute the statistics of the namespaces that are large enough and stale.

    One GROUP BY finds each namespace's number of live memories (an index-only scan); a
    namespace is recomputed when it has no statistics or its count has moved by the
    change threshold since (or always with force). Each namespace is replaced in its
    own transaction, so recall never sees it half written.
    """
    report = RefreshReport()
    if not supported():
        return report
    min_memories = settings.RECALL_TERM_STATS_MIN_MEMORIES if min_memories is None else min_memories
    min_documents = (
        settings.RECALL_TERM_STATS_MIN_DOCUMENTS if min_documents is None else min_documents
    )
    where, params = "", []
    if namespace is not None:
        where, params = "AND namespace_id = %s", [int(namespace)]
    live = ", ".join(["%s"] * len(LIVE_STATUSES))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.namespace_id, m.n, s.documents FROM "
            f"(SELECT namespace_id, count(*) AS n FROM {_MEMORY_TABLE} "
            f"WHERE status IN ({live}) {where} GROUP BY namespace_id) m "
            f"LEFT JOIN (SELECT namespace_id, sum(documents) AS documents FROM {_TABLE} "
            "WHERE lexeme = '' GROUP BY namespace_id) s ON s.namespace_id = m.namespace_id",
            [*LIVE_STATUSES, *params],
        )
        sizes = cursor.fetchall()
        if namespace is not None and not sizes:
            # An emptied namespace keeps no statistics.
            cursor.execute(f"DELETE FROM {_TABLE} WHERE namespace_id = %s", params)
    change = settings.RECALL_TERM_STATS_CHANGE
    for namespace_id, size, recorded in sizes:
        if size < min_memories:
            if recorded is not None:
                _drop(namespace_id)  # shrank below the threshold: live counts again
            continue
        if not force and recorded is not None and abs(size - recorded) <= change * recorded:
            report.skipped_fresh += 1
            continue
        report.words += _replace(namespace_id, min_documents)
        report.refreshed.append(namespace_id)
    if report.refreshed:
        # Planner statistics of the replaced rows now, not when autovacuum gets round to
        # it (if it is on at all): with an empty table's estimates the lookup hashed every
        # word of the namespace (1 ms) instead of probing the unique index (0.07 ms).
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {_TABLE}")
    return report


def _drop(namespace_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {_TABLE} WHERE namespace_id = %s", [namespace_id])


@transaction.atomic
def _replace(namespace_id: int, min_documents: int) -> int:
    """The namespace's rows replaced by fresh counts, one set per classification level of
    its live memories; returns how many (word, level) rows were kept."""
    now = timezone.now()
    live = ", ".join(f"'{status}'" for status in LIVE_STATUSES)  # constants, not input
    words = 0
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {_TABLE} WHERE namespace_id = %s", [namespace_id])
        # The size rows first (lexeme ''), one per level even when it holds no memory:
        # a namespace has statistics when it has any row, and a level with none counts 0.
        cursor.execute(
            f"INSERT INTO {_TABLE} (namespace_id, classification, lexeme, documents, refreshed_at) "
            "SELECT %s, c.level, '', count(m.id), %s FROM unnest(%s::smallint[]) AS c(level) "
            f"LEFT JOIN {_MEMORY_TABLE} m ON m.namespace_id = %s AND m.classification = c.level "
            f"AND m.status IN ({live}) GROUP BY c.level",
            [namespace_id, now, list(Classification.values), namespace_id],
        )
        cursor.execute(
            f"SELECT DISTINCT classification FROM {_MEMORY_TABLE} "
            f"WHERE namespace_id = %s AND status IN ({live})",
            [namespace_id],
        )
        levels = sorted(level for (level,) in cursor.fetchall())
        for level in levels:
            # ts_stat takes the query as text; the ids are ints, so formatting them in is safe.
            inner = (
                f"SELECT search_vector FROM {_MEMORY_TABLE} WHERE namespace_id = "
                f"{int(namespace_id)} AND classification = {int(level)} AND status IN ({live})"
            )
            cursor.execute(
                f"INSERT INTO {_TABLE} (namespace_id, classification, lexeme, documents, "
                "refreshed_at) SELECT %s, %s, word, ndoc, %s FROM ts_stat(%s) "
                "WHERE ndoc >= %s AND length(word) <= 200",
                [namespace_id, level, now, inner, min_documents],
            )
            words += cursor.rowcount
    return words


def lookup(
    terms: list[str], namespace_ids: tuple[int, ...], ceiling: int
) -> tuple[dict[str, int], int | None]:
    """({term: documents} for the terms the statistics know, collection size or None), both
    over the namespaces' live memories at or below `ceiling`.

    Nothing is known unless every namespace has statistics. A term is known when each
    of its lexemes (a word gives one, "e_mail" two) has a row at some level within the
    ceiling: its count is the smallest of theirs (plainto_tsquery needs them all), summed
    over the namespaces and levels. A word no row within the ceiling knows is counted live.
    """
    if not supported() or not terms or not namespace_ids:
        return {}, None
    sql = (
        "WITH t AS (SELECT term, tsvector_to_array(to_tsvector('english', term)) AS lexemes "
        "FROM unnest(%s::text[]) AS term), "
        "per_lexeme AS (SELECT t.term, l.lexeme, cardinality(t.lexemes) AS wanted, "
        f"sum(s.documents) AS documents FROM t CROSS JOIN unnest(t.lexemes) AS l(lexeme) "
        f"JOIN {_TABLE} s ON s.lexeme = l.lexeme AND s.namespace_id = ANY(%s) "
        "AND s.classification <= %s "
        "GROUP BY t.term, l.lexeme, t.lexemes) "
        "SELECT term, min(documents) FROM per_lexeme GROUP BY term, wanted "
        "HAVING count(*) = wanted "
        "UNION ALL "
        "SELECT NULL, CASE WHEN count(DISTINCT namespace_id) = %s "
        f"THEN sum(documents) FILTER (WHERE classification <= %s) END FROM {_TABLE} "
        "WHERE lexeme = '' AND namespace_id = ANY(%s)"
    )
    ids = list(namespace_ids)
    with connection.cursor() as cursor:
        cursor.execute(sql, [list(terms), ids, ceiling, len(set(ids)), ceiling, ids])
        rows = cursor.fetchall()
    size = next((int(n) for term, n in rows if term is None and n is not None), None)
    if size is None:
        return {}, None
    return {term: int(n) for term, n in rows if term is not None}, size

"""How many memories of a namespace hold each of a few words, capped: which words are rare.

Review's cloze fronts hide a memory's rarest words (review.cloze). Counting reads the
full-text index, one capped count per word in one statement: a word in more than `cap`
memories is common whatever its exact count, so no count reads more than `cap` index
entries. PostgreSQL counts within the namespace through the stemmed tsvector; SQLite's
FTS5 table is shared by every namespace, so its counts join back to the namespace.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection

from config.db import is_postgres

DEFAULT_CAP = 50


def word_counts(
    namespace_id: int, words: Sequence[str], *, cap: int = DEFAULT_CAP
) -> dict[str, int]:
    """{word: memories of the namespace holding it, at most cap}, for up to 16 words."""
    words = [word for word in dict.fromkeys(words) if word.isalnum()][:16]
    if not words:
        return {}
    if is_postgres():
        part = (
            "(SELECT count(*) FROM (SELECT 1 FROM memories_memory m WHERE m.namespace_id = %s "
            "AND m.search_vector @@ plainto_tsquery('english', %s) LIMIT %s) s)"
        )
    else:
        part = (
            "(SELECT count(*) FROM (SELECT 1 FROM memories_memory_fts f "
            "JOIN memories_memory m ON m.id = f.rowid WHERE memories_memory_fts MATCH %s "
            "AND m.namespace_id = %s LIMIT %s))"
        )
    params: list = []
    for word in words:
        # \w-only words never hold FTS5's double quote; quoted, a word is a plain term.
        pair = [namespace_id, word] if is_postgres() else [f'"{word}"', namespace_id]
        params += [*pair, cap]
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join([part] * len(words)), params)
        counts = cursor.fetchone()
    return {word: int(count) for word, count in zip(words, counts, strict=True)}

"""The rule for a substring filter (`q` of the memory lists): enough text to use an index.

Memory.objects.containing() finds memories through trigram indexes (pg_trgm on
PostgreSQL, FTS5's trigram table on SQLite). A needle with fewer than three letters or
digits gives neither index a trigram to look up, so the database reads every memory:
5 s at 205,000 memories. Wildcards and punctuation (%, _, *, ., -) do not count: the
filter matches them literally, and pg_trgm indexes letters and digits only.
"""

from __future__ import annotations

from memories.text import fold

MIN_CHARS = 3
TOO_SHORT = (
    f"At least {MIN_CHARS} letters or digits; punctuation and wildcards (%, _, *) do not count."
)


def too_short(text: str) -> bool:
    """Whether `text` has too few letters and digits (after folding) to filter by."""
    return sum(ch.isalnum() for ch in fold(text)) < MIN_CHARS

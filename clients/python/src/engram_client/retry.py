"""When to try a request again, and how long to wait first.

Retried: 429 (the rate limit's window has not turned yet: wait what Retry-After says),
503 (the database is unreachable or a statement was cancelled; the server wrote nothing,
its transaction rolled back) and a connection that could not be made (nothing was sent).
Not retried: a timeout waiting for an answer (the server may be doing the work: a second
try could write twice, and a slow server is not helped by more load) and every other
status, which the same request would get again.
"""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass

RETRY_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class Retry:
    """How many times to retry and how long to wait between tries.

    `retries` tries after the first; the n-th wait (from 0) on a 503 or a refused
    connection is a random fraction of `backoff * 2**n`, capped at `max_backoff` ("full
    jitter": many clients that failed at once do not all come back at once). A 429 or 503
    with Retry-After waits what it says; one longer than `max_retry_after` is raised at
    once rather than blocking the caller that long.
    """

    retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 30.0
    max_retry_after: float = 120.0

    def backoff_delay(self, attempt: int) -> float:
        """The wait before try `attempt + 1` when the server named none."""
        return random.uniform(0, min(self.max_backoff, self.backoff * 2**attempt))

    def delay(self, attempt: int, status: int | None, retry_after: str | None) -> float | None:
        """Seconds to wait before the next try, or None to give up and raise."""
        if attempt >= self.retries:
            return None
        if status is not None and status not in RETRY_STATUSES:
            return None
        named = parse_retry_after(retry_after)
        if named is not None:
            return named if named <= self.max_retry_after else None
        return self.backoff_delay(attempt)


NO_RETRY = Retry(retries=0)


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Retry-After in seconds: delta-seconds or an HTTP date (RFC 9110, 10.2.3)."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))

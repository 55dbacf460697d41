"""Consolidation digests (seed 002, stage S6), made without any language model.

A digest is extractive: for one namespace, one period (a day, an ISO week, a quarter) and
one topic, the period's live memories ranked by their seed 003 score at the end of the
period (computed in SQL, as the sweep does), the best DIGEST_MAX_ITEMS quoted as one
bullet line each with their id and score. Digests are Consolidation rows, rebuilt for the
last DIGEST_LOOKBACK_PERIODS ended periods of each kind on every run (a digest is a
function of the period's memories, so a rebuild that finds nothing new writes nothing),
and written to / read from Markdown folders daily/, weekly/, quarterly/ (seed 002's
consolidation directories) by export_consolidations / import_consolidations.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from datetime import time as dtime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone
from django.utils.text import slugify

from memories.models import Classification, Consolidation, Memory, Namespace
from memories.score_sql import params_cte, scored_memories_sql
from memories.sweep import SweepConfig

PERIODS = (
    Consolidation.Period.DAILY.value,
    Consolidation.Period.WEEKLY.value,
    Consolidation.Period.QUARTERLY.value,
)
FRONT_MATTER = "---"
FRONT_MATTER_KEYS = (
    "namespace",
    "period",
    "period_start",
    "topic",
    "memory_ids",
    "content_hash",
    "created_at",
)


# --- Periods and text (pure) -------------------------------------------------------------


def period_start(period: str, day: date) -> date:
    """The first day of the period that contains `day` (weeks start on Monday)."""
    if period == Consolidation.Period.DAILY:
        return day
    if period == Consolidation.Period.WEEKLY:
        return day - timedelta(days=day.weekday())
    if period == Consolidation.Period.QUARTERLY:
        return date(day.year, 3 * ((day.month - 1) // 3) + 1, 1)
    raise ValueError(f"unknown period {period!r}")


def period_end(period: str, start: date) -> date:
    """The first day after the period that starts on `start`."""
    if period == Consolidation.Period.DAILY:
        return start + timedelta(days=1)
    if period == Consolidation.Period.WEEKLY:
        return start + timedelta(days=7)
    if period == Consolidation.Period.QUARTERLY:
        month = start.month + 3
        return date(start.year + (month > 12), (month - 1) % 12 + 1, 1)
    raise ValueError(f"unknown period {period!r}")


def ended_periods(period: str, today: date, count: int) -> list[date]:
    """Starts of the `count` most recent periods that ended before `today`, newest first."""
    starts: list[date] = []
    current = period_start(period, today)
    for _ in range(count):
        current = period_start(period, current - timedelta(days=1))
        starts.append(current)
    return starts


def period_label(period: str, start: date) -> str:
    if period == Consolidation.Period.WEEKLY:
        year, week, _ = start.isocalendar()
        return f"the week of {start.isoformat()} ({year}-W{week:02d})"
    if period == Consolidation.Period.QUARTERLY:
        return f"{start.year}-Q{(start.month - 1) // 3 + 1}"
    return start.isoformat()


# A candidate sentence end: the punctuation, closing quotes or brackets, a space. The word
# before it and the character after it decide (first_sentence).
_SENTENCE_END = re.compile("(\\w*)[.!?][\"'\u2019\u201d)\\]]*(?= (.))")
# Words a full stop follows without ending the sentence ("Dr. Alvarez", "Main St. near");
# "e.g." and "i.e." end in a single letter, which counts as an initial; "etc." is left out,
# as it ends sentences more often than not.
ABBREVIATIONS = frozenset(
    {
        *("mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "ft", "no", "nos", "vs"),
        *("al", "approx", "dept", "est", "fig", "inc", "ltd", "co", "corp"),  # not etc
        *("jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"),
        *("mon", "tue", "wed", "thu", "fri", "sat", "sun"),
    }
)


def first_sentence(text: str) -> str:
    """The first sentence of a whitespace-normalised text: up to a '.', '!' or '?' (and any
    closing quotes or brackets) followed by a space, unless the next word starts in lower
    case or the stop ends an abbreviation ("Dr.", "St.") or an initial ("J. Smith", "e.g."):
    a plain split after every full stop cut "The dentist is Dr. Alvarez." to "The dentist
    is Dr."."""
    for match in _SENTENCE_END.finditer(text):
        word, following = match.group(1), match.group(2)
        if following.islower():
            continue
        if text[match.end(1)] == "." and (
            word.lower() in ABBREVIATIONS or (len(word) == 1 and word.isalpha())
        ):
            continue
        return text[: match.end()]
    return text


def excerpt(content: str, limit: int) -> str:
    """The memory's first sentence, or its text cut at a word boundary, at most `limit`."""
    text = " ".join(content.split())
    first = first_sentence(text)
    if len(first) <= limit:
        return first
    cut = first[: limit - 1]
    if first[limit - 1] != " " and " " in cut:
        cut = cut.rsplit(" ", 1)[0]  # drop the word the limit cut through
    return cut.rstrip(" ,;:") + "…"


def digest_text(
    *,
    period: str,
    start: date,
    topic: str,
    total: int,
    items: list[tuple[int, str, float]],
    excerpt_chars: int,
) -> str:
    """The digest: one header line, then one bullet per quoted memory (id and score)."""
    about = f' on "{topic}"' if topic else " without a topic"
    # Which memories the bullets quote; a lone memory needs no word ("1 memory, it." read
    # as garbled on the search page, where the header is shown alone).
    quoted = f", the {len(items)} with the highest scores" if total > len(items) else ""
    if 1 < total == len(items):
        quoted = ", all of them, by score"
    header = (
        f"{period.capitalize()} digest for {period_label(period, start)}{about}: "
        f"{total} {'memory' if total == 1 else 'memories'}{quoted}."
    )
    lines = [
        f"- {excerpt(content, excerpt_chars)} (#{memory_id}, score {score:.2f})"
        for memory_id, content, score in items
    ]
    return "\n".join([header, "", *lines])


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# --- Building digests --------------------------------------------------------------------


@dataclass
class DigestReport:
    """What a digests run did."""

    namespaces: int = 0
    periods: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    duration_seconds: float = 0.0

    @property
    def written(self) -> int:
        return self.created + self.updated

    def counts(self) -> dict[str, Any]:
        return {
            "namespaces": self.namespaces,
            "periods": self.periods,
            "digests_written": self.written,
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "duration_seconds": round(self.duration_seconds, 3),
        }


def _local_midnight(day: date) -> datetime:
    return datetime.combine(day, dtime.min, tzinfo=ZoneInfo(settings.TIME_ZONE))


def _ranked_memories(
    namespace_id: int, start: date, end: date, max_items: int, now: datetime
) -> dict[str, tuple[int, list[tuple[int, str, float, int]]]]:
    """Per topic: how many live, current memories the period created, and the best
    max_items. Superseded ones (and near-duplicates merged into another, which are
    superseded by it) are left out at `now`, as recall, lists and review leave them out:
    a digest line is a recall result (stage S6), so it would bring back a fact no longer
    true, or quote one text twice."""
    ends_at = _local_midnight(end)
    p_sql, p_params = params_cte(SweepConfig.from_settings(), ends_at)
    live = ", ".join(f"'{s}'" for s in (Memory.Status.ACTIVE, Memory.Status.PROMOTED))
    where = (
        f"m.namespace_id = %s AND m.created_at >= %s AND m.created_at < %s AND m.status IN ({live})"
        " AND (m.valid_until IS NULL OR m.valid_until > %s)"
    )
    scored = scored_memories_sql(where=where, columns=("topic", "content", "classification"))
    sql = (
        f"WITH {p_sql}, {scored}, "
        "ranked AS (SELECT s.topic, s.id, s.content, s.score, "
        "MAX(s.classification) OVER (PARTITION BY s.topic) AS level, "
        "ROW_NUMBER() OVER (PARTITION BY s.topic ORDER BY s.score DESC, s.id) AS rank, "
        "COUNT(*) OVER (PARTITION BY s.topic) AS total FROM scored s) "
        "SELECT topic, id, content, score, level, total FROM ranked WHERE rank <= %s "
        "ORDER BY topic, rank"
    )
    adapt = connection.ops.adapt_datetimefield_value
    params = [
        *p_params,
        namespace_id,
        adapt(_local_midnight(start)),
        adapt(ends_at),
        adapt(now),
        max_items,
    ]
    topics: dict[str, tuple[int, list[tuple[int, str, float, int]]]] = {}
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL jit = off")
        cursor.execute(sql, params)
        for topic, memory_id, content, score, level, total in cursor.fetchall():
            topics.setdefault(topic, (total, []))[1].append(
                (memory_id, content, float(score), level)
            )
    return topics


@transaction.atomic
def consolidation_build(
    *,
    namespace: Namespace,
    period: str,
    start: date,
    max_items: int | None = None,
    excerpt_chars: int | None = None,
    report: DigestReport | None = None,
    now: datetime | None = None,
) -> list[Consolidation]:
    """(Re)build the digests of one namespace and period, one per topic; returns them.

    Unchanged digests are not written; digests of topics with no live, current memory left
    in the period (at `now`) are deleted, so the rows always equal what the memories say.
    """
    now = now or timezone.now()
    if period not in PERIODS:
        raise ValidationError({"period": f"Unknown period {period!r}."})
    report = report if report is not None else DigestReport()
    max_items = settings.DIGEST_MAX_ITEMS if max_items is None else max_items
    excerpt_chars = settings.DIGEST_EXCERPT_CHARS if excerpt_chars is None else excerpt_chars
    start = period_start(period, start)
    topics = _ranked_memories(namespace.pk, start, period_end(period, start), max_items, now)
    existing = {
        digest.topic: digest
        for digest in Consolidation.objects.select_for_update().filter(
            namespace=namespace, period=period, period_start=start
        )
    }
    stale = [digest.pk for topic, digest in existing.items() if topic not in topics]
    if stale:
        Consolidation.objects.filter(pk__in=stale).delete()
        report.deleted += len(stale)
    digests = []
    for topic, (total, items) in sorted(topics.items()):
        text = digest_text(
            period=period,
            start=start,
            topic=topic,
            total=total,
            items=[item[:3] for item in items],
            excerpt_chars=excerpt_chars,
        )
        ids = [item[0] for item in items]
        # The digest quotes its memories and counts the period's: it is as sensitive as
        # the most sensitive of them.
        level = max(item[3] for item in items)
        digest = existing.get(topic)
        if digest is None:
            digest, created = Consolidation.objects.get_or_create(
                namespace=namespace,
                period=period,
                period_start=start,
                topic=topic,
                defaults={
                    "text": text,
                    "memory_ids": ids,
                    "content_hash": content_hash(text),
                    "classification": level,
                },
            )
            if created:
                report.created += 1
                digests.append(digest)
                continue
        if digest.text == text and digest.memory_ids == ids and digest.classification == level:
            report.unchanged += 1
        else:
            digest.text, digest.memory_ids, digest.content_hash = text, ids, content_hash(text)
            digest.classification = level
            digest.save(update_fields=["text", "memory_ids", "content_hash", "classification"])
            report.updated += 1
        digests.append(digest)
    return digests


def digests_run(
    *,
    namespace: Namespace | int | None = None,
    now: datetime | None = None,
    lookback: int | None = None,
    periods: tuple[str, ...] = PERIODS,
) -> DigestReport:
    """Build the digests of the last `lookback` ended periods of each kind, per namespace."""
    started = time.perf_counter()
    now = now or timezone.now()
    lookback = settings.DIGEST_LOOKBACK_PERIODS if lookback is None else lookback
    today = timezone.localtime(now, ZoneInfo(settings.TIME_ZONE)).date()
    namespaces = Namespace.objects.order_by("id")
    if namespace is not None:
        namespaces = namespaces.filter(
            pk=namespace.pk if isinstance(namespace, Namespace) else namespace
        )
    report = DigestReport()
    for ns in namespaces:
        report.namespaces += 1
        for period in periods:
            for start in ended_periods(period, today, lookback):
                report.periods += 1
                consolidation_build(
                    namespace=ns, period=period, start=start, report=report, now=now
                )
    report.duration_seconds = time.perf_counter() - started
    return report


# --- Markdown files ----------------------------------------------------------------------


def namespace_label(namespace: Namespace) -> str:
    """owner/slug: how files name their namespace."""
    return f"{namespace.owner.get_username()}/{namespace.slug}"


def _topic_slug(topic: str) -> str:
    if not topic:
        return "no-topic"
    slug = slugify(topic)[:60] or "topic"
    # Two topics can slugify alike ("C++" and "c"): a short hash keeps the names apart.
    if slug != topic:
        slug += "-" + hashlib.sha1(topic.encode()).hexdigest()[:8]
    return slug


def digest_filename(digest: Consolidation) -> str:
    owner = slugify(digest.namespace.owner.get_username()) or "owner"
    return (
        f"{digest.period_start.isoformat()}__{owner}__{digest.namespace.slug}__"
        f"{_topic_slug(digest.topic)}.md"
    )


def digest_markdown(digest: Consolidation) -> str:
    """Front matter (one JSON value per key) and the digest's text."""
    values = {
        "namespace": namespace_label(digest.namespace),
        "period": digest.period,
        "period_start": digest.period_start.isoformat(),
        "topic": digest.topic,
        "memory_ids": digest.memory_ids,
        "content_hash": digest.content_hash or content_hash(digest.text),
        "created_at": digest.created_at.isoformat(),
    }
    lines = [FRONT_MATTER]
    lines += [f"{key}: {json.dumps(values[key], ensure_ascii=False)}" for key in FRONT_MATTER_KEYS]
    lines += [FRONT_MATTER, "", digest.text.rstrip("\n"), ""]
    return "\n".join(lines)


def parse_digest_markdown(text: str) -> tuple[dict[str, Any], str]:
    """(front matter, body) of a digest file; ValueError says what is wrong."""
    lines = text.replace("\r\n", "\n").split("\n")
    if not lines or lines[0].strip() != FRONT_MATTER:
        raise ValueError("no front matter (the file must start with ---)")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == FRONT_MATTER)
    except StopIteration:
        raise ValueError("the front matter is not closed with ---") from None
    meta: dict[str, Any] = {}
    for number, line in enumerate(lines[1:end], start=2):
        if not line.strip():
            continue
        key, sep, raw = line.partition(":")
        if not sep:
            raise ValueError(f"line {number}: expected 'key: value'")
        try:
            meta[key.strip()] = json.loads(raw.strip())
        except ValueError:
            meta[key.strip()] = raw.strip()  # a hand-edited bare string
    body = "\n".join(lines[end + 1 :]).strip("\n")
    return meta, body


def consolidations_export(*, directory: Path | str, namespace: Namespace | None = None) -> int:
    """Write every digest (of one namespace, or all) as DIR/<period>/<name>.md; returns how
    many. File names are stable, so exporting twice rewrites the same files."""
    directory = Path(directory)
    digests = Consolidation.objects.select_related("namespace__owner").order_by("id")
    if namespace is not None:
        digests = digests.filter(namespace=namespace)
    for period in PERIODS:
        (directory / period).mkdir(parents=True, exist_ok=True)
    written = 0
    for digest in digests.iterator(chunk_size=500):
        path = directory / digest.period / digest_filename(digest)
        content = digest_markdown(digest)
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            tmp = path.with_suffix(".md.tmp")
            tmp.write_text(content, encoding="utf-8")
            tmp.replace(path)  # a reader never sees half a file
        written += 1
    return written


@dataclass
class ImportReport:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    errors: list[str] = field(default_factory=list)


def _resolve_namespace(label: Any, cache: dict[str, Namespace | None]) -> Namespace | None:
    if not isinstance(label, str) or "/" not in label:
        return None
    if label not in cache:
        owner, slug = label.rsplit("/", 1)
        cache[label] = (
            Namespace.objects.filter(owner__username=owner, slug=slug)
            .select_related("owner")
            .first()
        )
    return cache[label]


def consolidations_import(
    *, directory: Path | str, namespace: Namespace | None = None
) -> ImportReport:
    """Read DIR/{daily,weekly,quarterly}/*.md back into Consolidation rows (upsert by
    namespace, period, start and topic). Files name their namespace as owner/slug unless
    `namespace` is given; memory ids that are not memories of that namespace are dropped.
    A bad file is reported and skipped; the others are imported."""
    directory = Path(directory)
    report = ImportReport()
    cache: dict[str, Namespace | None] = {}
    for period in PERIODS:
        folder = directory / period
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.md")):
            try:
                _import_file(path, period, namespace, cache, report)
            except (ValueError, ValidationError) as error:
                report.errors.append(f"{path.relative_to(directory)}: {error}")
    return report


def _import_file(
    path: Path,
    folder_period: str,
    namespace: Namespace | None,
    cache: dict[str, Namespace | None],
    report: ImportReport,
) -> None:
    meta, body = parse_digest_markdown(path.read_text(encoding="utf-8"))
    period = meta.get("period", folder_period)
    if period != folder_period:
        raise ValueError(f"period {period!r} does not match its folder {folder_period!r}")
    target = namespace or _resolve_namespace(meta.get("namespace"), cache)
    if target is None:
        raise ValueError(f"unknown namespace {meta.get('namespace')!r} (expected owner/slug)")
    try:
        start = date.fromisoformat(str(meta.get("period_start")))
    except ValueError:
        raise ValueError(f"bad period_start {meta.get('period_start')!r}") from None
    if period_start(period, start) != start:
        raise ValueError(f"{start} is not the first day of a {period} period")
    topic = meta.get("topic", "")
    if not isinstance(topic, str) or len(topic) > 100:
        raise ValueError("topic must be a string of at most 100 characters")
    ids = meta.get("memory_ids", [])
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise ValueError("memory_ids must be a list of integers")
    if not body.strip():
        raise ValueError("the digest has no text")
    known = dict(
        Memory.objects.filter(namespace=target, id__in=ids).values_list("id", "classification")
    )
    # A digest whose memories are not all here may quote what none of them says: restricted.
    restricted = Classification.RESTRICTED
    level = max(known.values()) if known and len(known) == len(set(ids)) else restricted
    ids = [i for i in ids if i in known]
    defaults = {
        "text": body,
        "memory_ids": ids,
        "content_hash": content_hash(body),
        "classification": level,
    }
    with transaction.atomic():
        digest, created = Consolidation.objects.select_for_update().get_or_create(
            namespace=target, period=period, period_start=start, topic=topic, defaults=defaults
        )
        if created:
            report.created += 1
        elif all(getattr(digest, name) == value for name, value in defaults.items()):
            report.unchanged += 1
        else:
            for name, value in defaults.items():
                setattr(digest, name, value)
            digest.save(update_fields=list(defaults))
            report.updated += 1

"""Dates a recall query names, as time ranges its memories' creation times can fall in.

"What did Maria donate in December 2023?", "on 3 June, 2023", "the week before August 3,
2023", "yesterday": a memory is dated by when it was written (created_at), so a memory
written within the range a query names is more likely to be the one asked about. The words
of a date are not content words: the full-text stage does not match on them.

What is understood (English, case-insensitive):
- a day: "October 13, 2023", "13 October 2023", "13th of October, 2023", "2023-10-13";
- a month: "October 2023", "October, 2023", "in October" (that month of any year);
- a year: "in 2022", "during 2022", "of 2022" (a bare number is not taken for a year);
- before or by a day or month ("the week before August 3, 2023", "by July 10, 2022"): the
  two weeks up to it and the day itself, when what happened was most likely told;
- relative to now: "today", "yesterday", "last week", "last month", "last year",
  "this week", "this month", "N days / weeks / months ago".

Pure: the caller passes `now` and the user's time zone; ranges are half-open Unix seconds.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo

_MONTHS = {name.lower(): n for n, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): n for n, name in enumerate(calendar.month_abbr) if name}
_MONTHS["sept"] = 9
_MONTH = "(?P<{}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<{}>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<{}>(?:19|20)\d\d)"
_BEFORE = r"(?:(?P<before>before|by|until|up to|prior to)\s+(?:the\s+)?)?"

# Most precise first: a day, then a month, then a year; each match consumes its words.
_PATTERNS = [
    re.compile(
        _BEFORE
        + r"\b"
        + _MONTH.format("m1")
        + r"\s+"
        + _DAY.format("d1")
        + r",?\s+"
        + _YEAR.format("y1")
        + r"\b",
        re.IGNORECASE,
    ),
    re.compile(
        _BEFORE
        + r"\b"
        + _DAY.format("d2")
        + r"(?:\s+of)?\s+"
        + _MONTH.format("m2")
        + r",?\s+"
        + _YEAR.format("y2")
        + r"\b",
        re.IGNORECASE,
    ),
    re.compile(
        _BEFORE + r"\b(?P<y3>(?:19|20)\d\d)-(?P<m3>[01]\d)-(?P<d3>[0-3]\d)\b", re.IGNORECASE
    ),
    re.compile(
        _BEFORE + r"\b" + _MONTH.format("m4") + r",?\s+(?:of\s+)?" + _YEAR.format("y4") + r"\b",
        re.IGNORECASE,
    ),
    re.compile(r"\b(?:in|during|of|throughout)\s+" + _YEAR.format("y5") + r"\b", re.IGNORECASE),
    # A month without a year only after a preposition, so "may" the verb is not a month.
    re.compile(
        r"\b(?:in|during|since|of|early|late|mid)\s+(?:-\s*)?" + _MONTH.format("m6") + r"\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(?P<rel>today|yesterday|(?:last|this|past)\s+(?:week|weekend|month|year)"
        r"|(?P<n>\d{1,3}|a|one|two|three|four|five|six|seven|eight|nine|ten)\s+"
        r"(?P<unit>days?|weeks?|months?|years?)\s+ago)\b",
        re.IGNORECASE,
    ),
]

_NUMBERS = {
    "a": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
BEFORE_DAYS = 14  # "before X": what happened then was most likely told in these days


@dataclass(frozen=True)
class TimeRange:
    """[start, end) in Unix seconds, and the words of the query that named it."""

    start: float
    end: float
    text: str


@dataclass
class TemporalQuery:
    """The ranges a query names; months named without a year (any year's month, 1-12);
    and the query without those expressions, whose words are not content words."""

    ranges: list[TimeRange] = field(default_factory=list)
    months: list[int] = field(default_factory=list)
    rest: str = ""  # the text without the date expressions

    def __bool__(self) -> bool:
        return bool(self.ranges or self.months)

    def contains(self, timestamp: float, tz: tzinfo) -> bool:
        """Whether a memory written at `timestamp` falls in any of the ranges or months."""
        if any(r.start <= timestamp < r.end for r in self.ranges):
            return True
        if self.months:
            return datetime.fromtimestamp(timestamp, tz).month in self.months
        return False

    def describe(self) -> str:
        parts = [r.text for r in self.ranges]
        parts += [calendar.month_name[m] for m in self.months]
        return ", ".join(parts)


def _local(day: date, tz: tzinfo) -> float:
    return datetime(day.year, day.month, day.day, tzinfo=tz).timestamp()


def _day_range(day: date, tz: tzinfo, *, before: bool, text: str) -> TimeRange:
    """The local day, with a day's slack either side (a memory is dated by when it was
    written, and whoever asks may count days in another zone); before it: the
    BEFORE_DAYS up to it, and the day itself (what happened before was told then)."""
    start = day - timedelta(days=BEFORE_DAYS if before else 1)
    return TimeRange(_local(start, tz), _local(day + timedelta(days=2), tz), text)


def _month_range(year: int, month: int, tz: tzinfo, *, before: bool, text: str) -> TimeRange:
    first = date(year, month, 1)
    following = date(year + month // 12, month % 12 + 1, 1)
    if before:
        return TimeRange(
            _local(first - timedelta(days=BEFORE_DAYS), tz),
            _local(first + timedelta(days=1), tz),
            text,
        )
    return TimeRange(_local(first, tz), _local(following, tz), text)


def _relative(match: re.Match, now: datetime, tz: tzinfo) -> TimeRange | None:
    today = now.astimezone(tz).date()
    phrase = " ".join(match.group("rel").lower().split())
    if match.group("unit"):
        count = _NUMBERS.get(match.group("n").lower()) or int(match.group("n"))
        unit = match.group("unit").lower().rstrip("s")
        days = {"day": 1, "week": 7, "month": 30, "year": 365}[unit] * count
        slack = max(1, days // 7)  # "three weeks ago" is about, not exactly, 21 days
        centre = today - timedelta(days=days)
        start, end = centre - timedelta(days=slack), centre + timedelta(days=slack + 1)
    elif phrase == "today":
        start, end = today, today + timedelta(days=1)
    elif phrase == "yesterday":
        start, end = today - timedelta(days=1), today + timedelta(days=1)
    else:
        span = {"week": 7, "weekend": 7, "month": 31, "year": 366}[phrase.split()[1]]
        start = today - timedelta(days=span if phrase.startswith("this") else 2 * span)
        end = today + timedelta(days=1)
    return TimeRange(_local(start, tz), _local(end, tz), phrase)


def parse(text: str, *, now: datetime, tz: tzinfo) -> TemporalQuery:
    """The dates `text` names (module docstring), as ranges in `tz`, the user's zone."""
    found = TemporalQuery()
    remaining = text
    for pattern in _PATTERNS:
        for match in pattern.finditer(remaining):
            span = match.group(0)
            groups = {k: v for k, v in match.groupdict().items() if v}
            before = "before" in groups
            try:
                if "rel" in groups:
                    found.ranges.append(_relative(match, now, tz))
                elif "m6" in groups:
                    found.months.append(_MONTHS[groups["m6"].lower()])
                elif "y5" in groups:
                    year = int(groups["y5"])
                    found.ranges.append(
                        TimeRange(
                            _local(date(year, 1, 1), tz), _local(date(year + 1, 1, 1), tz), span
                        )
                    )
                elif "y4" in groups:
                    month = _MONTHS[groups["m4"].lower()]
                    found.ranges.append(
                        _month_range(int(groups["y4"]), month, tz, before=before, text=span)
                    )
                else:
                    key = next(k for k in ("y1", "y2", "y3") if k in groups)
                    n = key[1]
                    month_text = groups[f"m{n}"]
                    month = int(month_text) if month_text.isdigit() else _MONTHS[month_text.lower()]
                    day = date(int(groups[key]), month, int(groups[f"d{n}"]))
                    found.ranges.append(_day_range(day, tz, before=before, text=span))
            except (ValueError, OverflowError):  # 31 February, month 13, year 9999: no date
                continue
            remaining = remaining.replace(span, " ", 1)
    found.rest = remaining
    return found

"""The table `manage.py bench_peer` prints: Engram and the peer side by side.

table_rows lays out the JSON figures of a run (either side may be absent), with the
ratio Engram / peer where both have a figure; format_table aligns the rows as text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.peer_venv import PEER_NAME


@dataclass(frozen=True)
class Row:
    figure: str
    engram: str
    peer: str
    ratio: str = ""


def ratio(engram: float | None, peer: float | None) -> str:
    """Engram / peer, or n/a when either is missing or the peer's is zero."""
    if engram is None or peer is None or peer == 0:
        return "n/a"
    return f"{engram / peer:.2f}"


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def table_rows(figures: dict[str, Any]) -> list[Row]:
    """The rows of the printed table from the JSON figures (either side may be absent)."""
    rows: list[Row] = []
    engram, peer = figures.get("engram") or {}, figures.get("peer") or {}
    rows.append(Row("version", engram.get("version", "-"), peer.get("version", "-")))
    rows.append(Row("storage", engram.get("storage", "-"), peer.get("storage", "-")))
    e, p = engram.get("corpus") or {}, peer.get("corpus") or {}
    if e or p:
        size = e.get("memories") or p.get("memories") or 0
        rows.append(
            Row(
                f"load {size:,} memories, s",
                _num(e.get("load_seconds")),
                _num(p.get("load_seconds")),
                ratio(e.get("load_seconds"), p.get("load_seconds")),
            )
        )
        rows.append(
            Row(
                "load rate, memories/s",
                _num(e.get("load_rate"), 0),
                _num(p.get("load_rate"), 0),
                ratio(e.get("load_rate"), p.get("load_rate")),
            )
        )
        if p.get("cold_start_seconds") is not None:
            rows.append(
                Row("peer cold start (read JSONL), s", "-", _num(p["cold_start_seconds"], 2))
            )
        n = e.get("queries") or p.get("queries") or 0
        for q in ("p50", "p95"):
            ev, pv = (e.get("search_ms") or {}).get(q), (p.get("search_ms") or {}).get(q)
            rows.append(
                Row(f"search {q} ({n} queries, k=10), ms", _num(ev), _num(pv), ratio(ev, pv))
            )
        rows.append(
            Row(
                "results per query (mean) / distinct memories returned",
                _pair(e.get("results_per_query"), e.get("distinct_results")),
                _pair(p.get("results_per_query"), p.get("distinct_results")),
            )
        )
        for key, label in (
            ("decay_dry", "decay pass, dry run (Engram sweep / peer gc), s"),
            ("decay", "decay pass, writing, s"),
        ):
            ev, pv = (e.get(key) or {}).get("seconds"), (p.get(key) or {}).get("seconds")
            rows.append(Row(label, _num(ev, 3), _num(pv, 3), ratio(ev, pv)))
            rows.append(
                Row(
                    "  memories forgotten / removed",
                    _int((e.get(key) or {}).get("changed")),
                    _int((p.get(key) or {}).get("changed")),
                )
            )
    e, p = engram.get("locomo") or {}, peer.get("locomo") or {}
    if e or p:
        ks = sorted(int(k) for k in (e.get("recall") or p.get("recall") or {}))
        questions = e.get("questions") or p.get("questions") or 0
        for k in ks:
            ev, pv = _at(e.get("recall"), k), _at(p.get("recall"), k)
            rows.append(
                Row(
                    f"LoCoMo recall@{k} ({questions} questions)",
                    _num(ev, 3),
                    _num(pv, 3),
                    ratio(ev, pv),
                )
            )
        for key, label in (
            ("recall_wide", "peer, top_k={n} cut to {k}"),
            ("recall_recent", "peer, turns saved just now, top_k={n} cut to {k}"),
        ):
            for k in ks if p.get(key) else ():
                text = label.format(n=p.get("wide_top_k"), k=k)
                rows.append(Row(f"  recall@{k}: {text}", "-", _num(_at(p[key], k), 3)))
        ev, pv = (e.get("latency_ms") or {}).get("p50"), (p.get("latency_ms") or {}).get("p50")
        rows.append(Row("LoCoMo search p50, ms", _num(ev), _num(pv), ratio(ev, pv)))
    return rows


def _at(mapping: dict | None, k: int) -> float | None:
    if not mapping:
        return None
    value = mapping.get(k, mapping.get(str(k)))
    return None if value is None else float(value)


def _int(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _pair(a: float | None, b: int | None) -> str:
    return "-" if a is None else f"{a:.1f} / {b:,}"


def format_table(rows: Sequence[Row], peer: str = PEER_NAME) -> str:
    header = Row("figure", "Engram", peer, f"Engram / {peer}")
    cells = [header, *rows]
    widths = [max(len(getattr(r, name)) for r in cells) for name in Row.__dataclass_fields__]
    lines = []
    for index, row in enumerate(cells):
        parts = [
            row.figure.ljust(widths[0]),
            row.engram.rjust(widths[1]),
            row.peer.rjust(widths[2]),
            row.ratio.rjust(widths[3]),
        ]
        lines.append("  ".join(parts).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)

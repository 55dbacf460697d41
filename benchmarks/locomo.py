"""recall@k of the real recall pipeline on a LoCoMo-format file (`manage.py eval_recall`).

Each conversation is loaded into a fresh namespace: one memory per turn ("Speaker: text";
with --captions, plus "[shares <caption>]" when the turn shared an image), keywords = the
speaker, created at its session's date (plus one second per turn, to keep turn order);
neighbouring turns of a session are linked by associations (next turn weight 1.0, the turn
after 0.5). Every question of categories 1-4 that has evidence is asked with tracking off;
recall@k is the share of its evidence turns among the first k results, averaged.
The namespaces are deleted afterwards unless --keep.
"""

from __future__ import annotations

import json
import re
import statistics
import time
import uuid
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import transaction

from benchmarks.stats import percentile
from memories.models import Association, Classification, Memory, Namespace
from memories.services import memory_build, namespace_create
from recall.embeddings import embed_pending
from recall.pipeline import RecallConfig
from recall.services import recall_run
from recall.stages import ALL_STAGES

EVAL_USERNAME = "recall-eval"
CATEGORIES = (1, 2, 3, 4)
NEXT_TURN_WEIGHT = 1.0
SKIP_TURN_WEIGHT = 0.5
_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%Y-%m-%d %H:%M", "%Y-%m-%d")


def read_locomo(path: Path, conversations: int | None = None, *, hint: str = "") -> list[dict]:
    """The conversations of a LoCoMo-format file (a list, or one conversation), the first
    `conversations` of them when given; CommandError when it cannot be read."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise CommandError(f"cannot read {path}: {exc}{hint}") from exc
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise CommandError("expected a list of LoCoMo conversations")
    return data[:conversations] if conversations else data


def parse_session_date(text: str) -> datetime | None:
    cleaned = " ".join(str(text).split())
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def evidence_ids(evidence: Any) -> list[str]:
    """Evidence dia_ids; some LoCoMo entries pack several into one string ("D8:6; D9:17")."""
    ids: list[str] = []
    for item in evidence or []:
        ids += [part for part in re.split(r"[;,\s]+", str(item)) if part]
    return list(dict.fromkeys(ids))


def sessions(conversation: dict) -> list[tuple[int, datetime | None, list[dict]]]:
    found = []
    for key, value in conversation.items():
        match = re.fullmatch(r"session_(\d+)", key)
        if match and isinstance(value, list):
            number = int(match.group(1))
            date = parse_session_date(conversation.get(f"{key}_date_time", ""))
            found.append((number, date, value))
    return sorted(found, key=lambda item: item[0])


def turn_content(turn: dict, *, captions: bool) -> str:
    text = f"{turn.get('speaker', '')}: {turn.get('text', '')}".strip()
    caption = turn.get("blip_caption")
    if captions and caption:
        text += f" [shares {caption}]"
    return text


@transaction.atomic
def load_conversation(
    item: dict, *, owner, captions: bool = False, associations: bool = True
) -> tuple[Namespace, dict[int, str]]:
    """A fresh namespace holding one memory per turn; returns it and memory id -> dia_id."""
    conversation = item.get("conversation") or {}
    sample = str(item.get("sample_id") or "conversation")
    namespace = namespace_create(
        owner=owner,
        name=f"eval {sample}",
        slug=f"eval-{re.sub(r'[^a-z0-9-]+', '-', sample.lower())}-{uuid.uuid4().hex[:8]}",
    )
    base = datetime(2000, 1, 1, tzinfo=UTC)
    built: list[Memory] = []
    dia_ids: list[str] = []
    session_of: list[int] = []
    for index, (number, date, turns) in enumerate(sessions(conversation)):
        start = date or base + timedelta(days=index)
        for position, turn in enumerate(turns):
            if not str(turn.get("text", "")).strip():
                continue
            speaker = str(turn.get("speaker", "")).strip()
            built.append(
                memory_build(
                    namespace=namespace,
                    content=turn_content(turn, captions=captions),
                    keywords=[speaker] if speaker else [],
                    created_at=start + timedelta(seconds=position),
                    classification=Classification.PUBLIC,
                )
            )
            dia_ids.append(str(turn.get("dia_id", "")))
            session_of.append(number)
    created = Memory.objects.bulk_create(built, batch_size=500)
    if associations:
        links = []
        for i in range(len(created)):
            for step, weight in ((1, NEXT_TURN_WEIGHT), (2, SKIP_TURN_WEIGHT)):
                j = i + step
                if j < len(created) and session_of[j] == session_of[i]:
                    links.append(
                        Association(
                            namespace=namespace,
                            source=created[i],
                            target=created[j],
                            weight=weight,
                            kind="next_turn" if step == 1 else "near_turn",
                        )
                    )
        Association.objects.bulk_create(links, batch_size=1000)
    return namespace, {memory.pk: dia for memory, dia in zip(created, dia_ids, strict=True)}


def evaluate(
    data: list[dict],
    *,
    file: str,
    ks: list[int],
    config: RecallConfig,
    stages: list[str] | None = None,
    captions: bool = False,
    associations: bool = True,
    embed: bool = False,
    keep: bool = False,
) -> dict[str, Any]:
    """Load each conversation into a fresh namespace, ask its questions; the figures.

    `ks` sorted ascending; the figures are recall@k overall and per category, the
    latency of recall_run and the configuration (the shape `--json` writes).
    CommandError when the file has no question of categories 1-4 with evidence.
    """
    owner, _ = get_user_model().objects.get_or_create(username=EVAL_USERNAME)
    limit = max(ks)

    hits: dict[int, list[float]] = defaultdict(list)  # k -> per-question recall
    by_category: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    latencies: list[float] = []
    memories = 0
    embed_seconds = 0.0
    namespaces: list[Namespace] = []
    try:
        for item in data:
            namespace, dia_of = load_conversation(
                item,
                owner=owner,
                captions=captions,
                associations=associations,
            )
            namespaces.append(namespace)
            memories += len(dia_of)
            if embed:
                t0 = time.perf_counter()
                embed_pending(namespace_ids=[namespace.pk], provider=config.embedding_provider)
                embed_seconds += time.perf_counter() - t0
            for qa in item.get("qa") or []:
                category = qa.get("category")
                evidence = evidence_ids(qa.get("evidence"))
                if category not in CATEGORIES or not evidence or not qa.get("question"):
                    continue
                t0 = time.perf_counter()
                result = recall_run(
                    namespaces=[namespace],
                    ceiling=Classification.RESTRICTED,
                    query=str(qa["question"]),
                    limit=limit,
                    track=False,
                    stages=stages,
                    config=config,
                )
                latencies.append((time.perf_counter() - t0) * 1000)
                returned = [dia_of.get(hit.memory_id) for hit in result.results]
                for k in ks:
                    top = set(returned[:k])
                    share = sum(1 for e in evidence if e in top) / len(evidence)
                    hits[k].append(share)
                    by_category[category][k].append(share)
    finally:
        if not keep:
            for namespace in namespaces:
                namespace.delete()

    questions = len(latencies)
    if not questions:
        raise CommandError("no question of categories 1-4 with evidence in the file")
    return {
        "file": file,
        "conversations": len(data),
        "memories": memories,
        "questions": questions,
        "configuration": {
            "fusion": config.fusion,
            "stages": stages or list(ALL_STAGES),
            "embeddings": config.embedding_provider if config.embedding_enabled else "off",
            "captions": captions,
            "associations": associations,
            "mmr_lambda": config.mmr_lambda,
            "keyword_boost": config.keyword_boost,
            "association_spread": config.association_spread,
            "episode_boost": config.episode_boost,
            "short_circuit": config.short_circuit,
        },
        "recall": {k: statistics.fmean(hits[k]) for k in ks},
        "by_category": {
            c: {"questions": len(by_category[c][ks[0]])}
            | {k: statistics.fmean(by_category[c][k]) for k in ks}
            for c in sorted(by_category)
        },
        "latency_ms": {
            "p50": percentile(latencies, 0.50),
            "p95": percentile(latencies, 0.95),
            "mean": statistics.fmean(latencies),
        },
        "embedding_seconds": round(embed_seconds, 1),
    }

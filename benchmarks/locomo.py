"""recall@k of the real recall pipeline on a LoCoMo-format file (`manage.py eval_recall`).

Each conversation is loaded into a fresh namespace: one memory per turn ("Speaker: text";
with --captions, plus "[shares <caption>]" when the turn shared an image), keywords = the
speaker, created at its session's date (plus one second per turn, to keep turn order), its
LoCoMo session as session_id and its index as position, written through the bulk
endpoint's serializer and service (or, with --http, the API itself): the links between
neighbouring turns are the product's own session links. Every question of categories 1-4
that has evidence is asked with tracking off; recall@k is the share of its evidence turns
among the first k results, averaged.
The namespaces are deleted afterwards unless --keep.
"""

from __future__ import annotations

import json
import re
import statistics
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from benchmarks.api_client import ApiClient
from benchmarks.stats import percentile
from memories.models import Classification, Memory, Namespace
from memories.serializers import validate_memory_input
from memories.services import memory_bulk_create, namespace_create
from recall.embeddings import embed_pending
from recall.pipeline import RecallConfig
from recall.services import recall_run
from recall.stages import ALL_STAGES

EVAL_USERNAME = "recall-eval"
# Items per POST /memories/bulk with --http (within the default API_BULK_MAX).
BULK_REQUEST = 500
CATEGORIES = (1, 2, 3, 4)
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


_DIA_ID = re.compile(r"D:?0*(\d+):0*(\d+)")


def dia_id(value: Any) -> str:
    """A turn's id as the file writes it, or in the canonical "D<session>:<turn>" when it is
    that id written loosely: LoCoMo's evidence holds a few typos ("D:11:26" for "D11:26"),
    and an id with leading zeros ("D3:07") names the same turn."""
    text = str(value if value is not None else "").strip()
    match = _DIA_ID.fullmatch(text)
    return f"D{int(match.group(1))}:{int(match.group(2))}" if match else text


def evidence_ids(evidence: Any) -> list[str]:
    """Evidence dia_ids; some LoCoMo entries pack several into one string ("D8:6; D9:17")."""
    ids: list[str] = []
    for item in evidence or []:
        ids += [dia_id(part) for part in re.split(r"[;,\s]+", str(item)) if part]
    return list(dict.fromkeys(ids))


def turn_ids(conversation: dict) -> set[str]:
    """The ids of every turn of a conversation, those without text included (they are
    in the conversation, though no memory holds them)."""
    return {dia_id(turn.get("dia_id")) for _, _, turns in sessions(conversation) for turn in turns}


def scored_evidence(qa: dict, turns: set[str]) -> tuple[list[str], int]:
    """A question's evidence ids that name turns of its conversation (`turns`, turn_ids),
    and how many it names that do not: those ("D", a turn past the end of its session)
    could be found by no system, so they are counted, not scored."""
    named = evidence_ids(qa.get("evidence"))
    kept = [e for e in named if e in turns]
    return kept, len(named) - len(kept)


def recall_at_k(
    returned: Sequence[str | Sequence[str] | None], evidence: Sequence[str], k: int
) -> float:
    """Share of the evidence turns among the first k results: eval_recall's definition,
    and bench_peer's. A result is a turn's dia_id, None (not a turn), or the dia_ids of every
    turn that wrote it (a memory written twice, the second write answered with the first)."""
    top: set[str] = set()
    for entry in returned[:k]:
        if isinstance(entry, str):
            top.add(entry)
        elif entry is not None:
            top.update(entry)
    return sum(1 for e in evidence if e in top) / len(evidence)


def _turns_of(created_ids: Sequence[int], dia_ids: Sequence[str]) -> dict[int, tuple[str, ...]]:
    """Memory id -> the dia_ids of the turns whose write returned it, in the file's order."""
    turns: dict[int, list[str]] = {}
    for memory_id, dia in zip(created_ids, dia_ids, strict=True):
        turns.setdefault(memory_id, []).append(dia)
    return {memory_id: tuple(dias) for memory_id, dias in turns.items()}


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


def conversation_items(item: dict, *, captions: bool = False) -> list[dict[str, Any]]:
    """One conversation's turns as the items of a bulk create, in the API's shape: the
    content, the speaker as keyword, the session's date plus one second per turn, the
    LoCoMo session as session_id and the turn's index as position; and each turn's dia_id
    under "_dia_id" (which the caller removes before sending)."""
    conversation = item.get("conversation") or {}
    base = datetime(2000, 1, 1, tzinfo=UTC)
    items: list[dict[str, Any]] = []
    for index, (number, date, turns) in enumerate(sessions(conversation)):
        start = date or base + timedelta(days=index)
        for position, turn in enumerate(turns):
            if not str(turn.get("text", "")).strip():
                continue
            speaker = str(turn.get("speaker", "")).strip()
            items.append(
                {
                    "content": turn_content(turn, captions=captions),
                    "keywords": [speaker] if speaker else [],
                    "created_at": (start + timedelta(seconds=position)).isoformat(),
                    "session_id": f"session_{number}",
                    "position": position,
                    "_dia_id": dia_id(turn.get("dia_id")),
                }
            )
    return items


def namespace_slug(item: dict) -> str:
    sample = str(item.get("sample_id") or "conversation")
    return f"eval-{re.sub(r'[^a-z0-9-]+', '-', sample.lower())}-{uuid.uuid4().hex[:8]}"[:100]


def load_conversation(
    item: dict, *, owner, captions: bool = False, associations: bool = True
) -> tuple[Namespace, dict[int, tuple[str, ...]]]:
    """A fresh namespace holding one memory per turn, written as an agent writes them: each
    request's worth of items (API_BULK_MAX) validated by the bulk endpoint's serializer and
    stored by its service, memory_bulk_create, which links each session's turns
    (`associations` False: a namespace with session_links off). Returns the namespace and
    memory id -> the dia_ids of its turns (more than one when a turn repeats an earlier
    one's text, which the namespace's dedupe answers with the earlier memory)."""
    slug = namespace_slug(item)
    namespace = namespace_create(owner=owner, name=slug, slug=slug, session_links=associations)
    items = conversation_items(item, captions=captions)
    dia_ids = [entry.pop("_dia_id") for entry in items]
    created: list[Memory] = []
    for start in range(0, len(items), settings.API_BULK_MAX):
        chunk = items[start : start + settings.API_BULK_MAX]
        validated = []
        for entry in chunk:
            fields = validate_memory_input({**entry, "namespace": namespace.slug})
            fields.pop("namespace")
            validated.append({"namespace": namespace, **fields})
        created += memory_bulk_create(items=validated, source="eval", prevalidated=True)
    return namespace, _turns_of([memory.pk for memory in created], dia_ids)


def load_conversation_http(
    item: dict, *, client: ApiClient, captions: bool = False, associations: bool = True
) -> tuple[str, dict[int, tuple[str, ...]]]:
    """load_conversation through the REST API: POST /namespaces, then POST /memories/bulk
    with the same items, in requests of BULK_REQUEST items. Returns the namespace's slug and
    memory id -> the dia_ids of its turns."""
    slug = namespace_slug(item)
    client.post("/namespaces", {"name": slug, "slug": slug, "session_links": associations})
    items = conversation_items(item, captions=captions)
    dia_ids = [entry.pop("_dia_id") for entry in items]
    created: list[dict] = []
    for start in range(0, len(items), BULK_REQUEST):
        chunk = items[start : start + BULK_REQUEST]
        created += client.post("/memories/bulk", {"namespace": slug, "memories": chunk})
    return slug, _turns_of([memory["id"] for memory in created], dia_ids)


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
    http: ApiClient | None = None,
) -> dict[str, Any]:
    """Load each conversation into a fresh namespace, ask its questions; the figures.

    `ks` sorted ascending; the figures are recall@k overall and per category, the
    latency of a recall and the configuration (the shape `--json` writes). With `http`,
    through the REST API of a running server (its settings rule recall; the namespaces
    stay, as the API deletes none). CommandError when the file has no question of
    categories 1-4 with evidence.
    """
    limit = max(ks)
    owner = None if http else get_user_model().objects.get_or_create(username=EVAL_USERNAME)[0]

    hits: dict[int, list[float]] = defaultdict(list)  # k -> per-question recall
    by_category: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    latencies: list[float] = []
    memories = 0
    ignored_evidence = 0
    embed_seconds = 0.0
    namespaces: list[Namespace] = []
    try:
        for item in data:
            if http:
                slug, dia_of = load_conversation_http(
                    item, client=http, captions=captions, associations=associations
                )
            else:
                namespace, dia_of = load_conversation(
                    item, owner=owner, captions=captions, associations=associations
                )
                namespaces.append(namespace)
            memories += len(dia_of)
            if embed and not http:
                t0 = time.perf_counter()
                embed_pending(namespace_ids=[namespace.pk], provider=config.embedding_provider)
                embed_seconds += time.perf_counter() - t0
            in_file = turn_ids(item.get("conversation") or {})
            for qa in item.get("qa") or []:
                category = qa.get("category")
                evidence, ignored = scored_evidence(qa, in_file)
                if category not in CATEGORIES or not qa.get("question"):
                    continue
                ignored_evidence += ignored
                if not evidence:
                    continue
                t0 = time.perf_counter()
                if http:
                    body: dict[str, Any] = {
                        "query": str(qa["question"]),
                        "namespaces": [slug],
                        "limit": limit,
                        "track": False,
                    }
                    if stages:
                        body["stages"] = stages
                    ids = [hit["memory_id"] for hit in http.post("/recall", body)["results"]]
                else:
                    result = recall_run(
                        namespaces=[namespace],
                        ceiling=Classification.RESTRICTED,
                        query=str(qa["question"]),
                        limit=limit,
                        track=False,
                        stages=stages,
                        config=config,
                    )
                    ids = [hit.memory_id for hit in result.results]
                latencies.append((time.perf_counter() - t0) * 1000)
                returned = [dia_of.get(memory_id) for memory_id in ids]
                for k in ks:
                    share = recall_at_k(returned, evidence, k)
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
        "ignored_evidence": ignored_evidence,
        "configuration": {
            "server": http.base if http else "",
            "fusion": config.fusion,
            "stages": stages or list(ALL_STAGES),
            "embeddings": config.embedding_provider if config.embedding_enabled else "off",
            "captions": captions,
            "associations": associations,
            "mmr_lambda": config.mmr_lambda,
            "keyword_boost": config.keyword_boost,
            "association_spread": config.association_spread,
            "episode_boost": config.episode_boost,
            "temporal_boost": config.temporal_boost,
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

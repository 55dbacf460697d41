"""Measure recall@k on a LoCoMo-format file through the real recall pipeline.

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

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from memories.models import Association, Classification, Memory, Namespace
from memories.services import memory_build, namespace_create
from recall.pipeline import ALL_STAGES, RecallConfig
from recall.services import recall_run

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


def percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[index]


class Command(BaseCommand):
    help = "recall@k of the recall pipeline on a LoCoMo-format JSON file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="LoCoMo-format JSON (a list of conversations)")
        parser.add_argument("--k", default="1,5,10", help="comma-separated k values")
        parser.add_argument("--fusion", choices=("penalty", "rrf"), help="override RECALL_FUSION")
        parser.add_argument(
            "--stages", help=f"comma-separated subset of {','.join(ALL_STAGES)} (default all)"
        )
        parser.add_argument(
            "--embed",
            action="store_true",
            help="embed the turns with EMBEDDING_PROVIDER and turn Se on",
        )
        parser.add_argument("--provider", help="embedding provider for --embed")
        parser.add_argument(
            "--captions", action="store_true", help="append shared images' captions to turns"
        )
        parser.add_argument(
            "--no-associations", action="store_true", help="do not link neighbouring turns"
        )
        parser.add_argument("--mmr-lambda", type=float, help="override RECALL_MMR_LAMBDA")
        parser.add_argument("--keyword-boost", type=float)
        parser.add_argument("--association-spread", type=float)
        parser.add_argument("--episode-boost", type=float)
        parser.add_argument("--candidate-cap", type=int)
        parser.add_argument(
            "--no-short-circuit",
            action="store_true",
            help="run Se and Ss even when Sf fills the limit (to measure what they add)",
        )
        parser.add_argument("--conversations", type=int, help="only the first N conversations")
        parser.add_argument("--json", dest="json_out", help="write the figures to this file")
        parser.add_argument("--keep", action="store_true", help="keep the namespaces")

    def handle(self, *args: Any, **options: Any) -> None:
        # Latency is reported as production would see it: without the query log.
        settings.DEBUG = False
        path = Path(options["file"])
        data = read_locomo(path, options["conversations"])
        try:
            ks = sorted({int(k) for k in options["k"].split(",") if k.strip()})
        except ValueError:
            raise CommandError("--k takes comma-separated integers, e.g. 1,5,10") from None
        if not ks or ks[0] < 1:
            raise CommandError("--k values must be positive")
        stages = None
        if options["stages"]:
            stages = [s.strip() for s in options["stages"].split(",") if s.strip()]
            unknown = [s for s in stages if s not in ALL_STAGES]
            if unknown:
                raise CommandError(f"unknown stages {unknown}")
        overrides: dict[str, Any] = {}
        for option, key in (
            ("fusion", "fusion"),
            ("mmr_lambda", "mmr_lambda"),
            ("keyword_boost", "keyword_boost"),
            ("association_spread", "association_spread"),
            ("episode_boost", "episode_boost"),
            ("candidate_cap", "candidate_cap"),
        ):
            if options[option] is not None:
                overrides[key] = options[option]
        if options["no_short_circuit"]:
            overrides["short_circuit"] = False
        if options["embed"]:
            overrides["embedding_enabled"] = True
            if options["provider"]:
                overrides["embedding_provider"] = options["provider"]
        config = RecallConfig.from_settings(**overrides)
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
                    captions=options["captions"],
                    associations=not options["no_associations"],
                )
                namespaces.append(namespace)
                memories += len(dia_of)
                if options["embed"]:
                    from recall.embeddings import embed_pending

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
            if not options["keep"]:
                for namespace in namespaces:
                    namespace.delete()

        questions = len(latencies)
        if not questions:
            raise CommandError("no question of categories 1-4 with evidence in the file")
        figures = {
            "file": str(path),
            "conversations": len(data),
            "memories": memories,
            "questions": questions,
            "configuration": {
                "fusion": config.fusion,
                "stages": stages or list(ALL_STAGES),
                "embeddings": config.embedding_provider if config.embedding_enabled else "off",
                "captions": options["captions"],
                "associations": not options["no_associations"],
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
        self._print(figures, ks)
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(figures, indent=2, default=str))

    def _print(self, figures: dict, ks: list[int]) -> None:
        out = self.stdout.write
        conf = figures["configuration"]
        out(f"LoCoMo evaluation of {figures['file']}")
        out(
            f"{figures['conversations']} conversations, {figures['memories']} memories, "
            f"{figures['questions']} questions (categories 1-4)"
        )
        out(
            f"fusion={conf['fusion']} stages={','.join(conf['stages'])} "
            f"embeddings={conf['embeddings']} captions={conf['captions']} "
            f"associations={conf['associations']} mmr_lambda={conf['mmr_lambda']} "
            f"short_circuit={conf['short_circuit']}"
        )
        out("overall     " + "  ".join(f"recall@{k} {figures['recall'][k]:.3f}" for k in ks))
        for category, row in figures["by_category"].items():
            out(
                f"category {category} (n={row['questions']}) "
                + "  ".join(f"recall@{k} {row[k]:.3f}" for k in ks)
            )
        lat = figures["latency_ms"]
        out(f"latency ms  p50 {lat['p50']:.1f}  p95 {lat['p95']:.1f}  mean {lat['mean']:.1f}")
        if figures["embedding_seconds"]:
            out(f"document embedding took {figures['embedding_seconds']} s")

"""Create the demo account with two namespaces of varied memories. Safe to run twice."""

from __future__ import annotations

import os
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from memories import services
from memories.decay import decay_score
from memories.models import Association, Classification, Entity, Memory, Namespace, Relation
from review.models import Card

DEMO_USERNAME = "demo"
DEFAULT_PASSWORD = "engram-demo-2026"

C = Classification
# (topic, content, memory_type, tier, classification, days ago, use_count, keywords)
PERSONAL = [
    (
        "cooking",
        "Sourdough starter needs feeding every 12 hours at room temperature.",
        "procedural",
        "short_term",
        C.PUBLIC,
        2,
        3,
        ["sourdough", "starter"],
    ),
    (
        "cooking",
        "Maillard browning starts around 140 °C; pat meat dry before searing.",
        "semantic",
        "long_term",
        C.PUBLIC,
        40,
        7,
        ["maillard", "searing"],
    ),
    (
        "cooking",
        "Risotto: toast the rice, add warm stock one ladle at a time, stir often.",
        "procedural",
        "short_term",
        C.PUBLIC,
        9,
        1,
        ["risotto"],
    ),
    (
        "cooking",
        "Crème brûlée sets at 80 °C in a water bath; chill four hours before torching.",
        "procedural",
        "short_term",
        C.PUBLIC,
        20,
        0,
        ["dessert"],
    ),
    (
        "health",
        "Resting heart rate dropped from 68 to 61 bpm after three months of running.",
        "episodic",
        "short_term",
        C.CONFIDENTIAL,
        5,
        2,
        ["running", "heart rate"],
    ),
    (
        "health",
        "Allergic to penicillin: rash and swelling in 2019.",
        "semantic",
        "core",
        C.RESTRICTED,
        300,
        12,
        ["allergy", "penicillin"],
    ),
    (
        "health",
        "Physio exercise: three sets of twelve calf raises, slow on the way down.",
        "procedural",
        "short_term",
        C.CONFIDENTIAL,
        14,
        4,
        ["physio", "calf"],
    ),
    (
        "languages",
        "Japanese: 食べる (taberu) means to eat; ichidan verb.",
        "semantic",
        "short_term",
        C.PUBLIC,
        3,
        1,
        ["japanese", "verbs"],
    ),
    (
        "languages",
        "German: der Schlüssel is the key; plural die Schlüssel.",
        "semantic",
        "short_term",
        C.PUBLIC,
        6,
        2,
        ["german", "nouns"],
    ),
    (
        "languages",
        "Spanish subjunctive follows ojalá: ojalá que llueva.",
        "semantic",
        "short_term",
        C.PUBLIC,
        11,
        0,
        ["spanish", "subjunctive"],
    ),
    (
        "languages",
        "French: « avoir le cafard » means to feel down.",
        "semantic",
        "short_term",
        C.PUBLIC,
        25,
        0,
        ["french", "idiom"],
    ),
    (
        "travel",
        "Lisbon trip: the 28 tram is crowded by 10am, ride it at 8.",
        "episodic",
        "short_term",
        C.INTERNAL,
        30,
        1,
        ["lisbon", "tram"],
    ),
    (
        "travel",
        "Passport expires in March 2029; renewal takes six weeks.",
        "semantic",
        "long_term",
        C.CONFIDENTIAL,
        60,
        5,
        ["passport"],
    ),
    (
        "travel",
        "Kyoto: Fushimi Inari is quiet before 7am; bring water for the climb.",
        "episodic",
        "short_term",
        C.PUBLIC,
        45,
        0,
        ["kyoto", "fushimi inari"],
    ),
    (
        "people",
        "Alice works with Bob on the payments migration.",
        "semantic",
        "short_term",
        C.INTERNAL,
        4,
        3,
        ["alice", "bob"],
    ),
    (
        "people",
        "Bob prefers written updates over meetings; send a summary on Fridays.",
        "semantic",
        "long_term",
        C.INTERNAL,
        50,
        6,
        ["bob", "communication"],
    ),
    (
        "people",
        "Carol's birthday is 14 June; she likes Earl Grey tea.",
        "semantic",
        "short_term",
        C.INTERNAL,
        70,
        2,
        ["carol", "birthday"],
    ),
    (
        "reading",
        "Thinking, Fast and Slow: System 1 is fast and intuitive, System 2 deliberate.",
        "semantic",
        "short_term",
        C.PUBLIC,
        18,
        1,
        ["kahneman"],
    ),
    (
        "reading",
        "Ebbinghaus found retention halves within a day without review.",
        "semantic",
        "short_term",
        C.PUBLIC,
        1,
        0,
        ["forgetting curve"],
    ),
    (
        "reading",
        "SM-2 was published by Piotr Wozniak in 1987 for SuperMemo.",
        "semantic",
        "short_term",
        C.PUBLIC,
        8,
        1,
        ["sm-2", "supermemo"],
    ),
]
AGENT = [
    (
        "project",
        "The project uses PostgreSQL 15 in production and SQLite for local runs.",
        "semantic",
        "long_term",
        C.INTERNAL,
        35,
        9,
        ["database", "postgresql"],
    ),
    (
        "project",
        "Deploys happen on Tuesdays after the 10:00 stand-up.",
        "procedural",
        "short_term",
        C.INTERNAL,
        12,
        3,
        ["deploy"],
    ),
    (
        "project",
        "Migrated the search index to SQLite FTS5 with the trigram tokenizer.",
        "episodic",
        "short_term",
        C.INTERNAL,
        7,
        2,
        ["fts5", "trigram"],
    ),
    (
        "project",
        "API rate limit is 120 requests per minute per token.",
        "semantic",
        "short_term",
        C.INTERNAL,
        2,
        1,
        ["rate limit"],
    ),
    (
        "project",
        "The staging database password rotates monthly; ask ops for the vault path.",
        "procedural",
        "short_term",
        C.RESTRICTED,
        16,
        0,
        ["staging", "secrets"],
    ),
    (
        "user",
        "User prefers concise answers with code examples in Python.",
        "semantic",
        "core",
        C.INTERNAL,
        90,
        25,
        ["preferences"],
    ),
    (
        "user",
        "User is based in Berlin (CET) and works 9:00 to 17:30.",
        "semantic",
        "long_term",
        C.CONFIDENTIAL,
        80,
        8,
        ["timezone", "berlin"],
    ),
    (
        "user",
        "User asked to be reminded about the quarterly report due 30 November.",
        "episodic",
        "short_term",
        C.INTERNAL,
        3,
        1,
        ["report", "deadline"],
    ),
    (
        "debugging",
        "Flaky test test_sync_retry was caused by a timezone-naive datetime.",
        "episodic",
        "short_term",
        C.INTERNAL,
        21,
        0,
        ["flaky", "timezone"],
    ),
    (
        "debugging",
        "psycopg3 needs the binary extra on machines without libpq headers.",
        "semantic",
        "short_term",
        C.PUBLIC,
        10,
        2,
        ["psycopg"],
    ),
    (
        "debugging",
        "Redis OOM on staging: maxmemory-policy was noeviction.",
        "episodic",
        "short_term",
        C.INTERNAL,
        28,
        0,
        ["redis", "oom"],
    ),
    (
        "meetings",
        "Design review on Thursday decided to keep one worker pool.",
        "episodic",
        "short_term",
        C.INTERNAL,
        5,
        1,
        ["design review"],
    ),
    (
        "meetings",
        "Retro: too many open issues at once; limit work in progress to three.",
        "episodic",
        "short_term",
        C.INTERNAL,
        19,
        0,
        ["retro"],
    ),
    (
        "meetings",
        "Alice will own the recall-quality evaluation from next sprint.",
        "episodic",
        "short_term",
        C.INTERNAL,
        1,
        0,
        ["alice", "evaluation"],
    ),
]
RELATIONS = [
    ("alice", "works_with", "bob"),
    ("bob", "prefers", "written updates"),
    ("alice", "owns", "recall evaluation"),
]


# Decay scores (seed 003) of the demo's short-term memories, in turn: forgetting is below
# 0.05, the review danger zone 0.15-0.35, promotion at 0.65.
SHORT_TERM_SCORES = (0.55, 0.25, 0.42, 0.18, 0.6, 0.3, 0.1, 0.48, 0.22, 0.35, 0.08, 0.5)


def _last_use_for(target: float, *, uses: int, strength: float, now, namespace) -> object:
    """The last use that gives a memory the decay score `target` now (the score falls as
    the last use recedes: bisection over a year)."""
    params = namespace.decay_params()
    early, late = 0.0, 365.0  # days ago
    for _ in range(40):
        middle = (early + late) / 2
        score = decay_score(
            use_count=uses,
            last_used_at=now - timedelta(days=middle),
            strength=strength,
            now=now,
            params=params,
        )
        early, late = (middle, late) if score > target else (early, middle)
    return now - timedelta(days=late)


class Command(BaseCommand):
    help = "Create the demo user and its namespaces with varied memories (idempotent)."

    def handle(self, *args, **options) -> None:
        password = os.environ.get("DEMO_PASSWORD", DEFAULT_PASSWORD)
        user, created = self._user(password)
        if created or not user.namespaces.exists():
            self._populate(user)
            self.stdout.write(self.style.SUCCESS("Demo data created."))
        else:
            self.stdout.write("Demo data already present; left as it is.")
        self.stdout.write(
            self.style.WARNING(f"Demo login: username '{DEMO_USERNAME}', password '{password}'")
        )

    def _user(self, password: str):
        User = get_user_model()
        user, created = User.objects.get_or_create(
            username=DEMO_USERNAME, defaults={"email": "demo@example.com"}
        )
        if created:
            user.set_password(password)
            user.save(update_fields=["password"])
        # The demo's password is published: it opens the dashboard, never the admin (an
        # account seeded before this rule is demoted). `manage.py createsuperuser` makes
        # an administrator.
        if user.is_staff or user.is_superuser:
            user.is_staff = user.is_superuser = False
            user.save(update_fields=["is_staff", "is_superuser"])
        return user, created

    @transaction.atomic
    def _populate(self, user) -> None:
        now = timezone.now()
        # Anki's SM-2 modifiers, so each button shows (and gives) its own interval.
        personal = services.namespace_create(
            owner=user, name="Personal", mode="personal", sm2_modifiers=True
        )
        agent = services.namespace_create(owner=user, name="agent-42", mode="agent_memory")
        made: dict[str, list[Memory]] = {}
        for namespace, rows in ((personal, PERSONAL), (agent, AGENT)):
            for index, (topic, content, mtype, tier, level, days, uses, keywords) in enumerate(
                rows
            ):
                created_at = now - timedelta(days=days, hours=index)
                memory = services.memory_create(
                    namespace=namespace,
                    content=content,
                    topic=topic,
                    memory_type=mtype,
                    tier=tier,
                    classification=level,
                    keywords=keywords,
                    created_at=created_at,
                    emotion_score=2.0 if topic == "health" else 0.0,
                    source="demo",
                )
                status = Memory.Status.ACTIVE if tier == "short_term" else Memory.Status.PROMOTED
                strength = 1.5 if tier == "core" else 1.0
                if tier == "short_term":
                    # A score chosen for each, between forgetting and promotion, so the
                    # worker's first sweep leaves them be (it forgot 9 and promoted 12 of
                    # 34 before a newcomer clicked anything): some in the review danger
                    # zone, some close to promotion, a few nearly gone.
                    target = SHORT_TERM_SCORES[index % len(SHORT_TERM_SCORES)]
                    last_used = _last_use_for(
                        target, uses=uses, strength=strength, now=now, namespace=namespace
                    )
                else:
                    last_used = now - timedelta(days=days / (uses + 1), hours=index % 5)
                first = min(created_at, last_used - timedelta(hours=1))
                Memory.objects.filter(pk=memory.pk).update(
                    status=status,
                    use_count=uses,
                    last_used_at=last_used,
                    created_at=first,
                    valid_from=first,
                    strength=strength,
                )
                made.setdefault(namespace.slug, []).append(memory)
        # A few were let go, with the reason a person gave.
        for memory, reason in (
            (made[personal.slug][-1], "No longer true: we changed the supplier."),
            (made[agent.slug][-1], "A one-off; not worth keeping."),
        ):
            memory.refresh_from_db()
            services.memory_forget(memory=memory, reason=reason, source="demo")
        self._cards(personal, made[personal.slug], now)
        self._cards(agent, made[agent.slug][:6], now)
        self._links(personal, made[personal.slug])
        self._links(agent, made[agent.slug])
        for namespace in (personal, agent):
            for subject, predicate, obj in RELATIONS:
                s, _ = Entity.objects.get_or_create(
                    namespace=namespace, name=subject, defaults={"kind": "person"}
                )
                o, _ = Entity.objects.get_or_create(namespace=namespace, name=obj)
                Relation.objects.get_or_create(
                    namespace=namespace, subject=s, predicate=predicate, object=o
                )

    def _cards(self, namespace: Namespace, memories: list[Memory], now) -> None:
        cards = []
        for index, memory in enumerate(memories):
            kind = index % 4  # due, due (overdue), new, scheduled later
            if kind == 2:
                cards.append(Card(memory=memory, namespace=namespace))
                continue
            offset = {0: -1, 1: -12, 3: 5}[kind]
            cards.append(
                Card(
                    memory=memory,
                    namespace=namespace,
                    easiness=2.5 - 0.1 * (index % 5),
                    interval_days=[1, 6, 15][index % 3],
                    repetitions=1 + index % 3,
                    next_review=now + timedelta(days=offset),
                    last_quality=4,
                    last_reviewed_at=now + timedelta(days=offset - 6),
                    total_reviews=1 + index % 3,
                    correct_reviews=1 + index % 3,
                )
            )
        # Personal memories already have a new card (created with the memory): upsert.
        Card.objects.bulk_create(
            cards,
            update_conflicts=True,
            unique_fields=["memory"],
            update_fields=[
                "easiness",
                "interval_days",
                "repetitions",
                "next_review",
                "last_quality",
                "last_reviewed_at",
                "total_reviews",
                "correct_reviews",
            ],
        )

    def _links(self, namespace: Namespace, memories: list[Memory]) -> None:
        by_topic: dict[str, list[Memory]] = {}
        for memory in memories:
            by_topic.setdefault(memory.topic, []).append(memory)
        links = [
            Association(namespace=namespace, source=group[i], target=group[i + 1], weight=0.6)
            for group in by_topic.values()
            for i in range(len(group) - 1)
        ]
        Association.objects.bulk_create(links)

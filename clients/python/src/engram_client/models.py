"""Typed results: one frozen dataclass per answer shape of the API.

Each is decoded from the JSON by `decode()`, which reads the fields the class declares and
keeps every other key in `extra`: a server that adds a field never breaks a client, and a
client that needs a field before its release reads it from `extra`. A field the class
requires but the answer lacks is an `EngramError` (the schema-agreement test keeps the
two in step, tests/clients/test_python_client.py).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Literal, TypedDict, TypeVar, Union

from engram_client.errors import EngramError

T = TypeVar("T")

Classification = Literal["public", "internal", "confidential", "restricted"]
Tier = Literal["short_term", "long_term", "core"]
MemoryType = Literal["episodic", "semantic", "procedural"]
Grade = int | Literal["again", "hard", "good", "easy"]


class MemoryFields(TypedDict, total=False):
    """The fields a caller may write on a memory, create or update (the API's
    MemoryCreateInput / MemoryUpdateInput); anything else is refused by the server."""

    content_original: str
    language: str
    keywords: list[str]
    topic: str
    cue: str
    memory_type: MemoryType
    tier: Tier
    classification: Classification
    strength: float
    utility: float
    confidence: float
    emotion_score: float
    emotion_tags: list[str]
    trust: float
    credibility: int
    relevance_score: float
    importance_flags: list[str]
    expires_at: datetime | None
    valid_until: datetime | None


class CreateFields(MemoryFields, total=False):
    """What only a create takes: the conversation, the time and what it replaces."""

    session_id: str
    position: int | None
    created_at: datetime
    valid_from: datetime
    supersedes: list[int]


class UpdateFields(MemoryFields, total=False):
    """A PATCH: every editable field, content included, each optional."""

    content: str


class NamespaceSettings(TypedDict, total=False):
    """A namespace's changeable settings (the API's NamespaceInput less name and slug)."""

    description: str
    mode: Literal["agent_memory", "personal", "knowledge_base"]
    weight_similarity: float | None
    weight_recency: float | None
    weight_utility: float | None
    weight_confidence: float | None
    decay_model: Literal["", "exponential", "power_law", "two_component"]
    decay_half_life_days: float | None
    decay_beta: float | None
    decay_power_alpha: float | None
    decay_fast_half_life_days: float | None
    decay_slow_half_life_days: float | None
    decay_fast_weight: float | None
    scheduler: Literal["sm2", "fsrs"]
    sm2_modifiers: bool
    desired_retention: float
    new_cards_per_day: int
    card_front: Literal["cloze", "first_line", "topic"]
    leech_threshold: int
    session_links: bool
    dedupe: Literal["exact", "near", "off"]
    decay_fit: Literal["off", "suggest", "auto"]


@dataclass(frozen=True)
class Memory:
    """A stored memory (MemoryOutput); `deduplicated` is set on writes only."""

    id: int
    namespace: str
    content: str
    content_original: str
    language: str
    keywords: list[str]
    topic: str
    cue: str
    memory_type: str
    tier: str
    storage: str
    status: str
    classification: str
    strength: float
    stability: float
    utility: float
    confidence: float
    emotion_score: float
    emotion_tags: list[str]
    trust: float
    credibility: int
    relevance_score: float
    importance_flags: list[str]
    use_count: int
    last_used_at: datetime
    access_count: int
    last_accessed_at: datetime | None
    recall_count: int
    last_recalled_at: datetime | None
    recall_timestamps: list[str]
    session_ids: list[str]
    session_id: str
    position: int | None
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    valid_from: datetime
    valid_until: datetime | None
    promoted_at: datetime | None
    forgotten_at: datetime | None
    forgotten_reason: str
    has_embedding: bool
    decay_score: float
    superseded: bool
    deduplicated: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Event:
    """One entry of a memory's history (EventOutput); before/after are redacted above the
    caller's ceiling."""

    id: int
    memory: int
    kind: str
    before: Any = None
    after: Any = None
    actor: str | None = None
    source: str = ""
    created_at: datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Association:
    """A weighted link between two memories of one namespace (AssociationOutput)."""

    id: int
    source: int
    target: int
    weight: float = 0.5
    kind: str = "related"
    created_at: datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Entity:
    """A named thing of the entity graph (EntityOutput); names are folded."""

    id: int
    namespace: str
    name: str
    display_name: str = ""
    kind: str = "thing"
    created_at: datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Reinforce:
    """A memory fading toward being forgotten, worth revisiting (ReinforceOutput): decay
    will forget it within FORGET_DIGEST_DAYS (`forget_at`), or its decay score is in the
    review danger zone."""

    memory: Memory
    score: float
    # When decay will forget it unless it is used (None: not within FORGET_DIGEST_DAYS).
    forget_at: datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Forgetting:
    """The about-to-forget digest (ForgettingOutput): how many memories decay will forget
    by `by` unless they are used, and the first of them, soonest first."""

    count: int
    days: int
    by: datetime
    memories: list[Reinforce]
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class ActionResult:
    """What an action on memories did (MemoryActionOutput): `changed` of `selected`."""

    action: str
    selected: int
    changed: int
    message: str
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Webhook:
    """A namespace's webhook subscription (SubscriptionOutput); `secret` only in the answer
    that created it (verify deliveries with the standardwebhooks library)."""

    id: int
    namespace: str
    url: str
    events: list[str]
    ceiling: str
    enabled: bool = True
    description: str = ""
    consecutive_failures: int = 0
    disabled_reason: str = ""
    disabled_at: datetime | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    secret: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class WebhookDelivery:
    """One delivery of the log (DeliveryOutput)."""

    id: int
    event_type: str
    webhook_id: str
    status: str = "pending"
    attempts: int = 0
    memory_ref: int | None = None
    last_response_code: int | None = None
    last_duration_ms: int | None = None
    last_error: str = ""
    next_attempt_at: datetime | None = None
    last_attempt_at: datetime | None = None
    delivered_at: datetime | None = None
    created_at: datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


class WebhookFields(TypedDict, total=False):
    """What a subscription's create or update may set."""

    url: str
    description: str
    events: list[str]
    ceiling: Classification
    enabled: bool


@dataclass(frozen=True)
class Relation:
    """subject -[predicate]-> object (RelationOutput)."""

    id: int
    namespace: str
    subject: str
    predicate: str
    object: str
    memory: int | None = None
    weight: float = 0.6
    created_at: datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Consolidation:
    """A digest of a period's memories (ConsolidationOutput)."""

    id: int
    namespace: str
    period: str
    period_start: date
    text: str
    topic: str = ""
    memory_ids: Any = None
    created_at: datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Namespace:
    """A namespace and its settings (NamespaceOutput); the rest of the settings in
    `extra`."""

    id: int
    name: str
    slug: str
    weights: dict[str, float]
    memory_count: int | None
    description: str = ""
    mode: str = ""
    scheduler: str = ""
    dedupe: str = ""
    session_links: bool = True
    created_at: datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class DecayFit:
    """One fit of a namespace's decay to its uses (DecayFitOutput): the parameters, the
    data it learnt from, the validation log loss of the fit and of the constants, whether
    it was accepted and whether it decides the namespace's decay now (`applied`)."""

    id: int
    model: str
    half_life_days: float
    beta: float
    rate: float
    applied: bool
    accepted: bool = False
    reason: str = ""
    validation_loss: float | None = None
    default_validation_loss: float | None = None
    n_memories: int = 0
    n_uses_train: int = 0
    n_uses_validation: int = 0
    trigger: str = ""
    created_at: datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class RecallHit:
    """One memory of a recall, with how it got there (docs/recall.md)."""

    memory_id: int
    namespace: str
    content: str
    score: float
    raw_score: float
    stages: list[str]
    associative: bool
    review: bool
    metadata: dict[str, Any]
    explanation: dict[str, Any]
    timeline: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    duplicates: list[int] = field(default_factory=list)
    kind: str = "memory"
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class RecallRelation:
    """A relation of the entity graph the query named."""

    relation_id: int
    subject: str
    predicate: str
    object: str
    text: str
    score: float
    entity: str = ""
    memory_id: int | None = None
    kind: str = "relation"
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class RecallDigest:
    """A digest paragraph that mentions a query keyword."""

    consolidation_id: int
    period: str
    period_start: str
    text: str
    score: float
    topic: str = ""
    memory_ids: list[int] = field(default_factory=list)
    kind: str = "consolidation"
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class RecallResult:
    """The answer of POST /recall (RecallOutput)."""

    query: str
    results: list[RecallHit]
    digests: list[RecallDigest]
    relations: list[RecallRelation]
    stage_timings: dict[str, Any]
    warnings: list[str]
    candidates: int
    duration_ms: float
    event_id: int | None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Card:
    """A review card with the interval each button would give (CardOutput)."""

    id: int
    memory: int
    deck: str
    cue: str
    content: str
    is_new: bool
    next_review: datetime | None
    easiness: float
    interval_days: int
    repetitions: int
    version: int
    priority: float | None
    preview: dict[str, float]
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class ReviewQueue:
    """Today's due cards by priority, then new ones within the daily limit (QueueOutput)."""

    namespace: str
    due: list[Card]
    new: list[Card]
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class ReviewLog:
    """One grade of a card, with the scheduling state before and after (LogOutput)."""

    id: int
    card: int
    grade: int
    source: str
    reviewed_at: datetime
    state_before: dict[str, Any]
    state_after: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class ReviewStats:
    """Cards, retention, streak and forecast (StatsOutput)."""

    total: int
    due_today: int
    learned: int
    new: int
    new_available_today: int
    reviews: int
    retention: float | None
    reviews_last_30_days: int
    retention_last_30_days: float | None
    streak: int
    reviews_per_day: list[dict[str, Any]]
    forecast: list[dict[str, Any]]
    decks: list[dict[str, Any]]
    # Grades that were not the person's (the simulated worker's, agents' implicit ones):
    # {"simulated", "implicit", "today"}; not counted in the figures above.
    agent_reinforcement: dict[str, int] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class CardState:
    """A card's suspension, burial and leech state (CardStateOutput)."""

    id: int
    memory: int
    suspended_at: datetime | None
    buried_until: datetime | None
    lapses: int
    leech: bool
    next_review: datetime | None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Deck:
    """One deck (a topic; "" the untopiced memories) with its counts (DeckOutput)."""

    deck: str
    total: int
    due_today: int
    new: int
    new_available_today: int
    new_cards_per_day: int  # the limit in force
    own_new_cards_per_day: int | None  # the deck's own; None: it inherits the namespace's
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Decks:
    """A namespace's decks and its new cards per day (DeckListOutput)."""

    namespace: str
    namespace_new_cards_per_day: int
    decks: list[Deck]
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Optimization:
    """A namespace's FSRS parameters (None: fsrs's defaults), the caller's reviews a fit
    would learn from, and the last fit as a dict (status, figures before and after;
    OptimizeOutput, docs/review.md)."""

    namespace: str
    parameters: list[float] | None
    reviews: int
    min_reviews: int
    fit: dict[str, Any] | None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class StudySession:
    """A study or cram session as this caller may see it (SessionOutput)."""

    id: int
    mode: str
    status: str
    deck: str | None
    total: int
    done: int
    remaining: int
    next_card: Card | None
    score: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class ImportResult:
    """A finished import: rows written per kind and the old -> new memory ids."""

    counts: dict[str, int]
    memory_ids: dict[int, int]
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class ImportJob:
    """A large import the worker runs: `running`, then `ok` (with `result`) or `failed`
    (with `error`, the API's error shape)."""

    job: int
    status: str
    url: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    counts: dict[str, int] | None = None
    memory_ids: dict[str, int] | None = None
    error: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def result(self) -> ImportResult | None:
        """The finished import's counts and id map, as a small import answers them."""
        if self.status != "ok":
            return None
        ids = {int(old): new for old, new in (self.memory_ids or {}).items()}
        return ImportResult(counts=dict(self.counts or {}), memory_ids=ids)


@dataclass(frozen=True)
class Page(typing.Generic[T]):
    """One page of a cursor-paginated list; `next` is the URL of the following page."""

    results: list[T]
    next: str | None
    previous: str | None


def _parse_datetime(value: str) -> datetime:
    # fromisoformat reads "Z" only from Python 3.11 on.
    return datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _convert(kind: Any, value: Any) -> Any:
    """The JSON value as `kind`: datetimes and dates parsed, nested results decoded;
    anything else as the JSON has it (no coercion: the server's types are the truth)."""
    if value is None:
        return None
    origin = typing.get_origin(kind)
    if origin in (Union, types.UnionType):
        options = [arg for arg in typing.get_args(kind) if arg is not type(None)]
        return _convert(options[0], value) if len(options) == 1 else value
    if kind is datetime and isinstance(value, str):
        return _parse_datetime(value)
    if kind is date and isinstance(value, str):
        return date.fromisoformat(value)
    if dataclasses.is_dataclass(kind) and isinstance(value, dict):
        return decode(kind, value)
    if origin is list and isinstance(value, list):
        (item,) = typing.get_args(kind) or (Any,)
        return [_convert(item, element) for element in value]
    return value


def decode(cls: type[T], data: Any) -> T:
    """An instance of the result class `cls` from the JSON object `data`; unknown keys go
    to `extra`."""
    if not isinstance(data, dict):
        raise EngramError(f"Expected a JSON object for {cls.__name__}, got {type(data).__name__}.")
    hints = _hints(cls)
    known: dict[str, Any] = {}
    for spec in dataclasses.fields(cls):  # type: ignore[arg-type]
        if spec.name == "extra":
            continue
        if spec.name in data:
            known[spec.name] = _convert(hints[spec.name], data[spec.name])
        elif spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
            raise EngramError(f"The server's {cls.__name__} lacks the field {spec.name!r}.")
    extra = {key: value for key, value in data.items() if key not in known}
    if "extra" in {spec.name for spec in dataclasses.fields(cls)}:  # type: ignore[arg-type]
        known["extra"] = extra
    return cls(**known)

"""Review endpoints: due queue, grading and undo, study sessions, cram, statistics, and FSRS
parameters fitted to the person's reviews.

Every card and session is looked up inside the caller's scope (namespaces and ceiling),
so anything else answers 404. Views validate, call one service, serialize.
"""

from __future__ import annotations

import zoneinfo
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.serializers import (
    StrictBooleanField,
    StrictCharField,
    StrictDateTimeField,
    StrictIntegerField,
    StrictSerializer,
    StrictSlugField,
    request_body,
    require_no_body,
)
from memories.auth import Scope
from memories.models import Classification, Memory, Namespace
from review import optimizer, selectors, services
from review.models import MAX_DURATION_MS, Card, StudySession, reviewable_q
from review.selectors.cards import fsrs_parameters_in_use
from review.sm2 import Button

BUTTONS = {"again": Button.AGAIN, "hard": Button.HARD, "good": Button.GOOD, "easy": Button.EASY}


@extend_schema_field(
    {
        "oneOf": [
            {"type": "integer", "minimum": 0, "maximum": 5},
            {"type": "string", "enum": list(BUTTONS)},
        ]
    }
)
class GradeField(serializers.Field):
    """A grade 0-5 or one of again/hard/good/easy (1/3/4/5)."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, str) and data.lower() in BUTTONS:
            return int(BUTTONS[data.lower()])
        if isinstance(data, bool) or not isinstance(data, int) or not 0 <= data <= 5:
            raise serializers.ValidationError(
                "A grade is an integer 0-5 or one of again, hard, good, easy."
            )
        return data

    def to_representation(self, value: int) -> int:
        return value


def _tz(raw: str | None) -> zoneinfo.ZoneInfo:
    name = raw or settings.TIME_ZONE
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise serializers.ValidationError({"tz": [f"Unknown time zone {name!r}."]}) from None


# A deck is a memory topic, and the empty topic is a deck too ("(no topic)", listed by
# GET /review/decks): "" names it; omitting the field means every deck.
DECK_HELP = 'A topic; "" is the deck of memories without a topic. Omitted: every deck.'


class QueueQuery(StrictSerializer):
    namespace = serializers.SlugField()
    deck = serializers.CharField(
        required=False, max_length=100, allow_blank=True, help_text=DECK_HELP
    )
    limit = serializers.IntegerField(required=False, min_value=1, max_value=500, default=50)
    tz = serializers.CharField(required=False, max_length=64, help_text="IANA time zone.")


class StatsQuery(StrictSerializer):
    namespace = serializers.SlugField()
    deck = serializers.CharField(
        required=False, max_length=100, allow_blank=True, help_text=DECK_HELP
    )
    tz = serializers.CharField(required=False, max_length=64)


class GradeInput(StrictSerializer):
    grade = GradeField()
    version = StrictIntegerField(
        required=False, min_value=0, help_text="The card version you read; a stale one is a 409."
    )
    duration_ms = StrictIntegerField(
        required=False,
        min_value=0,
        max_value=MAX_DURATION_MS,
        help_text="How long the person took to answer, in ms (shown the card to the grade).",
    )


class SessionStartInput(StrictSerializer):
    namespace = StrictSlugField()
    deck = StrictCharField(required=False, max_length=100, allow_blank=True, help_text=DECK_HELP)
    limit = StrictIntegerField(required=False, min_value=1, max_value=500, default=100)
    tz = StrictCharField(required=False, max_length=64)


class SessionGradeInput(GradeInput):
    card = StrictIntegerField(min_value=1)


class CramStartInput(StrictSerializer):
    namespace = StrictSlugField()
    deck = StrictCharField(required=False, max_length=100, allow_blank=True, help_text=DECK_HELP)
    cards = serializers.ListField(
        child=StrictIntegerField(min_value=1), required=False, max_length=1000
    )
    seed = StrictIntegerField(required=False)


class CramAnswerInput(StrictSerializer):
    card = StrictIntegerField(min_value=1)
    correct = StrictBooleanField()


class CardOutput(serializers.Serializer):
    id = serializers.IntegerField()
    memory = serializers.IntegerField()
    deck = serializers.CharField()
    cue = serializers.CharField(
        help_text="The question: the memory's cue, else its front by the namespace's "
        "card_front (a cloze shows each hidden word as […])."
    )
    front = serializers.ChoiceField(
        choices=["cue", "cloze", "first_line", "topic"], help_text="Which kind of front."
    )
    answers = serializers.ListField(
        child=serializers.CharField(), help_text="A cloze's hidden words, in text order."
    )
    content = serializers.CharField()
    is_new = serializers.BooleanField()
    next_review = serializers.DateTimeField(allow_null=True)
    easiness = serializers.FloatField()
    interval_days = serializers.IntegerField()
    repetitions = serializers.IntegerField()
    version = serializers.IntegerField()
    priority = serializers.FloatField(allow_null=True)
    preview = serializers.DictField(
        child=serializers.FloatField(), help_text="Days until the next review for each button."
    )


class QueueOutput(serializers.Serializer):
    namespace = serializers.CharField()
    due = CardOutput(many=True)
    new = CardOutput(many=True)


class LogOutput(serializers.Serializer):
    id = serializers.IntegerField()
    card = serializers.IntegerField(source="card_id")
    grade = serializers.IntegerField()
    source = serializers.CharField()
    reviewed_at = serializers.DateTimeField()
    duration_ms = serializers.IntegerField(allow_null=True)
    state_before = serializers.DictField()
    state_after = serializers.DictField()


class SessionOutput(serializers.Serializer):
    id = serializers.IntegerField()
    mode = serializers.CharField()
    status = serializers.CharField(
        help_text="`finished` once the session ended or no card you may see is left in it."
    )
    deck = serializers.CharField(allow_null=True)
    total = serializers.IntegerField(
        help_text="Cards you can study now (live, current memories within your ceiling, not "
        "suspended or buried); counts, scores and next_card cover only them."
    )
    done = serializers.IntegerField()
    remaining = serializers.IntegerField()
    new = serializers.IntegerField(help_text="Cards left never graded, new.")
    learning = serializers.IntegerField(
        help_text="Cards left that come back in this session: a learning step or a repeat."
    )
    review = serializers.IntegerField(help_text="Due reviews left, not graded yet.")
    waiting_until = serializers.DateTimeField(
        allow_null=True,
        help_text="Set when every card left waits for a learning step: when the first is due "
        "(next_card is null until then).",
    )
    next_card = CardOutput(allow_null=True)
    score = serializers.DictField(required=False)


class SessionStartOutput(SessionOutput):
    resumed = serializers.BooleanField(
        help_text="True (status 200): your open session of this namespace and deck started "
        "today, picked up as it stands (limit unused); false (201): a new session."
    )


class AgentReinforcementOutput(serializers.Serializer):
    simulated = serializers.IntegerField(help_text="The simulated recall worker's grades")
    implicit = serializers.IntegerField(help_text="Agents' recalls of due memories")
    today = serializers.IntegerField(help_text="Both sources, today in tz")


class StatsOutput(serializers.Serializer):
    total = serializers.IntegerField()
    due_today = serializers.IntegerField()
    learned = serializers.IntegerField()
    new = serializers.IntegerField()
    new_available_today = serializers.IntegerField()
    reviews = serializers.IntegerField()
    retention = serializers.FloatField(allow_null=True)
    reviews_last_30_days = serializers.IntegerField()
    retention_last_30_days = serializers.FloatField(allow_null=True)
    streak = serializers.IntegerField()
    reviews_per_day = serializers.ListField(child=serializers.DictField())
    forecast = serializers.ListField(child=serializers.DictField())
    decks = serializers.ListField(child=serializers.DictField())
    agent_reinforcement = AgentReinforcementOutput(
        help_text="Grades that were not the person's (not counted in the figures above)"
    )
    average_answer_ms = serializers.FloatField(
        allow_null=True,
        help_text="Mean answer time of the person's timed grades, in ms (null: none timed)",
    )
    timed_reviews = serializers.IntegerField(help_text="The person's grades with an answer time")
    time_today_ms = serializers.IntegerField(
        allow_null=True, help_text="Total answer time today in tz, in ms (null: none timed)"
    )


def _days(delta: timedelta) -> float:
    return round(delta.total_seconds() / 86400, 4)


def card_payload(
    card: Card, namespace: Namespace, *, priority: float | None = None, now=None
) -> dict[str, Any]:
    """What a client needs to show a card and its four buttons."""
    now = now or timezone.now()
    state = selectors.card_state(card)
    preview = selectors.scheduler_for(namespace).preview(state, now=now)
    memory: Memory = card.memory
    front = selectors.card_front(memory, namespace)
    return {
        "id": card.pk,
        "memory": card.memory_id,
        "deck": memory.topic,
        "cue": front.question,
        "front": front.kind,
        "answers": front.answers,
        "content": memory.content,
        "is_new": card.next_review is None,
        "next_review": card.next_review,
        "easiness": card.easiness,
        "interval_days": card.interval_days,
        "repetitions": card.repetitions,
        "version": card.version,
        "priority": priority,
        "preview": {button.name.lower(): _days(delta) for button, delta in preview.items()},
    }


def _card(scope: Scope, pk: int) -> Card:
    return get_object_or_404(
        Card.objects.filter(namespace_id__in=scope.namespace_ids)
        .reviewable(scope.ceiling)
        .select_related("memory", "namespace"),
        pk=pk,
    )


def _session(scope: Scope, pk: int, mode: str) -> StudySession:
    return get_object_or_404(
        selectors.study_sessions_visible(ceiling=scope.ceiling)
        .filter(namespace_id__in=scope.namespace_ids, mode=mode)
        .select_related("namespace"),
        pk=pk,
    )


def _session_payload(session: StudySession, scope: Scope) -> dict[str, Any]:
    """The session as this caller may see it: cards above its ceiling (or of memories no
    longer live) neither show nor count, and once only such cards are left the session is
    finished for this caller, whatever it is for the one who started it."""
    progress = selectors.study_session_progress(session=session, ceiling=scope.ceiling)
    item = progress.next_item
    payload = {
        "id": session.pk,
        "mode": session.mode,
        "status": StudySession.Status.FINISHED if progress.finished else session.status,
        "deck": session.deck,
        "total": progress.total,
        "done": progress.done,
        "remaining": progress.remaining,
        "new": progress.new,
        "learning": progress.learning,
        "review": progress.review,
        "waiting_until": progress.waiting_until,
        "next_card": None if item is None else card_payload(item.card, session.namespace),
    }
    if session.mode == StudySession.Mode.CRAM:
        score = selectors.cram_score(session=session, ceiling=scope.ceiling)
        payload["score"] = {
            "correct": score.overall.correct,
            "answered": score.overall.answered,
            "total": score.overall.total,
            "decks": {
                deck: {"correct": s.correct, "answered": s.answered, "total": s.total}
                for deck, s in score.decks.items()
            },
        }
    return payload


class QueueView(APIView):
    @extend_schema(
        parameters=[QueueQuery],
        responses=QueueOutput,
        tags=["review"],
        summary="Today's due cards by priority, then new cards within the daily limit",
    )
    def get(self, request: Request) -> Response:
        scope = Scope.of(request)
        query = QueueQuery(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        q = query.validated_data
        namespace = scope.namespace(q["namespace"])
        now = timezone.now()
        queue = selectors.review_queue(
            namespace=namespace,
            tz=_tz(q.get("tz")),
            now=now,
            deck=q.get("deck"),
            limit=q["limit"],
            ceiling=scope.ceiling,
        )
        cards = Card.objects.select_related("memory").in_bulk(
            [item.card_id for item in queue.items]
        )
        return Response(
            {
                "namespace": namespace.slug,
                "due": [
                    card_payload(cards[i.card_id], namespace, priority=i.priority, now=now)
                    for i in queue.due
                ],
                "new": [card_payload(cards[i.card_id], namespace, now=now) for i in queue.new],
            }
        )


class CardGradeView(APIView):
    @extend_schema(
        request=GradeInput,
        responses={201: LogOutput},
        tags=["review"],
        summary="Grade a card (0-5 or again/hard/good/easy); a stale version answers 409",
        examples=[OpenApiExample("Good", request_only=True, value={"grade": "good", "version": 3})],
    )
    def post(self, request: Request, pk: int) -> Response:
        scope = Scope.of(request)
        card = _card(scope, pk)
        data = GradeInput(data=request.data)
        data.is_valid(raise_exception=True)
        log = services.card_grade(
            card=card,
            grade=data.validated_data["grade"],
            source="human",
            user=request.user,
            expected_version=data.validated_data.get("version"),
            duration_ms=data.validated_data.get("duration_ms"),
        )
        return Response(LogOutput(log).data, status=status.HTTP_201_CREATED)


class CardStateOutput(serializers.Serializer):
    id = serializers.IntegerField()
    memory = serializers.IntegerField(source="memory_id")
    suspended_at = serializers.DateTimeField(
        allow_null=True, help_text="Set while the card is suspended: review never shows it."
    )
    buried_until = serializers.DateTimeField(
        allow_null=True, help_text="Review does not show the card before this moment."
    )
    lapses = serializers.IntegerField(help_text="Failing grades after the card was learned.")
    leech = serializers.BooleanField(
        help_text="Lapsed the namespace's leech_threshold times: suspended, to be rewritten."
    )
    next_review = serializers.DateTimeField(allow_null=True)


class BuryInput(StrictSerializer):
    until = StrictDateTimeField(
        required=False, help_text="When the card may come back; default: the start of tomorrow."
    )
    tz = StrictCharField(required=False, max_length=64, help_text="IANA time zone of 'tomorrow'.")


class UnsuspendInput(StrictSerializer):
    clear_leech = StrictBooleanField(
        required=False,
        default=False,
        help_text="Also drop the leech tag and its lapses (after rewriting the memory).",
    )


def _card_any_state(scope: Scope, pk: int) -> Card:
    """A card _card would answer, suspended or buried as well (reviewable() leaves those
    out, and they are what these routes act on, undo too: the grade that made a leech
    suspended it). A superseded memory's card answers 404 on every card route."""
    return get_object_or_404(
        Card.objects.filter(namespace_id__in=scope.namespace_ids)
        .filter(reviewable_q(now=timezone.now(), ceiling=scope.ceiling, set_aside=True))
        .select_related("memory", "namespace"),
        pk=pk,
    )


def _card_state_response(card: Card) -> Response:
    card.refresh_from_db()
    return Response(CardStateOutput(card).data)


class CardSuspendView(APIView):
    @extend_schema(
        request=None,
        responses=CardStateOutput,
        tags=["review"],
        summary="Suspend a card: review never shows it until it is unsuspended",
    )
    def post(self, request: Request, pk: int) -> Response:
        require_no_body(request)
        card = _card_any_state(Scope.of(request), pk)
        services.cards_suspend(memories=Memory.objects.filter(pk=card.memory_id))
        return _card_state_response(card)

    @extend_schema(
        request=UnsuspendInput,
        responses={200: CardStateOutput},
        tags=["review"],
        summary="Unsuspend a card (clear_leech: also drop its leech tag and lapses)",
    )
    def delete(self, request: Request, pk: int) -> Response:
        data = UnsuspendInput(data=request_body(request))
        data.is_valid(raise_exception=True)
        card = _card_any_state(Scope.of(request), pk)
        services.cards_unsuspend(
            memories=Memory.objects.filter(pk=card.memory_id),
            clear_leech=data.validated_data["clear_leech"],
        )
        return _card_state_response(card)


class CardBuryView(APIView):
    @extend_schema(
        request=BuryInput,
        responses=CardStateOutput,
        tags=["review"],
        summary="Bury a card until tomorrow (or `until`): review leaves it out until then",
    )
    def post(self, request: Request, pk: int) -> Response:
        data = BuryInput(data=request_body(request))
        data.is_valid(raise_exception=True)
        card = _card_any_state(Scope.of(request), pk)
        now = timezone.now()
        until = data.validated_data.get("until")
        if until is None:
            _, until = selectors.local_day_bounds(_tz(data.validated_data.get("tz")), now)
        elif until <= now:
            raise serializers.ValidationError({"until": ["Must be in the future."]})
        services.cards_bury(memories=Memory.objects.filter(pk=card.memory_id), until=until)
        return _card_state_response(card)

    @extend_schema(
        request=None, responses={200: CardStateOutput}, tags=["review"], summary="Unbury a card now"
    )
    def delete(self, request: Request, pk: int) -> Response:
        require_no_body(request)
        card = _card_any_state(Scope.of(request), pk)
        services.cards_unbury(memories=Memory.objects.filter(pk=card.memory_id))
        return _card_state_response(card)


class CardUndoView(APIView):
    @extend_schema(
        request=None,
        responses=LogOutput,
        tags=["review"],
        summary="Undo the card's last grade (409 if nothing to undo)",
    )
    def post(self, request: Request, pk: int) -> Response:
        require_no_body(request)
        card = _card_any_state(Scope.of(request), pk)
        log = services.card_undo(card=card, user=request.user)
        return Response(LogOutput(log).data)


class SessionStartView(APIView):
    @extend_schema(
        request=SessionStartInput,
        responses={201: SessionStartOutput, 200: SessionStartOutput},
        tags=["review"],
        summary="Start a study session over today's queue (all decks or one), or pick up "
        "the open one",
    )
    def post(self, request: Request) -> Response:
        scope = Scope.of(request)
        data = SessionStartInput(data=request.data)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        session, resumed = services.study_session_begin(
            namespace=scope.namespace(d["namespace"]),
            tz=_tz(d.get("tz")),
            user=request.user,
            deck=d.get("deck"),
            limit=d["limit"],
            ceiling=scope.ceiling,
        )
        # The open session of this scope started today is picked up (200, resumed), as
        # the dashboard's "Study all" does; a new one is a 201.
        return Response(
            {**_session_payload(session, scope), "resumed": resumed},
            status=status.HTTP_200_OK if resumed else status.HTTP_201_CREATED,
        )


class SessionDetailView(APIView):
    @extend_schema(
        responses=SessionOutput,
        tags=["review"],
        summary="A study session's progress and next card (to resume it)",
    )
    def get(self, request: Request, pk: int) -> Response:
        scope = Scope.of(request)
        return Response(_session_payload(_session(scope, pk, StudySession.Mode.STUDY), scope))


class SessionGradeView(APIView):
    @extend_schema(
        request=SessionGradeInput,
        responses=SessionOutput,
        tags=["review"],
        summary="Grade a card in a session; below 4, or in a learning step, it comes back",
    )
    def post(self, request: Request, pk: int) -> Response:
        scope = Scope.of(request)
        session = _session(scope, pk, StudySession.Mode.STUDY)
        data = SessionGradeInput(data=request.data)
        data.is_valid(raise_exception=True)
        card = _card(scope, data.validated_data["card"])
        services.study_session_grade(
            session=session,
            card=card,
            grade=data.validated_data["grade"],
            user=request.user,
            expected_version=data.validated_data.get("version"),
            duration_ms=data.validated_data.get("duration_ms"),
        )
        session.refresh_from_db()
        return Response(_session_payload(session, scope))


class SessionFinishView(APIView):
    @extend_schema(
        request=None, responses=SessionOutput, tags=["review"], summary="Finish a study session now"
    )
    def post(self, request: Request, pk: int) -> Response:
        require_no_body(request)
        scope = Scope.of(request)
        session = services.study_session_finish(
            session=_session(scope, pk, StudySession.Mode.STUDY)
        )
        return Response(_session_payload(session, scope))


class CramStartView(APIView):
    @extend_schema(
        request=CramStartInput,
        responses={201: SessionOutput},
        tags=["review"],
        summary="Cram a deck or chosen cards in random order; nothing is rescheduled",
    )
    def post(self, request: Request) -> Response:
        scope = Scope.of(request)
        data = CramStartInput(data=request.data)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        session = services.cram_start(
            namespace=scope.namespace(d["namespace"]),
            user=request.user,
            deck=d.get("deck"),
            card_ids=d.get("cards"),
            seed=d.get("seed"),
            ceiling=scope.ceiling,
        )
        return Response(_session_payload(session, scope), status=status.HTTP_201_CREATED)


class CramDetailView(APIView):
    @extend_schema(responses=SessionOutput, tags=["review"], summary="A cram session")
    def get(self, request: Request, pk: int) -> Response:
        scope = Scope.of(request)
        return Response(_session_payload(_session(scope, pk, StudySession.Mode.CRAM), scope))


class CramAnswerView(APIView):
    @extend_schema(
        request=CramAnswerInput,
        responses=SessionOutput,
        tags=["review"],
        summary="Record correct or incorrect for a cram card",
    )
    def post(self, request: Request, pk: int) -> Response:
        scope = Scope.of(request)
        session = _session(scope, pk, StudySession.Mode.CRAM)
        data = CramAnswerInput(data=request.data)
        data.is_valid(raise_exception=True)
        card = _card(scope, data.validated_data["card"])
        services.cram_answer(session=session, card=card, correct=data.validated_data["correct"])
        session.refresh_from_db()
        return Response(_session_payload(session, scope))


class CramFinishView(APIView):
    @extend_schema(
        request=None,
        responses=SessionOutput,
        tags=["review"],
        summary="Finish a cram session and get its score (X/Y, per deck)",
    )
    def post(self, request: Request, pk: int) -> Response:
        require_no_body(request)
        scope = Scope.of(request)
        session = _session(scope, pk, StudySession.Mode.CRAM)
        services.cram_finish(session=session, ceiling=scope.ceiling)
        session.refresh_from_db()
        return Response(_session_payload(session, scope))


class StatsView(APIView):
    @extend_schema(
        parameters=[StatsQuery],
        responses=StatsOutput,
        tags=["review"],
        summary="Cards, the person's reviews, retention, streak and reviews per day, agent "
        "reinforcement apart, and the 14-day forecast",
    )
    def get(self, request: Request) -> Response:
        scope = Scope.of(request)
        query = StatsQuery(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        q = query.validated_data
        namespace = scope.namespace(q["namespace"])
        tz = _tz(q.get("tz"))
        stats = selectors.review_statistics(
            namespace=namespace, tz=tz, deck=q.get("deck"), ceiling=scope.ceiling
        )
        decks = selectors.deck_statistics(namespace=namespace, tz=tz, ceiling=scope.ceiling)
        c = stats.cards
        return Response(
            {
                "total": c.total,
                "due_today": c.due_today,
                "learned": c.learned,
                "new": c.new,
                "new_available_today": c.new_available_today,
                "reviews": stats.reviews,
                "retention": stats.retention,
                "reviews_last_30_days": stats.reviews_last_30_days,
                "retention_last_30_days": stats.retention_last_30_days,
                "streak": stats.streak,
                "reviews_per_day": [
                    {"date": d.isoformat(), "reviews": n, "time_ms": ms}
                    for (d, n), (_, ms) in zip(
                        stats.reviews_per_day, stats.time_per_day, strict=True
                    )
                ],
                "forecast": [{"date": d.isoformat(), "due": n} for d, n in stats.forecast],
                "agent_reinforcement": {
                    "simulated": stats.agent_reinforcement.simulated,
                    "implicit": stats.agent_reinforcement.implicit,
                    "today": stats.agent_reinforcement.today,
                },
                "average_answer_ms": stats.average_answer_ms,
                "timed_reviews": stats.timed_reviews,
                "time_today_ms": stats.time_today_ms,
                "decks": [
                    {
                        "deck": s.deck,
                        "total": s.total,
                        "due_today": s.due_today,
                        "learned": s.learned,
                        "new": s.new,
                        "new_available_today": s.new_available_today,
                    }
                    for s in decks
                ],
            }
        )


# --- Deck options (review.services.decks) ------------------------------------------------


class DecksQuery(StrictSerializer):
    namespace = serializers.SlugField()
    tz = serializers.CharField(required=False, max_length=64)


class DeckOptionsInput(StrictSerializer):
    namespace = StrictSlugField()
    deck = StrictCharField(
        max_length=100, allow_blank=True, help_text='A topic; "" is the deck of untopiced memories.'
    )
    new_cards_per_day = StrictIntegerField(
        min_value=0,
        max_value=services.MAX_NEW_CARDS_PER_DAY,
        allow_null=True,
        help_text="The deck's own limit; null inherits the namespace's.",
    )
    tz = serializers.CharField(
        required=False, max_length=64, help_text="For the answer's new_available_today"
    )


class DeckOutput(serializers.Serializer):
    deck = serializers.CharField()
    total = serializers.IntegerField()
    due_today = serializers.IntegerField()
    new = serializers.IntegerField()
    new_available_today = serializers.IntegerField()
    new_cards_per_day = serializers.IntegerField(help_text="The limit in force for this deck")
    own_new_cards_per_day = serializers.IntegerField(
        allow_null=True, help_text="The deck's own option; null when it inherits"
    )


class DeckListOutput(serializers.Serializer):
    namespace = serializers.SlugField()
    namespace_new_cards_per_day = serializers.IntegerField()
    decks = DeckOutput(many=True)


def _decks_payload(namespace: Namespace, scope: Scope, tz: zoneinfo.ZoneInfo) -> dict[str, Any]:
    """Every deck the caller can see (its cards within the ceiling) with its limit."""
    limits = selectors.new_card_limits(namespace)
    decks = selectors.deck_statistics(namespace=namespace, tz=tz, ceiling=scope.ceiling)
    return {
        "namespace": namespace.slug,
        "namespace_new_cards_per_day": limits.default,
        "decks": [
            {
                "deck": d.deck,
                "total": d.total,
                "due_today": d.due_today,
                "new": d.new,
                "new_available_today": d.new_available_today,
                "new_cards_per_day": limits.of(d.deck),
                "own_new_cards_per_day": limits.decks.get(d.deck),
            }
            for d in decks
        ],
    }


class DecksView(APIView):
    @extend_schema(
        parameters=[DecksQuery],
        responses=DeckListOutput,
        tags=["review"],
        summary="The namespace's decks with their new cards per day (own or inherited)",
    )
    def get(self, request: Request) -> Response:
        scope = Scope.of(request)
        query = DecksQuery(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        namespace = scope.namespace(query.validated_data["namespace"])
        return Response(_decks_payload(namespace, scope, _tz(query.validated_data.get("tz"))))

    @extend_schema(
        request=DeckOptionsInput,
        responses=DeckListOutput,
        tags=["review"],
        summary="Set a deck's new cards per day (null: inherit the namespace's)",
    )
    def put(self, request: Request) -> Response:
        scope = Scope.of(request)
        data = DeckOptionsInput(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        namespace = scope.namespace(v["namespace"])
        services.deck_options_set(
            namespace=namespace, deck=v["deck"], new_cards_per_day=v["new_cards_per_day"]
        )
        return Response(_decks_payload(namespace, scope, _tz(v.get("tz"))))


# --- FSRS parameters fitted to the namespace's reviews (review.services.optimize) --------


class OptimizeInput(StrictSerializer):
    namespace = StrictSlugField()


class OptimizeQuery(StrictSerializer):
    namespace = serializers.SlugField()


class FitMetricsOutput(serializers.Serializer):
    log_loss = serializers.FloatField(help_text="Mean cross-entropy of predicted recall")
    rmse_bins = serializers.FloatField(help_text="FSRS benchmark's binned RMSE")


class FitOutput(serializers.Serializer):
    status = serializers.ChoiceField(choices=["queued", "running", "done", "failed"])
    message = serializers.CharField()
    requested_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(required=False)
    engine = serializers.CharField()
    reviews = serializers.IntegerField(
        allow_null=True, help_text="Reviews fitted on; null when some were above your ceiling"
    )
    eval_predictions = serializers.IntegerField(
        required=False, allow_null=True, help_text="Recent reviews the figures are measured on"
    )
    before = FitMetricsOutput(required=False, help_text="The parameters in use before the fit")
    before_parameters = serializers.ChoiceField(
        choices=["defaults", "fitted"], required=False, help_text="Which those were"
    )
    after = FitMetricsOutput(required=False, help_text="The fitted parameters")
    parameters = serializers.ListField(child=serializers.FloatField(), required=False)
    applied = serializers.BooleanField(help_text="The fitted parameters are the ones in use")


class OptimizeOutput(serializers.Serializer):
    namespace = serializers.CharField()
    parameters = serializers.ListField(
        child=serializers.FloatField(),
        allow_null=True,
        help_text="The FSRS parameters in use; null: fsrs's defaults",
    )
    reviews = serializers.IntegerField(help_text="Your reviews a fit would learn from")
    min_reviews = serializers.IntegerField()
    fit = FitOutput(allow_null=True, help_text="The last fit")


def _optimize_payload(namespace: Namespace, scope: Scope) -> dict[str, Any]:
    """The namespace's FSRS parameters and last fit as this caller may see them: of a fit
    that read reviews above the caller's ceiling, the figures but not how many reviews."""
    fit = namespace.fsrs_fit if isinstance(namespace.fsrs_fit, dict) else None
    if fit is not None:
        fitted_at = fit.get("ceiling")
        if (Classification.RESTRICTED if fitted_at is None else fitted_at) > scope.ceiling:
            fit = {key: value for key, value in fit.items() if key in FIT_FIGURES}
            fit["reviews"] = None
            fit["message"] = (
                "Fitted to reviews that include some above your classification ceiling; "
                "their number is not shown."
            )
    return {
        "namespace": namespace.slug,
        "parameters": fsrs_parameters_in_use(namespace),
        "reviews": services.optimize_reviews(namespace=namespace, ceiling=scope.ceiling).count(),
        "min_reviews": optimizer.MIN_REVIEWS,
        "fit": fit,
    }


# What a fit record shows a caller whose ceiling is below the fit's: nothing counted.
FIT_FIGURES = frozenset(
    {
        "status",
        "requested_at",
        "started_at",
        "finished_at",
        "engine",
        "evaluation_share",
        "min_reviews",
        "before",
        "before_parameters",
        "after",
        "parameters",
        "applied",
        "reset_at",
    }
)


class OptimizeView(APIView):
    @extend_schema(
        parameters=[OptimizeQuery],
        responses=OptimizeOutput,
        tags=["review"],
        summary="The namespace's FSRS parameters and its last fit",
    )
    def get(self, request: Request) -> Response:
        scope = Scope.of(request)
        query = OptimizeQuery(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        namespace = scope.namespace(query.validated_data["namespace"])
        return Response(_optimize_payload(namespace, scope))

    @extend_schema(
        request=OptimizeInput,
        responses={200: OptimizeOutput, 202: OptimizeOutput},
        tags=["review"],
        summary="Fit FSRS parameters to your reviews in the namespace (202: in the worker); "
        "below the minimum number of reviews a 400 naming `namespace`",
    )
    def post(self, request: Request) -> Response:
        scope = Scope.of(request)
        data = OptimizeInput(data=request.data)
        data.is_valid(raise_exception=True)
        namespace = scope.namespace(data.validated_data["namespace"])
        outcome = services.namespace_optimize(namespace=namespace, ceiling=scope.ceiling)
        return Response(
            _optimize_payload(namespace, scope),
            status=status.HTTP_202_ACCEPTED if outcome.queued else status.HTTP_200_OK,
        )


class OptimizeResetView(APIView):
    @extend_schema(
        request=OptimizeInput,
        responses=OptimizeOutput,
        tags=["review"],
        summary="Schedule the namespace with fsrs's default parameters again",
    )
    def post(self, request: Request) -> Response:
        scope = Scope.of(request)
        data = OptimizeInput(data=request.data)
        data.is_valid(raise_exception=True)
        namespace = scope.namespace(data.validated_data["namespace"])
        services.namespace_fsrs_reset(namespace=namespace)
        return Response(_optimize_payload(namespace, scope))

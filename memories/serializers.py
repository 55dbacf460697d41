"""Input and output shapes of the memories API. Inputs reject unknown fields by name."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone
from rest_framework import serializers

from config.serializers import (
    INT64_MAX,
    StrictBooleanField,
    StrictCharField,
    StrictDateTimeField,
    StrictFloatField,
    StrictIntegerField,
    StrictSerializer,
    StrictSlugField,
)
from memories import substring
from memories.fastpaths import PlannedRepresentation, per_thread
from memories.models import (
    KEYWORDS,
    POSITION_MAX,
    RELEVANCE_LIMIT,
    SESSION_ID_LENGTH,
    TAGS,
    ApiToken,
    Association,
    Classification,
    Consolidation,
    ContentLength,
    DecayFit,
    Entity,
    Memory,
    MemoryEvent,
    Namespace,
    Relation,
    StringList,
)
from memories.models.namespaces import DESCRIPTION_MAX, HALF_LIFE_MAX_DAYS, POWER_ALPHA_MAX
from memories.services import (
    BULK_ACTION_MAX,
    CREATE_ONLY_FIELDS,
    EDITABLE_FIELDS,
    NAMESPACE_EDITABLE_FIELDS,
    SERVER_FIELDS,
    bulk_action_choices,
    in_model_order,
)

CLASSIFICATION_NAMES = [c.label for c in Classification]


class ClassificationField(serializers.ChoiceField):
    """Classification by name on the wire, ordered integer in the database."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(choices=CLASSIFICATION_NAMES, **kwargs)

    def to_internal_value(self, data: Any) -> int:
        return Classification.from_name(super().to_internal_value(data)).value

    def to_representation(self, value: Any) -> str:
        return Classification(value).label


def _strings(rule: StringList) -> serializers.ListField:
    """A list field with the model's rule (memories.models.memories.StringList) as its shape."""
    return serializers.ListField(
        child=StrictCharField(max_length=rule.max_length, allow_blank=False),
        max_length=rule.max_items,
        required=False,
        validators=[rule],
    )


# The output's fields (memories.services declares a memory's fields by who writes them):
# id and namespace, then the caller's and the server's fields in the model's order, but for
# two the server keeps to itself and three shown last (where the API has shown them),
# then two computed ones.
_NOT_SHOWN = frozenset({"status_changed_at", "forgotten_score"})
_SHOWN_LAST = ("promoted_at", "forgotten_at", "forgotten_reason")
MEMORY_OUTPUT_FIELDS = (
    "id",
    "namespace",
    *in_model_order(
        {*EDITABLE_FIELDS, *SERVER_FIELDS, *CREATE_ONLY_FIELDS, "created_at"}
        - _NOT_SHOWN
        - set(_SHOWN_LAST)
    ),
    *_SHOWN_LAST,
    "has_embedding",
    "decay_score",
    "superseded",
)
# Sent to an input, these answer "This field is read-only." rather than "Unknown field.":
# what the output shows and no input takes, and three stored fields a client might send.
MEMORY_SERVER_FIELDS = (
    frozenset(MEMORY_OUTPUT_FIELDS) - set(EDITABLE_FIELDS) - {"namespace", "created_at"}
) | {"search_text", "signature", "embedding"}


def _declares(serializer: type[serializers.Serializer], names: tuple[str, ...]) -> None:
    """Refuse to start unless `serializer` declares exactly `names`, in that order: the list
    comes from the one declaration, the serializer gives each name its rule."""
    declared = tuple(serializer._declared_fields)
    if declared != names:
        raise ImproperlyConfigured(
            f"{serializer.__name__} declares {declared}, not {names} (memories.services)."
        )


class MemoryFieldsMixin(StrictSerializer):
    """The fields a caller may write on a memory (seed fields, validated by range)."""

    read_only_names = MEMORY_SERVER_FIELDS | {"namespace"}

    # The model's rules (memories.models.memories): one home for every write path.
    content = StrictCharField(trim_whitespace=True, validators=[ContentLength()])
    content_original = StrictCharField(
        required=False, allow_blank=True, validators=[ContentLength()]
    )
    language = StrictCharField(required=False, max_length=16)
    keywords = _strings(KEYWORDS)
    topic = StrictCharField(required=False, allow_blank=True, max_length=100)
    cue = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=300,
        help_text="The question its review card shows; default: topic and first line.",
    )
    memory_type = serializers.ChoiceField(choices=Memory.MemoryType.choices, required=False)
    tier = serializers.ChoiceField(choices=Memory.Tier.choices, required=False)
    classification = ClassificationField(required=False)
    strength = StrictFloatField(min_value=0.0, max_value=2.0, required=False)
    utility = StrictFloatField(min_value=0.0, max_value=1.0, required=False)
    confidence = StrictFloatField(min_value=0.0, max_value=1.0, required=False)
    emotion_score = StrictFloatField(min_value=-5.0, max_value=5.0, required=False)
    emotion_tags = _strings(TAGS)
    trust = StrictFloatField(min_value=0.0, max_value=3.0, required=False)
    credibility = StrictIntegerField(min_value=1, max_value=5, required=False)
    relevance_score = StrictFloatField(
        min_value=-RELEVANCE_LIMIT, max_value=RELEVANCE_LIMIT, required=False
    )
    importance_flags = _strings(TAGS)
    expires_at = StrictDateTimeField(required=False, allow_null=True)
    valid_until = StrictDateTimeField(
        required=False,
        allow_null=True,
        help_text='When what it says stopped being true (a PATCH says so: "no longer '
        'true"); null: still true. Superseded memories are left out of recall, the list '
        "and the review queue.",
    )


_declares(MemoryFieldsMixin, EDITABLE_FIELDS)


class MemoryCreateInput(MemoryFieldsMixin):
    namespace = StrictSlugField(help_text="Slug of one of your namespaces.")
    created_at = StrictDateTimeField(
        required=False, help_text="When the remembered thing happened; defaults to now."
    )
    session_id = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=SESSION_ID_LENGTH,
        help_text="The conversation it comes from (your id): the memory is linked to the "
        "session's previous turns. Set on create only.",
    )
    position = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=POSITION_MAX,
        help_text="Its place in the session (turn number); default: the order of writing.",
    )
    valid_from = StrictDateTimeField(
        required=False,
        help_text="Since when what it says is true; default: created_at. Set on create only.",
    )
    supersedes = serializers.ListField(
        child=StrictIntegerField(min_value=1),
        required=False,
        max_length=100,
        help_text="Ids of memories of the same namespace this one replaces (a fact that "
        "changed): each becomes valid until this one's valid_from, with a 'superseded' "
        "event and a 'supersedes' link. Nothing is deleted.",
    )
    read_only_names = MEMORY_SERVER_FIELDS

    def validate_created_at(self, value):
        return not_in_future(value)


def not_in_future(value):
    """A moment that has happened (five minutes' grace for clocks): what was written, used,
    recalled or changed cannot be later than now."""
    if value is not None and value > timezone.now() + timezone.timedelta(minutes=5):
        raise serializers.ValidationError("May not be in the future.")
    return value


class MemoryUpdateInput(MemoryFieldsMixin):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("partial", True)
        super().__init__(*args, **kwargs)


class BulkCreateInput(StrictSerializer):
    namespace = StrictSlugField(
        required=False, help_text="Default namespace for items that do not name one."
    )
    memories = serializers.ListField(child=serializers.DictField(), allow_empty=False)

    def validate_memories(self, value: list[dict]) -> list[dict]:
        if len(value) > settings.API_BULK_MAX:
            raise serializers.ValidationError(
                f"At most {settings.API_BULK_MAX} memories per request (API_BULK_MAX)."
            )
        return value


class MemoryOutput(PlannedRepresentation):
    plan_model = Memory

    id = serializers.IntegerField()
    namespace = serializers.SlugField(source="namespace.slug")
    content = serializers.CharField()
    content_original = serializers.CharField()
    language = serializers.CharField()
    keywords = serializers.ListField(child=serializers.CharField())
    topic = serializers.CharField()
    cue = serializers.CharField()
    memory_type = serializers.CharField()
    tier = serializers.CharField()
    storage = serializers.CharField()
    status = serializers.CharField()
    classification = ClassificationField()
    strength = serializers.FloatField()
    stability = serializers.FloatField()
    utility = serializers.FloatField()
    confidence = serializers.FloatField()
    emotion_score = serializers.FloatField()
    emotion_tags = serializers.ListField(child=serializers.CharField())
    trust = serializers.FloatField()
    credibility = serializers.IntegerField()
    relevance_score = serializers.FloatField()
    importance_flags = serializers.ListField(child=serializers.CharField())
    use_count = serializers.IntegerField()
    last_used_at = serializers.DateTimeField()
    access_count = serializers.IntegerField()
    last_accessed_at = serializers.DateTimeField(allow_null=True)
    recall_count = serializers.IntegerField()
    last_recalled_at = serializers.DateTimeField(allow_null=True)
    recall_timestamps = serializers.ListField(child=serializers.CharField())
    session_ids = serializers.ListField(child=serializers.CharField())
    session_id = serializers.CharField()
    position = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)
    valid_from = serializers.DateTimeField()
    valid_until = serializers.DateTimeField(allow_null=True)
    promoted_at = serializers.DateTimeField(allow_null=True)
    forgotten_at = serializers.DateTimeField(allow_null=True)
    forgotten_reason = serializers.CharField()
    has_embedding = serializers.SerializerMethodField()
    decay_score = serializers.SerializerMethodField()
    superseded = serializers.SerializerMethodField()

    def get_has_embedding(self, memory: Memory) -> bool:
        return memory.embedding is not None

    def get_superseded(self, memory: Memory) -> bool:
        """No longer true: its valid_until has passed."""
        now = self.context.get("now") or timezone.now()
        return memory.valid_until is not None and memory.valid_until <= now

    def get_decay_score(self, memory: Memory) -> float:
        now = self.context.get("now") or timezone.now()
        # One serializer renders a whole page or bulk response: read each namespace's
        # decay settings once, not once per memory.
        cache = self.__dict__.setdefault("_decay_params", {})
        params = cache.get(memory.namespace_id)
        if params is None:
            params = cache[memory.namespace_id] = memory.namespace.decay_params()
        return round(memory.decay_score(now, params), 6)


_declares(MemoryOutput, MEMORY_OUTPUT_FIELDS)


class MemoryWritten(MemoryOutput):
    """A create's answer (the schema's; the views add the flag to MemoryOutput's data)."""

    deduplicated = serializers.BooleanField(
        help_text="True: the namespace already held this text; this is that memory, counted "
        "as a use."
    )


def validate_memory_input(data: Any) -> dict[str, Any]:
    """MemoryCreateInput(data=data).is_valid(raise_exception=True); its validated data.

    Raises the same ValidationError (the same error detail) as is_valid would. One
    serializer per thread (memories.fastpaths.per_thread): the bulk create validates each
    of its items with it.
    """
    return dict(per_thread(MemoryCreateInput).run_validation(data))


def memory_representation(memory: Memory, *, now=None) -> dict[str, Any]:
    """MemoryOutput(memory, context={"now": now}).data, as a plain dict, by one MemoryOutput
    per thread (memories.fastpaths.per_thread)."""
    output = per_thread(MemoryOutput, context={})
    output.context.clear()
    if now is not None:
        output.context["now"] = now
    output.__dict__.pop("_decay_params", None)  # namespace settings are read afresh
    return output.to_representation(memory)


class ForgetInput(StrictSerializer):
    reason = StrictCharField(max_length=200)


class TouchInput(StrictSerializer):
    boost_strength = StrictBooleanField(default=False)


class ReinforceFilter(StrictSerializer):
    """Query parameters of the review candidates."""

    namespace = serializers.SlugField(required=False)
    limit = serializers.IntegerField(min_value=1, max_value=100, default=20)


class ReinforceOutput(serializers.Serializer):
    """A memory worth revisiting and its decay score (0..1 scale of seed 003); forget_at:
    when decay will forget it if nothing uses it, for one about to be forgotten (else
    null)."""

    memory = serializers.SerializerMethodField()
    score = serializers.FloatField()
    forget_at = serializers.DateTimeField(allow_null=True)

    def get_memory(self, item) -> dict:
        return MemoryOutput(item["memory"], context=self.context).data


class ForgettingFilter(StrictSerializer):
    """Query parameters of the about-to-forget digest."""

    namespace = serializers.SlugField(required=False)
    limit = serializers.IntegerField(
        min_value=0, max_value=100, default=100, help_text="Memories listed; 0: the count alone."
    )


class ForgettingOutput(serializers.Serializer):
    """The about-to-forget digest: how many memories decay will forget by `by` (now +
    FORGET_DIGEST_DAYS) unless they are used, and the first `limit` of them, soonest first."""

    count = serializers.IntegerField()
    days = serializers.IntegerField()
    by = serializers.DateTimeField()
    memories = ReinforceOutput(many=True)


class MemoryActionInput(StrictSerializer):
    """An action on memories named by id (the dashboard's bulk actions)."""

    action = serializers.ChoiceField(choices=[])
    ids = serializers.ListField(
        child=StrictIntegerField(min_value=1), min_length=1, max_length=BULK_ACTION_MAX
    )
    reason = StrictCharField(required=False, allow_blank=True, help_text="forget: why.")
    topic = StrictCharField(required=False, allow_blank=True, help_text="move: the new topic.")
    classification = ClassificationField(required=False, help_text="classify: the new level.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Other apps register theirs when they are ready (memories.hooks), after import.
        self.fields["action"].choices = bulk_action_choices()


class MemoryActionOutput(serializers.Serializer):
    action = serializers.CharField()
    selected = serializers.IntegerField(help_text="Distinct memories named.")
    changed = serializers.IntegerField(
        help_text="Rows changed: memories, or cards for the card actions (the others "
        "needed no change)."
    )
    message = serializers.CharField()


class MemoryListFilter(StrictSerializer):
    """Query parameters of the memory list."""

    namespace = serializers.SlugField(required=False)
    topic = serializers.CharField(required=False, max_length=100)
    tier = serializers.ChoiceField(choices=Memory.Tier.choices, required=False)
    status = serializers.ChoiceField(
        choices=Memory.Status.choices,
        required=False,
        help_text="Default: every status but forgotten.",
    )
    memory_type = serializers.ChoiceField(choices=Memory.MemoryType.choices, required=False)
    classification = ClassificationField(required=False)
    session_id = serializers.CharField(
        required=False,
        max_length=SESSION_ID_LENGTH,
        help_text="The memories written in this session (conversation).",
    )
    created_after = serializers.DateTimeField(required=False)
    created_before = serializers.DateTimeField(required=False)
    as_of = serializers.DateTimeField(
        required=False, help_text="What was valid at this instant (valid_from..valid_until)."
    )
    include_superseded = serializers.BooleanField(
        required=False, help_text="Superseded memories too (each marked `superseded`)."
    )
    q = serializers.CharField(
        required=False,
        max_length=200,
        help_text="Text the memory contains: at least 3 letters or digits.",
    )
    cursor = serializers.CharField(required=False)
    limit = serializers.IntegerField(required=False)

    def validate_q(self, value: str) -> str:
        if substring.too_short(value):  # no index could serve it: a scan of every memory
            raise serializers.ValidationError(substring.TOO_SHORT)
        return value


class LinkListFilter(StrictSerializer):
    """Query parameters of the association, entity, relation and digest lists."""

    namespace = serializers.SlugField(required=False)
    memory = serializers.IntegerField(required=False, min_value=1, max_value=INT64_MAX)
    entity = serializers.CharField(required=False, max_length=200)
    period = serializers.ChoiceField(choices=Consolidation.Period.choices, required=False)
    cursor = serializers.CharField(required=False)
    limit = serializers.IntegerField(required=False)


class EventOutput(serializers.ModelSerializer):
    memory = serializers.IntegerField(source="memory_ref")
    actor = serializers.CharField(source="actor.username", default=None, allow_null=True)

    class Meta:
        model = MemoryEvent
        fields = ["id", "memory", "kind", "before", "after", "actor", "source", "created_at"]


class NamespaceOutput(serializers.ModelSerializer):
    weights = serializers.SerializerMethodField(help_text="Effective ranking weights.")
    memory_count = serializers.IntegerField(
        read_only=True, allow_null=True, help_text="Memories within the caller's ceiling."
    )

    class Meta:
        model = Namespace
        # The settings a caller may change (memories.services.NAMESPACE_EDITABLE_FIELDS),
        # with the slug after the name and the effective weights after the mode.
        fields = [
            "id",
            *NAMESPACE_EDITABLE_FIELDS[:1],
            "slug",
            *NAMESPACE_EDITABLE_FIELDS[1:3],
            "weights",
            *NAMESPACE_EDITABLE_FIELDS[3:],
            "memory_count",
            "created_at",
        ]

    def get_weights(self, namespace: Namespace) -> dict[str, float]:
        return namespace.ranking_weights()


class DecayFitOutput(serializers.ModelSerializer):
    model = serializers.CharField(help_text="exponential, power_law or two_component.")
    classification = serializers.SerializerMethodField(
        help_text="The level of the memories whose uses it learnt from."
    )
    applied = serializers.SerializerMethodField(
        help_text="Whether it decides the namespace's decay now (decay_fit auto, accepted)."
    )

    class Meta:
        model = DecayFit
        fields = [
            "id",
            "created_at",
            "trigger",
            "model",
            "half_life_days",
            "beta",
            "power_alpha",
            "fast_half_life_days",
            "slow_half_life_days",
            "fast_weight",
            "rate",
            "default_rate",
            "n_memories",
            "n_uses_train",
            "n_uses_validation",
            "validation_loss",
            "default_validation_loss",
            "model_losses",
            "accepted",
            "applied",
            "reason",
            "seconds",
            "classification",
        ]

    def get_classification(self, fit: DecayFit) -> str:
        return Classification(fit.classification).label

    def get_applied(self, fit: DecayFit) -> bool:
        applied = fit.namespace.applied_fit
        return applied is not None and applied.pk == fit.pk


class NamespaceInput(StrictSerializer):
    read_only_names = frozenset({"id", "weights", "memory_count", "created_at", "owner"})

    name = StrictCharField(max_length=100)
    slug = StrictSlugField(max_length=100, required=False)
    description = StrictCharField(required=False, allow_blank=True, max_length=DESCRIPTION_MAX)
    mode = serializers.ChoiceField(choices=Namespace.Mode.choices, required=False)
    weight_similarity = StrictFloatField(min_value=0, max_value=1, required=False, allow_null=True)
    weight_recency = StrictFloatField(min_value=0, max_value=1, required=False, allow_null=True)
    weight_utility = StrictFloatField(min_value=0, max_value=1, required=False, allow_null=True)
    weight_confidence = StrictFloatField(min_value=0, max_value=1, required=False, allow_null=True)
    decay_model = serializers.ChoiceField(
        choices=[("", "global setting"), *Namespace.DecayModel.choices], required=False
    )
    decay_half_life_days = StrictFloatField(
        min_value=0.001, max_value=HALF_LIFE_MAX_DAYS, required=False, allow_null=True
    )
    decay_beta = StrictFloatField(min_value=0, max_value=2, required=False, allow_null=True)
    decay_power_alpha = StrictFloatField(
        min_value=0.01, max_value=POWER_ALPHA_MAX, required=False, allow_null=True
    )
    decay_fast_half_life_days = StrictFloatField(
        min_value=0.001, max_value=HALF_LIFE_MAX_DAYS, required=False, allow_null=True
    )
    decay_slow_half_life_days = StrictFloatField(
        min_value=0.001, max_value=HALF_LIFE_MAX_DAYS, required=False, allow_null=True
    )
    decay_fast_weight = StrictFloatField(min_value=0, max_value=1, required=False, allow_null=True)
    scheduler = serializers.ChoiceField(
        choices=Namespace.SchedulerKind.choices,
        required=False,
        help_text="sm2 (default): the classic rule, an easiness factor per card multiplying "
        "the interval; fsrs: a model of memory aiming at desired_retention, suggested for "
        "people's namespaces.",
    )
    sm2_modifiers = StrictBooleanField(
        required=False,
        help_text="With sm2: Anki's Hard (1.2 times the last interval) and Easy (1.3 times "
        "Good's) modifiers; default off, the seed's exact SM-2.",
    )
    desired_retention = StrictFloatField(min_value=0.7, max_value=0.99, required=False)
    new_cards_per_day = StrictIntegerField(min_value=0, max_value=1000, required=False)
    card_front = serializers.ChoiceField(
        choices=Namespace.CardFront.choices,
        required=False,
        help_text="What a card without a cue asks: cloze (default: the memory with its most "
        "telling words hidden), first_line, or topic.",
    )
    leech_threshold = StrictIntegerField(
        min_value=1,
        max_value=100,
        required=False,
        help_text="Lapses after which a card is tagged leech and suspended (default 8).",
    )
    session_links = StrictBooleanField(
        required=False,
        help_text="Link each new memory to the previous turns of its session (default on).",
    )
    dedupe = serializers.ChoiceField(
        choices=Namespace.Dedupe.choices,
        required=False,
        help_text="exact (default): a create of a text a live memory has answers with that "
        "memory; off: store every write.",
    )
    decay_fit = serializers.ChoiceField(
        choices=Namespace.DecayFitMode.choices,
        required=False,
        help_text="Decay fitted to this namespace's own uses: off (default, the constants), "
        "suggest (fit daily and show), auto (use the latest fit when it predicted uses "
        "better than the constants on a later slice of the history).",
    )


class NamespaceUpdateInput(NamespaceInput):
    read_only_names = NamespaceInput.read_only_names | {"slug"}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("partial", True)
        super().__init__(*args, **kwargs)
        del self.fields["slug"]


class AssociationOutput(serializers.ModelSerializer):
    class Meta:
        model = Association
        fields = ["id", "source", "target", "weight", "kind", "created_at"]


class AssociationInput(StrictSerializer):
    source = StrictIntegerField(min_value=1)
    target = StrictIntegerField(min_value=1)
    weight = StrictFloatField(min_value=0.0, max_value=1.0, default=0.5)
    kind = StrictCharField(max_length=30, default="related")


class EntityOutput(serializers.ModelSerializer):
    namespace = serializers.SlugField(source="namespace.slug")

    class Meta:
        model = Entity
        fields = ["id", "namespace", "name", "display_name", "kind", "created_at"]


class EntityInput(StrictSerializer):
    namespace = StrictSlugField()
    name = StrictCharField(max_length=200)
    kind = StrictCharField(max_length=30, default="thing")


class RelationOutput(serializers.ModelSerializer):
    namespace = serializers.SlugField(source="namespace.slug")
    subject = serializers.CharField(source="subject.name")
    object = serializers.CharField(source="object.name")

    class Meta:
        model = Relation
        fields = [
            "id",
            "namespace",
            "subject",
            "predicate",
            "object",
            "memory",
            "weight",
            "created_at",
        ]


class RelationInput(StrictSerializer):
    namespace = StrictSlugField()
    subject = StrictCharField(max_length=200)
    predicate = StrictCharField(max_length=100)
    object = StrictCharField(max_length=200)
    memory = StrictIntegerField(min_value=1, required=False, allow_null=True)
    weight = StrictFloatField(min_value=0.0, max_value=1.0, default=0.6)


class ConsolidationOutput(serializers.ModelSerializer):
    namespace = serializers.SlugField(source="namespace.slug")

    class Meta:
        model = Consolidation
        fields = [
            "id",
            "namespace",
            "period",
            "period_start",
            "topic",
            "text",
            "memory_ids",
            "created_at",
        ]


class TokenOutput(serializers.ModelSerializer):
    namespaces = serializers.SlugRelatedField(slug_field="slug", many=True, read_only=True)
    ceiling = ClassificationField()
    status = serializers.SerializerMethodField()

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "prefix",
            "all_namespaces",
            "namespaces",
            "access",
            "ceiling",
            "expires_at",
            "last_used_at",
            "revoked_at",
            "created_at",
            "status",
        ]

    def get_status(self, token: ApiToken) -> str:
        if token.revoked_at:
            return "revoked"
        if token.expires_at and token.expires_at <= timezone.now():
            return "expired"
        return "active"


class TokenCreatedOutput(TokenOutput):
    secret = serializers.CharField(help_text="Shown once; store it now.")

    class Meta(TokenOutput.Meta):
        fields = [*TokenOutput.Meta.fields, "secret"]


class TokenInput(StrictSerializer):
    name = StrictCharField(max_length=100)
    namespaces = serializers.ListField(child=StrictSlugField(), required=False)
    all_namespaces = StrictBooleanField(default=False)
    access = serializers.ChoiceField(choices=ApiToken.Access.choices, default="read")
    ceiling = ClassificationField(required=False, help_text="Default: internal.")
    expires_at = StrictDateTimeField(required=False, allow_null=True)


_PAGES: dict[str, type[serializers.Serializer]] = {}


def page_of(item: type[serializers.Serializer]) -> type[serializers.Serializer]:
    """The documented shape of a cursor-paginated list of `item`."""
    name = f"Paginated{item.__name__.removesuffix('Output')}List"
    if name not in _PAGES:
        _PAGES[name] = type(
            name,
            (serializers.Serializer,),
            {
                "next": serializers.URLField(allow_null=True, help_text="The next page, or null."),
                "previous": serializers.URLField(allow_null=True),
                "results": item(many=True),
            },
        )
    return _PAGES[name]

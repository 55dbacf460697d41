"""The memories app's models, one module per concept; every name is re-exported here, so
callers import from memories.models.

classification.py  Classification (sensitivity levels), and DerivedQuerySet and
                   derived_level: the level each row derived from memories carries
namespaces.py      Namespace and MODE_WEIGHTS (ranking weights by mode)
memories.py        Memory, MemoryQuerySet, LIVE_STATUSES, and MemoryEvent (history)
graph.py           Association, Entity, Relation and RelationQuerySet
sketches.py        MemorySketch: near-duplicate sketch keys
digests.py         Consolidation (digests) and quotes_hidden
tokens.py          ApiToken and ApiTokenQuerySet
runs.py            BackgroundRun, and ImportChunk (a queued import's spooled body)
webhooks.py        WebhookSubscription, WebhookDelivery (the delivery log), WEBHOOK_EVENTS
decay_fits.py      MemoryUse (the use log) and DecayFit (a namespace's fitted decay)

Each module imports only those before it in that list, so the package has no import cycle.
The imports below keep that order too: Django registers the models in the order they are
imported (apps.get_models(), the admin, dumpdata), the order of the former models.py.
"""

# isort: off
from memories.models.classification import Classification, DerivedQuerySet, derived_level
from memories.models.namespaces import MODE_WEIGHTS, Namespace
from memories.models.memories import (
    KEYWORDS,
    LIVE_STATUSES,
    POSITION_MAX,
    RELEVANCE_LIMIT,
    SESSION_ID_LENGTH,
    TAGS,
    ContentLength,
    StringList,
    Memory,
    MemoryEvent,
    MemoryQuerySet,
    reachable_sql,
)
from memories.models.graph import Association, Entity, Relation, RelationQuerySet
from memories.models.sketches import MemorySketch
from memories.models.digests import Consolidation, quotes_hidden
from memories.models.tokens import ApiToken, ApiTokenQuerySet
from memories.models.runs import BackgroundRun, ImportChunk
from memories.models.webhooks import (
    WEBHOOK_EVENTS,
    WebhookDelivery,
    WebhookSubscription,
    WebhookSubscriptionQuerySet,
)
from memories.models.decay_fits import DecayFit, MemoryUse

# isort: on

__all__ = [
    "KEYWORDS",
    "LIVE_STATUSES",
    "MODE_WEIGHTS",
    "POSITION_MAX",
    "RELEVANCE_LIMIT",
    "SESSION_ID_LENGTH",
    "TAGS",
    "WEBHOOK_EVENTS",
    "ApiToken",
    "ApiTokenQuerySet",
    "Association",
    "BackgroundRun",
    "Classification",
    "Consolidation",
    "ContentLength",
    "DecayFit",
    "DerivedQuerySet",
    "Entity",
    "ImportChunk",
    "Memory",
    "MemoryEvent",
    "MemoryQuerySet",
    "MemorySketch",
    "MemoryUse",
    "Namespace",
    "Relation",
    "RelationQuerySet",
    "StringList",
    "WebhookDelivery",
    "WebhookSubscription",
    "WebhookSubscriptionQuerySet",
    "derived_level",
    "quotes_hidden",
    "reachable_sql",
]

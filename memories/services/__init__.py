"""The memories app's writes, one module per concept; callers import them from here.

memories.py   memories: build, create, bulk create, update, forget, restore, purge, touch,
              promote
events.py     the history event every write records
duplicates.py exact duplicates: the memory that already holds a text
near_duplicates.py  near-duplicates: sketches, lookup, links
supersede.py  facts that change: a memory supersedes older ones
namespaces.py namespaces: create and update
tokens.py     API tokens: create and revoke
graph.py      associations, entities and relations
sessions.py   a memory's conversation: links to the previous turns of its session
fields.py     a memory's fields by who writes them (the one declaration of each list)
bulk_actions.py  many memories at once: the memory list's bulk actions (forget, restore,
              move, classify, keep, and other apps' through memories.hooks)
"""

from memories.services.bulk_actions import (
    BULK_ACTION_MAX,
    bulk_action_choices,
    bulk_action_text,
    memories_bulk_apply,
    memories_bulk_check,
    memories_classify,
    memories_forget,
    memories_keep,
    memories_move,
    memories_restore,
)
from memories.services.decay_fits import (
    decay_fit_request,
    decay_fit_run,
    decay_fits_run,
    decay_fits_visible,
)
from memories.services.events import memory_event_record, memory_events_save, memory_snapshot
from memories.services.fields import (
    CREATE_ONLY_FIELDS,
    DERIVED_FIELDS,
    EDITABLE_FIELDS,
    EMBEDDING_FIELDS,
    IDENTITY_FIELDS,
    SERVER_FIELDS,
    SNAPSHOT_FIELDS,
    TEXT_FIELDS,
    in_model_order,
)
from memories.services.graph import association_create, entity_get_or_create, relation_create
from memories.services.memories import (
    BULK_CHUNK,
    MAX_STRENGTH,
    STRENGTH_BOOST_FACTOR,
    MemoryNotLive,
    memories_insert,
    memory_build,
    memory_bulk_create,
    memory_create,
    memory_derive,
    memory_forget,
    memory_promote,
    memory_purge,
    memory_restore,
    memory_touch,
    memory_update,
    memory_validate,
)
from memories.services.namespaces import (
    NAMESPACE_EDITABLE_FIELDS,
    namespace_create,
    namespace_slug_taken,
    namespace_update,
    namespace_validate_new,
)
from memories.services.near_duplicates import (
    NEAR_DUPLICATE,
    near_duplicates_merge,
    near_group,
    near_index,
    near_index_pending,
)
from memories.services.sessions import session_links_create
from memories.services.supersede import CYCLE as SUPERSEDE_CYCLE
from memories.services.supersede import SUPERSEDES, memories_supersede, supersedes_cycles
from memories.services.tokens import (
    TOKEN_PREFIX_BYTES,
    TOKEN_SECRET_BYTES,
    token_create,
    token_hash,
    token_revoke,
)

__all__ = [
    "BULK_ACTION_MAX",
    "BULK_CHUNK",
    "CREATE_ONLY_FIELDS",
    "DERIVED_FIELDS",
    "EDITABLE_FIELDS",
    "EMBEDDING_FIELDS",
    "IDENTITY_FIELDS",
    "MAX_STRENGTH",
    "NAMESPACE_EDITABLE_FIELDS",
    "NEAR_DUPLICATE",
    "SERVER_FIELDS",
    "SNAPSHOT_FIELDS",
    "STRENGTH_BOOST_FACTOR",
    "SUPERSEDES",
    "SUPERSEDE_CYCLE",
    "TEXT_FIELDS",
    "TOKEN_PREFIX_BYTES",
    "TOKEN_SECRET_BYTES",
    "MemoryNotLive",
    "association_create",
    "bulk_action_choices",
    "bulk_action_text",
    "decay_fit_request",
    "decay_fit_run",
    "decay_fits_run",
    "decay_fits_visible",
    "entity_get_or_create",
    "in_model_order",
    "memories_bulk_apply",
    "memories_bulk_check",
    "memories_classify",
    "memories_forget",
    "memories_insert",
    "memories_keep",
    "memories_move",
    "memories_restore",
    "memories_supersede",
    "memory_build",
    "memory_bulk_create",
    "memory_create",
    "memory_derive",
    "memory_event_record",
    "memory_events_save",
    "memory_forget",
    "memory_promote",
    "memory_purge",
    "memory_restore",
    "memory_snapshot",
    "memory_touch",
    "memory_update",
    "memory_validate",
    "namespace_create",
    "namespace_slug_taken",
    "namespace_update",
    "namespace_validate_new",
    "near_duplicates_merge",
    "near_group",
    "near_index",
    "near_index_pending",
    "relation_create",
    "session_links_create",
    "supersedes_cycles",
    "token_create",
    "token_hash",
    "token_revoke",
]

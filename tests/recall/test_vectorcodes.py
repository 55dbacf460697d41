"""Sign codes of embeddings (recall.vectorcodes): computed with every vector, however it is
written (embedding, backfill, import), kept in step by sync_codes, stored as bit strings.

Se's use of them is tested in tests/recall/stages/test_embeddings.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from memories import services
from memories.importer import namespace_import
from memories.models import Classification, Memory
from memories.transfer import namespace_export
from recall import vectorcodes
from recall.backfill import embeddings_backfill
from recall.embeddings import embed_pending
from recall.models import EmbeddingCode
from tests.recall.fixtures.helpers import requires_numpy
from tests.recall.fixtures.vectors import MODEL, give_vector, unit

pytestmark = [pytest.mark.django_db, requires_numpy]


# --- codes -------------------------------------------------------------------------------


def test_a_sign_code_has_one_bit_per_dimension_set_where_the_component_is_positive():
    vector = [0.5, -1.0, 0.0, 2.0, -0.1, 0.3, 0.2, -3.0, 1.0]
    assert vectorcodes.sign_code(vector) == bytes([0b10010110, 0b10000000])
    assert vectorcodes.sign_code(np.asarray(vector) * 7) == vectorcodes.sign_code(vector)
    blobs = [np.asarray(vector, dtype=np.float32).tobytes(), b"", b"\x00\x01"]
    assert vectorcodes.sign_codes(blobs) == [vectorcodes.sign_code(vector), None, None]
    assert len(vectorcodes.sign_code(np.ones(384))) == 48


def test_codes_round_trip_through_the_database(namespace, make_memory):
    memory = make_memory("round trip")
    code = bytes(range(48))
    EmbeddingCode.objects.create(memory=memory, namespace=namespace, model=MODEL, code=code)
    assert EmbeddingCode.objects.get(memory=memory).code == code


def test_embed_pending_writes_a_code_with_each_vector(make_memory):
    car = make_memory("My car needs new tyres before winter")
    dog = make_memory("The dog chases the postman")
    assert embed_pending(provider="fake") == 2
    for memory in (car, dog):
        memory.refresh_from_db()
        code = EmbeddingCode.objects.get(memory=memory)
        assert (code.model, code.namespace_id) == ("fake-v1", memory.namespace_id)
        assert code.code == vectorcodes.sign_code(np.frombuffer(memory.embedding, np.float32))


def test_the_backfill_writes_a_code_with_each_vector(make_memory):
    class Embedder:
        model = "backfill-v1"

        def embed_texts(self, texts):
            return [[1.0, -2.0, 3.0] for _ in texts]

    memory = make_memory("to embed")
    embeddings_backfill(embedder=Embedder())
    code = EmbeddingCode.objects.get(memory=memory)
    assert (code.model, code.code) == ("backfill-v1", bytes([0b10100000]))


def test_imported_vectors_get_their_codes(user, namespace, make_memory):
    memory = make_memory("exported with its vector")
    give_vector(memory, [1.0, -1.0, 1.0, -1.0])
    lines = list(namespace_export(namespace=namespace, ceiling=Classification.RESTRICTED))
    copy = services.namespace_create(owner=user, name="Copy")
    result = namespace_import(namespace=copy, lines=lines)
    code = EmbeddingCode.objects.get(memory_id=result.memories[memory.pk])
    assert (code.namespace_id, code.model, code.code) == (copy.pk, MODEL, bytes([0b10100000]))


def test_sync_codes_adds_missing_codes_and_drops_stale_ones(namespace, make_memory):
    vector = unit([1.0, -1.0, 1.0])
    missing = make_memory("a vector written without its code")
    Memory.objects.filter(pk=missing.pk).update(embedding=vector.tobytes(), embedding_model=MODEL)
    changed = make_memory("a vector that will be cleared")
    give_vector(changed, vector)
    services.memory_update(memory=changed, changes={"content": "new words: the vector is cleared"})
    other_model = make_memory("re-embedded by another model")
    give_vector(other_model, vector)
    Memory.objects.filter(pk=other_model.pk).update(embedding_model="other-v2")

    assert vectorcodes.sync_codes() == 2
    assert vectorcodes.sync_codes() == 0
    codes = {c.memory_id: c.model for c in EmbeddingCode.objects.all()}
    assert codes == {missing.pk: MODEL, other_model.pk: "other-v2"}

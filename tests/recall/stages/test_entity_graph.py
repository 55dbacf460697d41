"""Stage S8 (recall.stages.entity_graph) on the engine the suite runs on."""

from __future__ import annotations

import pytest

from memories.models import Entity, Relation
from recall.stages.entity_graph import entity_candidates

pytestmark = pytest.mark.django_db


def test_entity_stage_returns_the_first_named_entitys_relations(recall, namespace, make_memory):
    alice = Entity.objects.create(namespace=namespace, name="alice", display_name="Alice")
    bob = Entity.objects.create(namespace=namespace, name="bob", display_name="Bob")
    project = Entity.objects.create(namespace=namespace, name="project-x", display_name="Project X")
    source = make_memory("Alice works with Bob on Project X")
    Relation.objects.create(
        namespace=namespace, subject=alice, predicate="works_with", object=bob, memory=source
    )
    Relation.objects.create(namespace=namespace, subject=bob, predicate="leads", object=project)
    result = recall("who does alice work with", stages=["S8"])
    assert [r.text for r in result.relations] == ["Alice —[works_with]→ Bob"]
    assert result.relations[0].score == pytest.approx(0.6)
    assert [r.text for r in recall("status of project x", stages=["S8"]).relations] == [
        "Bob —[leads]→ Project X"
    ]


def test_entity_stage_reports_no_match(recall):
    result = recall("nothing known here", stages=["S8"])
    assert result.relations == []
    assert result.stage_timings["S8"]["detail"] == "no entity match"


def test_entity_candidates_join_words_every_usual_way():
    names = entity_candidates(["project", "x", "status"])
    assert names.index("project x") < names.index("project")
    assert {"project-x", "project_x", "projectx"} <= set(names)


def test_entity_relations_are_those_the_visibility_rule_allows(namespace, user, make_memory):
    """_relations_of against the rule as the ORM states it: both directions, the best
    RELATION_LIMIT by weight then id, within the namespaces and the ceiling; hidden when
    drawn from a memory now above the ceiling or no longer live, shown (within its own
    level) when drawn from none; entities named as str() names them."""
    from django.db.models import Q
    from django.utils import timezone

    from memories import services
    from memories.models import LIVE_STATUSES, Classification, Memory
    from recall.stages.entity_graph import RELATION_LIMIT, _relations_of
    from recall.stages.filters import RecallFilters

    other = services.namespace_create(owner=user, name="Elsewhere")
    hub = Entity.objects.create(namespace=namespace, name="hub", display_name="Hub")
    secret = make_memory("classified source", classification=Classification.RESTRICTED)
    gone = make_memory("forgotten source")
    Memory.objects.filter(pk=gone.pk).update(status=Memory.Status.FORGOTTEN)
    public = make_memory("public source")
    sources = [None, public, secret, gone]
    for n in range(30):
        peer = Entity.objects.create(
            namespace=namespace, name=f"peer-{n}", display_name="" if n % 3 else f"Peer {n}"
        )
        subject, object_ = (hub, peer) if n % 2 else (peer, hub)
        Relation.objects.create(
            namespace=namespace,
            subject=subject,
            predicate=f"p{n}",
            object=object_,
            memory=sources[n % 4],
            weight=(n % 5) / 5,
            classification=n % 4,
        )
    stray = Entity.objects.create(namespace=other, name="stray")
    Relation.objects.create(namespace=other, subject=stray, predicate="x", object=hub)

    for ceiling in range(4):
        filters = RecallFilters(namespace_ids=(namespace.pk,), ceiling=ceiling, now=timezone.now())
        visible = Q(memory__isnull=True) | Q(
            memory__classification__lte=ceiling, memory__status__in=LIVE_STATUSES
        )
        expected = [
            (r.pk, str(r.subject), r.predicate, str(r.object), r.weight, r.memory_id)
            for r in Relation.objects.filter(Q(subject=hub) | Q(object=hub))
            .filter(visible, namespace_id=namespace.pk, classification__lte=ceiling)
            .select_related("subject", "object")
            .order_by("-weight", "id")[:RELATION_LIMIT]
        ]
        assert [tuple(row) for row in _relations_of(hub.pk, filters)] == expected
        assert expected  # something to compare at every level

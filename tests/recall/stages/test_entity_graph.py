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

"""An association's level (memories 0025's triggers): the higher of its ends' when it is
written, on every write path; raised with either end, never lowered."""

from __future__ import annotations

import pytest

from memories import services
from memories.models import Association, Classification, Memory

pytestmark = pytest.mark.django_db

PUBLIC, INTERNAL, RESTRICTED = (
    Classification.PUBLIC,
    Classification.INTERNAL,
    Classification.RESTRICTED,
)


def level(source: Memory, target: Memory) -> int:
    return Association.objects.get(source=source, target=target).classification


def test_every_write_path_gives_a_link_its_ends_level(namespace, make_memory):
    public = make_memory("Ferry timetable", classification=PUBLIC)
    secret = make_memory("Vault code", classification=RESTRICTED)
    other = make_memory("Ferry fares", classification=INTERNAL)

    services.association_create(source=public, target=secret)  # the API's service
    assert level(public, secret) == RESTRICTED
    Association.objects.create(namespace=namespace, source=public, target=other)  # admin, ORM
    assert level(public, other) == INTERNAL

    turns = [
        services.memory_create(
            namespace=namespace, content=text, session_id="s1", classification=level_
        )
        for text, level_ in (("First turn", PUBLIC), ("Second turn", RESTRICTED))
    ]
    assert level(turns[0], turns[1]) == RESTRICTED  # the write path's session link

    newer = make_memory("Ferry timetable, winter", classification=PUBLIC)
    services.memories_supersede(new=newer, old=[public])
    assert level(newer, public) == PUBLIC  # supersession's link


def test_a_link_is_raised_with_an_end_and_never_lowered(namespace, make_memory):
    a = make_memory("Alpha", classification=PUBLIC)
    b = make_memory("Bravo", classification=PUBLIC)
    services.association_create(source=a, target=b, kind="related")
    assert level(a, b) == PUBLIC

    services.memory_update(memory=b, changes={"classification": RESTRICTED})
    assert level(a, b) == RESTRICTED
    services.memory_update(memory=b, changes={"classification": PUBLIC})
    assert level(a, b) == RESTRICTED  # written while b was restricted: stays so

    link = Association.objects.get(source=a, target=b)
    link.weight, link.classification = 0.2, PUBLIC  # an edit (the admin's) saves every column
    link.save()
    assert level(a, b) == RESTRICTED

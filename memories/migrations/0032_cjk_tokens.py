"""The derived search fields of the rows holding CJK text, computed again by memory_derive.

Two rules changed: search_pairs also holds each CJK run's last character
(memories.text.cjk_tokens), so a one-character query ("猫") finds every place the character
stands as the prefix of a token; and fold keeps kana's voicing marks (が no longer folds to
か), which changes search_text, search_original, the signature and the content key of text
with voiced kana. Only rows whose folded text or original-language text has a CJK character
are read; SQLite's update triggers and PostgreSQL's generated tsvector reindex them. The
entities whose folded name has kana are folded again from their written name. No schema
change. Undone: nothing (the older code reads the new fields as before, less
precisely).
"""

from django.db import migrations

from memories.text import CJK_CHARACTERS

_FIELDS = ["search_text", "search_original", "search_pairs", "signature", "content_key"]
_BATCH = 2000


def _rederive(apps, schema_editor):
    from django.db.models import Q

    from memories.services import memory_derive

    Memory = apps.get_model("memories", "Memory")
    cjk = f"[{CJK_CHARACTERS}]"
    rows = (
        Memory.objects.using(schema_editor.connection.alias)
        .filter(Q(search_text__regex=cjk) | Q(search_original__regex=cjk))
        .only("id", "content", "content_original", "keywords", *_FIELDS)
        .order_by("id")
    )
    batch = []
    for memory in rows.iterator(chunk_size=_BATCH):
        memory_derive(memory)
        batch.append(memory)
        if len(batch) == _BATCH:
            rows.model.objects.using(schema_editor.connection.alias).bulk_update(batch, _FIELDS)
            batch = []
    if batch:
        rows.model.objects.using(schema_editor.connection.alias).bulk_update(batch, _FIELDS)


def _refold_entities(apps, schema_editor):
    """Entity names are stored folded (memories.services.entity_get_or_create): those with
    kana are folded again from the name as written, so a lookup with voiced kana finds them.
    Folding only tells more apart, so two entities never come to share a name."""
    from memories.text import fold

    Entity = apps.get_model("memories", "Entity")
    alias = schema_editor.connection.alias
    changed = []
    for entity in (
        Entity.objects.using(alias)
        .filter(name__regex="[\u3040-\u30ff]")
        .only("id", "name", "display_name")
        .iterator(chunk_size=_BATCH)
    ):
        name = fold(" ".join(entity.display_name.split())) if entity.display_name else ""
        if name and name != entity.name:
            entity.name = name
            changed.append(entity)
    Entity.objects.using(alias).bulk_update(changed, ["name"], batch_size=_BATCH)


class Migration(migrations.Migration):
    dependencies = [("memories", "0031_half_lives_in_order")]

    operations = [
        migrations.RunPython(_rederive, migrations.RunPython.noop),
        migrations.RunPython(_refold_entities, migrations.RunPython.noop),
    ]

"""The front of a card: the question review asks about a memory.

A memory's own cue comes first. Without one, the namespace's card_front decides: a cloze
(review.cloze: the memory with its most telling words hidden, the namespace's rarest words
counted by memories.term_counts), its first line (the topic before it), or its topic and
keywords only. A cloze with nothing worth hiding, or a topic front without a topic, falls
back to the first line, and the front says which kind it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memories.models import Memory, Namespace
from memories.term_counts import word_counts
from review.cloze import Segment, cloze, content_words

FIRST_LINE_CHARS = 120

# The badge of each kind of front, in review and on a memory's page.
FRONT_LABELS = {
    "cue": "Your cue",
    "cloze": "Cloze",
    "first_line": "First line",
    "topic": "Topic",
}


@dataclass(frozen=True)
class Front:
    """kind: cue, cloze, first_line or topic. question: the front as plain text (gaps as
    […]). answer: the memory's text in segments, the cloze's gaps marked, for the back."""

    kind: str
    question: str
    segments: tuple[Segment, ...] = ()
    answer: tuple[Segment, ...] = field(default=())

    @property
    def label(self) -> str:
        """What the badge on the card says its front is."""
        return FRONT_LABELS[self.kind]

    @property
    def answers(self) -> list[str]:
        return [segment.text for segment in self.answer if segment.gap]


def card_front(memory: Memory, namespace: Namespace) -> Front:
    text = memory.content.strip()
    whole = (Segment(text),)
    if memory.cue.strip():
        return Front("cue", memory.cue.strip(), (Segment(memory.cue.strip()),), whole)
    kind = namespace.card_front
    if kind == Namespace.CardFront.CLOZE:
        made = cloze(text, word_counts(namespace.pk, content_words(text)))
        if made is not None:
            return Front("cloze", made.front, made.segments, made.segments)
    if kind == Namespace.CardFront.TOPIC and memory.topic:
        question = memory.topic
        if memory.keywords:
            question += " · " + ", ".join(memory.keywords)
        return Front("topic", question, (Segment(question),), whole)
    first_line = text.splitlines()[0][:FIRST_LINE_CHARS] if text else ""
    question = f"{memory.topic}: {first_line}" if memory.topic else first_line
    return Front("first_line", question, (Segment(question),), whole)

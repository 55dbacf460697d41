"""The recall stages of seed 002, one module each, and the codes the seed names them by.

| code | module | finds |
|---|---|---|
| Sf | full_text.py | memories by their words: stemmed, then trigram, then original language |
| Se | embeddings.py | memories by cosine similarity of their embedding to the query's |
| Ss | signatures.py | near-duplicates of the query by SimHash Hamming similarity |
| S6 | digests.py | paragraphs of consolidation digests that mention a query word |
| S8 | entity_graph.py | the relations of the first entity the query names |

Shared by all of them: query.py (the query reduced to words), filters.py (the caller's
filters as one SQL fragment) and sql.py (small SQL helpers). Each stage is one database
round trip or a few and returns plain hits; ranking is recall.fusion's and
recall.ranking's job, orchestration recall.pipeline's.

The codes stay the labels of the output (results' stages, explanations, stage_timings);
code names what the stages do.
"""

from __future__ import annotations

FULL_TEXT = "Sf"
EMBEDDINGS = "Se"
SIGNATURES = "Ss"
DIGESTS = "S6"
ENTITY_GRAPH = "S8"

ALL_STAGES = (FULL_TEXT, EMBEDDINGS, SIGNATURES, DIGESTS, ENTITY_GRAPH)
# The stages whose hits are memories (S6 finds digests, S8 relations).
MEMORY_STAGES = (FULL_TEXT, EMBEDDINGS, SIGNATURES)
